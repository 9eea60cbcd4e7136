package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/thoughtbox/thoughtbox/ledger"
)

func TestStartSession(t *testing.T) {
	tests := []struct {
		name      string
		params    ledger.CreateSessionParams
		wantTitle string
		wantTags  []string
		err       wantErr
	}{
		{"trimmed", ledger.CreateSessionParams{Title: "  Debug auth  "}, "Debug auth", []string{}, wantErr{}},
		{"tags deduplicated", ledger.CreateSessionParams{Title: "t", Tags: []string{"a", " b", "a", "", "b"}},
			"t", []string{"a", "b"}, wantErr{}},
		{"200 characters", ledger.CreateSessionParams{Title: strings.Repeat("é", 200)},
			strings.Repeat("é", 200), []string{}, wantErr{}},
		{"201 characters", ledger.CreateSessionParams{Title: strings.Repeat("é", 201)}, "", nil,
			wantErr{code: ledger.CodeInvalidPayload, field: "title"}},
		{"blank", ledger.CreateSessionParams{Title: " \t"}, "", nil,
			wantErr{code: ledger.CodeInvalidPayload, field: "title"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t)
			s, err := e.l.StartSession(context.Background(), tt.params, agent)
			tt.err.check(t, err)
			if err != nil {
				if sums, err := e.store.ListSessions(context.Background()); err != nil || len(sums) != 0 {
					t.Errorf("refused session was stored")
				}
				return
			}
			if s.Title != tt.wantTitle {
				t.Errorf("title = %q, want %q", s.Title, tt.wantTitle)
			}
			if diff := cmp.Diff(tt.wantTags, s.Tags); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
			if s.PartitionPath != "2026-11" || s.ThoughtCount != 0 || s.CreatedAt.IsZero() {
				t.Errorf("session = %+v", s)
			}
		})
	}
}

func TestUnknownSession(t *testing.T) {
	e := setup(t)
	_, err := e.l.AddThought(context.Background(), "nope", th("x"), agent)
	wrapped := fmt.Errorf("gateway: %w", err)
	if !errors.Is(wrapped, ledger.ErrSessionNotFound) || ledger.CodeOf(wrapped) != ledger.CodeSessionNotFound {
		t.Errorf("AddThought on unknown session: %v (code %s)", err, ledger.CodeOf(wrapped))
	}
	if _, err := e.l.View(context.Background(), "nope"); !errors.Is(err, ledger.ErrSessionNotFound) {
		t.Errorf("View on unknown session: %v", err)
	}
	if _, err := e.l.Verify(context.Background(), "nope", ledger.VerifyOptions{}); !errors.Is(err, ledger.ErrSessionNotFound) {
		t.Errorf("Verify on unknown session: %v", err)
	}
}

func TestErrorShape(t *testing.T) {
	_, err := ledger.NewBranchID("Redis")
	b, _ := json.Marshal(ledger.AsError(err))
	want := `{"code":"INVALID_PAYLOAD","message":"branchId: must match ^[a-z0-9-]+$, got \"Redis\"","details":{"field":"branchId"}}`
	if string(b) != want {
		t.Errorf("JSON = %s\nwant   %s", b, want)
	}
	if got := ledger.CodeOf(errors.New("boom")); got != ledger.CodeInternal {
		t.Errorf("CodeOf(foreign error) = %s, want INTERNAL_ERROR", got)
	}
	if got := ledger.CodeOf(fmt.Errorf("x: %w", ledger.ErrSessionNotFound)); got != ledger.CodeSessionNotFound {
		t.Errorf("CodeOf(wrapped ErrSessionNotFound) = %s", got)
	}
}

func TestConflictRetry(t *testing.T) {
	other := func(n int) ledger.ThoughtData {
		return ledger.ThoughtData{Thought: "from another process", ThoughtNumber: n, TotalThoughts: n, NextThoughtNeeded: true}
	}
	// sneakOnce moves the main chain once, on the ledger's next Append.
	sneakOnce := func(e env, id string, d ledger.ThoughtData) {
		var once sync.Once
		e.store.beforeAppend = func(ledger.AppendRequest) { once.Do(func() { e.store.sneak(id, "", d) }) }
	}

	t.Run("auto number is renumbered", func(t *testing.T) {
		e := setup(t)
		id := e.start(t)
		e.add(t, id, th("1"))
		sneakOnce(e, id, other(2))
		res := e.add(t, id, th("mine"))
		if res.Thought.ThoughtNumber != 3 || res.Node.Prev != "s1:2" {
			t.Errorf("got thought %d after %s, want 3 after s1:2", res.Thought.ThoughtNumber, res.Node.Prev)
		}
		if diff := cmp.Diff([]int{1, 2, 3}, e.store.numbers(id, "")); diff != "" {
			t.Errorf("stored (-want +got):\n%s", diff)
		}
		if calls, _ := e.store.stats(); calls != 3 {
			t.Errorf("Append calls = %d, want 3 (1, refused 2, 3)", calls)
		}
		if n := e.view(t, id).Graph.Len(); n != 3 {
			t.Errorf("view holds %d thoughts, want 3 (including the other process's)", n)
		}
	})

	t.Run("explicit number now taken is refused", func(t *testing.T) {
		e := setup(t)
		id := e.start(t)
		e.add(t, id, th("1"))
		sneakOnce(e, id, other(2))
		_, err := e.l.AddThought(context.Background(), id, num("mine", 2), agent)
		taken.check(t, err)
		if diff := cmp.Diff([]int{1, 2}, e.store.numbers(id, "")); diff != "" {
			t.Errorf("stored (-want +got):\n%s", diff)
		}
		if n, _ := e.view(t, id).Graph.Thought(2); n.Data.Thought != "from another process" {
			t.Errorf("thought 2 = %q, want the other process's", n.Data.Thought)
		}
	})

	t.Run("explicit number still free is retried", func(t *testing.T) {
		e := setup(t)
		id := e.start(t)
		e.add(t, id, th("1"))
		sneakOnce(e, id, other(2))
		if res := e.add(t, id, num("mine", 5)); res.Node.Prev != "s1:2" {
			t.Errorf("prev = %s, want s1:2", res.Node.Prev)
		}
		if diff := cmp.Diff([]int{1, 2, 5}, e.store.numbers(id, "")); diff != "" {
			t.Errorf("stored (-want +got):\n%s", diff)
		}
	})

	t.Run("branch created elsewhere is continued", func(t *testing.T) {
		e := setup(t)
		id := e.start(t)
		e.add(t, id, th("1"))
		e.add(t, id, th("2"))
		var once sync.Once
		e.store.beforeAppend = func(ledger.AppendRequest) {
			once.Do(func() {
				d := other(3)
				d.BranchID, d.BranchFromThought = "alt", ip(2)
				e.store.sneak(id, "alt", d)
			})
		}
		res := e.add(t, id, onBranch(th("mine"), "alt", 2))
		if res.Node.ID != "s1:alt:4" || res.NewBranch {
			t.Errorf("got %s (new branch %v), want s1:alt:4 continuing", res.Node.ID, res.NewBranch)
		}
		if diff := cmp.Diff([]int{3, 4}, e.store.numbers(id, "alt")); diff != "" {
			t.Errorf("stored on alt (-want +got):\n%s", diff)
		}
	})

	t.Run("gives up after bounded attempts", func(t *testing.T) {
		e := setup(t)
		id := e.start(t)
		n := 100
		e.store.beforeAppend = func(ledger.AppendRequest) { n++; e.store.sneak(id, "", other(n)) }
		_, err := e.l.AddThought(context.Background(), id, th("mine"), agent)
		if !errors.Is(err, ledger.ErrConflict) || ledger.CodeOf(err) != ledger.CodeStorage {
			t.Errorf("error = %v (code %s), want STORAGE_ERROR wrapping ErrConflict", err, ledger.CodeOf(err))
		}
		if calls, appended := e.store.stats(); calls != ledger.MaxAppendAttempts || appended != 0 {
			t.Errorf("calls = %d, appended = %d; want %d, 0", calls, appended, ledger.MaxAppendAttempts)
		}
	})
}

// TestParallelSessions writes many sessions at once, and several writers
// into one session, with readers taking snapshots meanwhile (run with -race).
func TestParallelSessions(t *testing.T) {
	e := setup(t)
	const sessions, perSession = 8, 40
	var idList []string
	for range sessions {
		idList = append(idList, e.start(t))
	}
	shared := e.start(t)
	ctx := context.Background()
	errs := make(chan error, 4*sessions*perSession)
	var wg sync.WaitGroup
	for _, id := range idList {
		wg.Go(func() {
			for i := range perSession {
				if _, err := e.l.AddThought(ctx, id, th(fmt.Sprint(i)), agent); err != nil {
					errs <- err
				}
			}
		})
	}
	for range sessions { // several writers, one session
		wg.Go(func() {
			for i := range perSession {
				if _, err := e.l.AddThought(ctx, shared, th(fmt.Sprint(i)), agent); err != nil {
					errs <- err
				}
			}
		})
	}
	for range 2 { // readers walking snapshots while writes go on
		wg.Go(func() {
			for range perSession {
				v, err := e.l.View(ctx, shared)
				if err != nil {
					errs <- err
					continue
				}
				for _, n := range v.Graph.Nodes() {
					_, _ = v.Graph.Revision(n.ID)
					_ = len(n.Next)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seq := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i + 1
		}
		return out
	}
	for _, id := range idList {
		if diff := cmp.Diff(seq(perSession), e.store.numbers(id, "")); diff != "" {
			t.Errorf("%s numbers (-want +got):\n%s", id, diff)
		}
	}
	if diff := cmp.Diff(seq(sessions*perSession), e.store.numbers(shared, "")); diff != "" {
		t.Errorf("shared session numbers (-want +got):\n%s", diff)
	}
	if got := e.view(t, shared).Graph.Len(); got != sessions*perSession {
		t.Errorf("shared session view holds %d thoughts", got)
	}
}

// TestTwoProcesses has two ledgers (two processes) append to one session:
// every thought either lands under its own number or is reported as
// failed, and neither ledger's view disagrees with the store afterwards.
func TestTwoProcesses(t *testing.T) {
	store := newFakeStore()
	a, b := setupWith(t, store), setupWith(t, store)
	id := a.start(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for _, e := range []env{a, b} {
		wg.Go(func() {
			for i := range 30 {
				_, err := e.l.AddThought(ctx, id, th(fmt.Sprint(i)), agent)
				switch {
				case err == nil:
					mu.Lock()
					ok++
					mu.Unlock()
				case !errors.Is(err, ledger.ErrConflict):
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	nums := store.numbers(id, "")
	if len(nums) != ok {
		t.Errorf("store holds %d thoughts, %d were acknowledged", len(nums), ok)
	}
	sorted := slices.Sorted(slices.Values(nums))
	if len(slices.Compact(sorted)) != len(nums) {
		t.Errorf("a number was used twice: %v", nums)
	}
	for _, e := range []env{a, b} {
		v, err := e.l.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, n := range v.Graph.MainChain() {
			got = append(got, n.Data.ThoughtNumber)
		}
		if diff := cmp.Diff(nums, got); diff != "" {
			t.Errorf("loaded chain (-store +view):\n%s", diff)
		}
	}
}

func TestResolve(t *testing.T) {
	store := newFakeStore()
	ids := []string{"abc", "abc123-1", "abc456-2", "abd789-3"}
	next := 0
	l := ledger.New(store, ledger.Options{NewID: func() string { next++; return ids[next-1] }})
	ctx := context.Background()
	for range ids {
		if _, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "t"}, agent); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		prefix string
		want   string
		amb    []string
		err    error
	}{
		{prefix: "abd", want: "abd789-3"},
		{prefix: "ABD", want: "abd789-3"},
		{prefix: "abc4", want: "abc456-2"},
		{prefix: "abc", want: "abc"}, // a full id wins
		{prefix: "abc456-2", want: "abc456-2"},
		{prefix: "ab", amb: []string{"abc", "abc123-1", "abc456-2", "abd789-3"}},
		{prefix: "abc-", err: ledger.ErrSessionNotFound},
		{prefix: "zzz", err: ledger.ErrSessionNotFound},
	}
	for _, tt := range tests {
		got, err := l.Resolve(ctx, tt.prefix)
		var amb *ledger.AmbiguousIDError
		switch {
		case tt.amb != nil:
			if !errors.As(err, &amb) {
				t.Errorf("Resolve(%q) = %q, %v; want ambiguous", tt.prefix, got, err)
				continue
			}
			if diff := cmp.Diff(tt.amb, amb.Candidates); diff != "" {
				t.Errorf("Resolve(%q) candidates (-want +got):\n%s", tt.prefix, diff)
			}
			if ledger.CodeOf(err) != ledger.CodeInvalidPayload || !strings.Contains(err.Error(), "abd789-3") {
				t.Errorf("Resolve(%q) error = %v (%s)", tt.prefix, err, ledger.CodeOf(err))
			}
		case tt.err != nil:
			if !errors.Is(err, tt.err) {
				t.Errorf("Resolve(%q) = %q, %v; want %v", tt.prefix, got, err, tt.err)
			}
		case err != nil || got != tt.want:
			t.Errorf("Resolve(%q) = %q, %v; want %q", tt.prefix, got, err, tt.want)
		}
	}
	if _, err := l.Resolve(ctx, " "); ledger.CodeOf(err) != ledger.CodeInvalidPayload {
		t.Errorf("Resolve(blank) error = %v", err)
	}
}

func TestListAndCounts(t *testing.T) {
	e := setup(t)
	first := e.start(t)
	second := e.start(t)
	e.add(t, first, th("1"))
	e.add(t, first, onBranch(th("x"), "x", 1))
	e.add(t, second, th("1"))
	list, err := e.l.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		ID                string
		Thoughts, Branchs int
	}
	var got []row
	for _, s := range list {
		got = append(got, row{s.ID, s.ThoughtCount, s.BranchCount})
		if s.LastAccessedAt.Before(s.UpdatedAt) {
			t.Errorf("%s: lastAccessedAt before updatedAt", s.ID)
		}
	}
	want := []row{{second, 1, 0}, {first, 2, 1}} // most recently updated first
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
}

func TestLoadDamagedSession(t *testing.T) {
	e := setup(t)
	id := e.start(t)
	e.add(t, id, th("1"))
	e.store.integrity = &ledger.IntegrityValidationResult{
		SessionExists: true, ManifestExists: true, ManifestValid: true,
		MissingThoughtFiles: []string{"002.json"}, Errors: []string{"002.json is missing"},
	}
	v, err := e.l.Load(context.Background(), id)
	if err != nil {
		t.Fatalf("Load of a damaged session: %v", err)
	}
	if v.Integrity.Valid || v.Graph.Len() != 1 {
		t.Errorf("integrity valid = %v, thoughts = %d; want false, 1", v.Integrity.Valid, v.Graph.Len())
	}
	if diff := cmp.Diff([]string{"002.json"}, v.Integrity.MissingThoughtFiles); diff != "" {
		t.Errorf("missing files (-want +got):\n%s", diff)
	}
	res, err := e.l.Verify(context.Background(), id, ledger.VerifyOptions{})
	if err != nil || res.Valid {
		t.Errorf("Verify = %+v, %v; want invalid, no error", res, err)
	}
}

func TestEvents(t *testing.T) {
	e := setup(t)
	id := e.start(t)
	e.add(t, id, th("1"))
	e.add(t, id, onBranch(th("x"), "x", 1))
	e.add(t, id, revises(th("fix"), 1))
	if _, err := e.l.Load(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	want := []ledger.EventType{
		ledger.EventSessionStarted, ledger.EventThoughtAdded, ledger.EventBranchCreated,
		ledger.EventThoughtRevised, ledger.EventSessionLoaded,
	}
	if diff := cmp.Diff(want, e.sink.types()); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}
	branch := e.sink.events[2]
	wantData := map[string]any{
		"nodeId": "s1:x:2", "parentId": "s1:1", "thoughtNumber": 2, "totalThoughts": 2,
		"thought": "x", "nextThoughtNeeded": true, "branchId": "x", "fromThoughtNumber": 1,
	}
	if diff := cmp.Diff(wantData, branch.Data); diff != "" || branch.SessionID != id {
		t.Errorf("branch_created data (-want +got):\n%s", diff)
	}
	if got := e.sink.events[1].Data["parentId"]; got != nil {
		t.Errorf("first thought parentId = %v, want nil", got)
	}
}
