package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// memKnowledge is an in-memory KnowledgeStore with the per-entry
// compare-and-swap the service relies on.
type memKnowledge struct {
	mu      sync.Mutex
	seq     int
	entries map[string]ledger.KnowledgeEntry // by kind/id
	writes  []ledger.KnowledgeWrite
	// beforeWrite, if set, runs at the start of every write, outside the
	// lock: tests use it to change an entry behind the service's back.
	beforeWrite func(w ledger.KnowledgeWrite)
	// conflicts, if positive, is how many writes in a row lose the
	// zone's compare-and-swap (ErrConflict) before one lands; negative:
	// every write loses. calls counts the writes tried.
	conflicts, calls int
}

func newMemKnowledge() *memKnowledge {
	return &memKnowledge{entries: map[string]ledger.KnowledgeEntry{}}
}

func knowledgeKey(kind ledger.KnowledgeKind, id string) string { return string(kind) + "/" + id }

func (m *memKnowledge) ListKnowledge(_ context.Context, kind ledger.KnowledgeKind) ([]ledger.KnowledgeEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ledger.KnowledgeEntry
	for _, e := range m.entries {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out, nil
}

func (m *memKnowledge) ReadKnowledge(_ context.Context, kind ledger.KnowledgeKind, id string) (ledger.KnowledgeEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[knowledgeKey(kind, id)]
	if !ok {
		return e, fmt.Errorf("%s %s: %w", kind, id, ledger.ErrKnowledgeNotFound)
	}
	return e, nil
}

func (m *memKnowledge) WriteKnowledge(_ context.Context, w ledger.KnowledgeWrite) (ledger.KnowledgeVersion, error) {
	m.mu.Lock()
	hook := m.beforeWrite
	m.mu.Unlock()
	if hook != nil {
		hook(w)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.conflicts != 0 {
		m.conflicts--
		return "", fmt.Errorf("the zone moved: %w", ledger.ErrConflict)
	}
	key := knowledgeKey(w.Entry.Kind, w.Entry.ID)
	cur, ok := m.entries[key]
	if cur.Version != w.Expected || (!ok && w.Expected != "") {
		return "", ledger.ErrKnowledgeChanged
	}
	if w.Delete {
		if !ok {
			return "", ledger.ErrKnowledgeNotFound
		}
		delete(m.entries, key)
		m.writes = append(m.writes, w)
		return "", nil
	}
	m.seq++
	e := w.Entry
	e.Version = ledger.KnowledgeVersion(fmt.Sprintf("v%d", m.seq))
	m.entries[key] = e
	m.writes = append(m.writes, w)
	return e.Version, nil
}

// knowledgeEnv is a Knowledge service whose clock ticks one second per
// reading.
func knowledgeEnv(t *testing.T) (*ledger.Knowledge, *memKnowledge) {
	t.Helper()
	store := newMemKnowledge()
	var mu sync.Mutex
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	k := ledger.NewKnowledge(store, ledger.KnowledgeOptions{Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}})
	return k, store
}

var knowledgeAgent = ledger.Author{Name: "claude-code 1.0"}

func bisect() ledger.CreatePatternParams {
	return ledger.CreatePatternParams{
		Title:       "  Self-test: bisect a regression ",
		Description: "Find the commit that broke a test by halving the range",
		Tags:        []string{"self-test", " debugging", "self-test", ""},
		Content:     "## Steps\n1. Find a good and a bad commit\n",
	}
}

func wantField(t *testing.T, err error, field string) *ledger.Error {
	t.Helper()
	var e *ledger.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v, want a *ledger.Error about %s", err, field)
	}
	if e.Code != ledger.CodeInvalidPayload || e.Details["field"] != field || !strings.HasPrefix(e.Message, field+": ") {
		t.Fatalf("error = %s %q %v, want INVALID_PAYLOAD naming %s", e.Code, e.Message, e.Details, field)
	}
	return e
}

func TestCreatePattern(t *testing.T) {
	ctx := context.Background()
	k, store := knowledgeEnv(t)
	p, err := k.CreatePattern(ctx, bisect(), knowledgeAgent)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 22, 10, 0, 1, 0, time.UTC)
	want := ledger.KnowledgePattern{
		ID: "self-test-bisect-a-regression", Title: "Self-test: bisect a regression",
		Description: "Find the commit that broke a test by halving the range",
		Tags:        []string{"self-test", "debugging"}, Content: "## Steps\n1. Find a good and a bad commit\n",
		DerivedFromSessions: []string{}, CreatedBy: "claude-code 1.0", CreatedAt: at, UpdatedAt: at,
	}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("created (-want +got):\n%s", diff)
	}
	if got, err := k.Pattern(ctx, p.ID); err != nil || !cmp.Equal(got, want) {
		t.Errorf("Pattern = %+v, %v", got, err)
	}
	if w := store.writes[0]; w.Expected != "" || w.Author != knowledgeAgent || !w.When.Equal(at) {
		t.Errorf("write = %+v, want a create by the agent at %v", w, at)
	}

	// The same title again: refused, and the first is untouched.
	again := bisect()
	again.Content = "something else"
	_, err = k.CreatePattern(ctx, again, knowledgeAgent)
	e := wantField(t, err, "id")
	if !strings.Contains(e.Message, "already exists") || e.Details["id"] != p.ID {
		t.Errorf("duplicate: %q %v", e.Message, e.Details)
	}
	if got, _ := k.Pattern(ctx, p.ID); got.Content != want.Content {
		t.Errorf("the first pattern changed: %q", got.Content)
	}

	// An explicit id, createdBy and session refs.
	p2, err := k.CreatePattern(ctx, ledger.CreatePatternParams{ID: "duck", Title: "Rubber duck", Description: "d", Content: "c",
		CreatedBy: "someone", DerivedFromSessions: []string{"a1b2-c3", " a1b2-c3 ", "A1B2-C3"}}, knowledgeAgent)
	if err != nil {
		t.Fatal(err)
	}
	if p2.ID != "duck" || p2.CreatedBy != "someone" || !cmp.Equal(p2.DerivedFromSessions, []string{"a1b2-c3"}) || !cmp.Equal(p2.Tags, []string{}) {
		t.Errorf("created = %+v", p2)
	}
}

func TestCreatePatternValidation(t *testing.T) {
	ctx := context.Background()
	k, store := knowledgeEnv(t)
	for _, tc := range []struct {
		name   string
		change func(*ledger.CreatePatternParams)
		field  string
	}{
		{"no title", func(p *ledger.CreatePatternParams) { p.Title = " " }, "title"},
		{"two-line title", func(p *ledger.CreatePatternParams) { p.Title = "a\nb" }, "title"},
		{"long title", func(p *ledger.CreatePatternParams) { p.Title = strings.Repeat("x", 201) }, "title"},
		{"no description", func(p *ledger.CreatePatternParams) { p.Description = "" }, "description"},
		{"no content", func(p *ledger.CreatePatternParams) { p.Content = "\n\t" }, "content"},
		{"huge content", func(p *ledger.CreatePatternParams) {
			p.Content = strings.Repeat("x", ledger.MaxKnowledgeContentBytes+1)
		}, "content"},
		{"bad id", func(p *ledger.CreatePatternParams) { p.ID = "Not_A_Slug" }, "id"},
		{"long id", func(p *ledger.CreatePatternParams) { p.ID = strings.Repeat("a", 101) }, "id"},
		{"underivable id", func(p *ledger.CreatePatternParams) { p.Title = "日本語" }, "id"},
		{"tag with newline", func(p *ledger.CreatePatternParams) { p.Tags = []string{"a\nb"} }, "tags"},
		{"bad session ref", func(p *ledger.CreatePatternParams) { p.DerivedFromSessions = []string{"not a uuid"} }, "derivedFromSessions"},
		{"invalid UTF-8", func(p *ledger.CreatePatternParams) { p.Description = "\xff" }, "description"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := bisect()
			tc.change(&p)
			_, err := k.CreatePattern(ctx, p, knowledgeAgent)
			wantField(t, err, tc.field)
		})
	}
	if len(store.writes) != 0 {
		t.Errorf("%d writes for invalid input", len(store.writes))
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Self-test: bisect a regression": "self-test-bisect-a-regression",
		"  --Hello,   World!-- ":         "hello-world",
		"Ünïcode & ASCII 2":              "n-code-ascii-2",
		"日本語":                            "",
		strings.Repeat("word ", 30):      strings.TrimSuffix(strings.Repeat("word-", 12), "-") + "-word",
	} {
		got := ledger.Slug(in)
		if got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
		if got != "" && !ledger.ValidKnowledgeID(got) {
			t.Errorf("Slug(%q) = %q is not a valid id", in, got)
		}
	}
}

func TestUpdatePattern(t *testing.T) {
	ctx := context.Background()
	k, store := knowledgeEnv(t)
	p, err := k.CreatePattern(ctx, bisect(), knowledgeAgent)
	if err != nil {
		t.Fatal(err)
	}
	content := "## Steps\n1. git bisect run the test\n"
	tags := []string{"debugging", "git"}
	u, err := k.UpdatePattern(ctx, ledger.UpdatePatternParams{ID: p.ID, Content: &content, Tags: &tags}, ledger.Author{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	want := p
	want.Content, want.Tags = content, tags
	want.UpdatedAt = p.CreatedAt.Add(time.Second)
	if diff := cmp.Diff(want, u); diff != "" {
		t.Errorf("updated (-want +got):\n%s", diff)
	}
	if w := store.writes[len(store.writes)-1]; w.Author.Name != "other" || w.Expected == "" {
		t.Errorf("update write = %+v", w)
	}

	// Nothing to change, a blank description, an unknown id.
	_, err = k.UpdatePattern(ctx, ledger.UpdatePatternParams{ID: p.ID}, knowledgeAgent)
	wantField(t, err, "id")
	blank := " "
	_, err = k.UpdatePattern(ctx, ledger.UpdatePatternParams{ID: p.ID, Description: &blank}, knowledgeAgent)
	wantField(t, err, "description")
	_, err = k.UpdatePattern(ctx, ledger.UpdatePatternParams{ID: "no-such-pattern", Content: &content}, knowledgeAgent)
	e := wantField(t, err, "id")
	if !errors.Is(err, ledger.ErrKnowledgeNotFound) || !strings.Contains(e.Message, `"no-such-pattern"`) {
		t.Errorf("unknown id: %v", err)
	}
}

// TestUpdatePatternConcurrentChange: a change that lands between the
// service's read and its write is kept, and the update applied on top.
func TestUpdatePatternConcurrentChange(t *testing.T) {
	ctx := context.Background()
	k, store := knowledgeEnv(t)
	p, err := k.CreatePattern(ctx, bisect(), knowledgeAgent)
	if err != nil {
		t.Fatal(err)
	}
	store.beforeWrite = func(w ledger.KnowledgeWrite) {
		store.mu.Lock()
		store.beforeWrite = nil // once
		store.mu.Unlock()
		cur, _ := store.ReadKnowledge(ctx, ledger.KindPattern, p.ID)
		cur.Title = "Retitled elsewhere"
		cur.UpdatedAt = cur.UpdatedAt.Add(time.Hour) // a clock ahead of ours
		if _, err := store.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: cur, Expected: cur.Version}); err != nil {
			t.Error(err)
		}
	}
	content := "new content"
	u, err := k.UpdatePattern(ctx, ledger.UpdatePatternParams{ID: p.ID, Content: &content}, knowledgeAgent)
	if err != nil {
		t.Fatal(err)
	}
	if u.Title != "Retitled elsewhere" || u.Content != content {
		t.Errorf("updated = %+v; want both changes", u)
	}
	if !u.UpdatedAt.After(p.UpdatedAt.Add(time.Hour)) {
		t.Errorf("updatedAt %v did not move past the other writer's %v", u.UpdatedAt, p.UpdatedAt.Add(time.Hour))
	}
}

func TestListPatterns(t *testing.T) {
	ctx := context.Background()
	k, _ := knowledgeEnv(t)
	for _, p := range []ledger.CreatePatternParams{
		{Title: "Bisect a regression", Description: "halve the range", Content: "git bisect", Tags: []string{"debugging", "git"}},
		{Title: "Five whys", Description: "ask why", Content: "Root causes", Tags: []string{"Debugging"}},
		{Title: "Pre-mortem", Description: "imagine failure", Content: "before starting", Tags: []string{"planning"}},
		{Title: "Actually bisect configs", Description: "halve the config", Content: "x", Tags: []string{"debugging"}},
	} {
		if _, err := k.CreatePattern(ctx, p, knowledgeAgent); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(page ledger.PatternPage) []string {
		var out []string
		for _, p := range page.Patterns {
			out = append(out, p.ID)
		}
		return out
	}
	list := func(f ledger.PatternFilter) ledger.PatternPage {
		t.Helper()
		page, err := k.ListPatterns(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return page
	}
	for _, tc := range []struct {
		name   string
		filter ledger.PatternFilter
		want   []string
		total  int
	}{
		{"default: newest update first", ledger.PatternFilter{}, []string{"actually-bisect-configs", "pre-mortem", "five-whys", "bisect-a-regression"}, 4},
		{"tags AND, any case", ledger.PatternFilter{Tags: []string{"DEBUGGING", "git"}}, []string{"bisect-a-regression"}, 1},
		{"unknown tag in the AND", ledger.PatternFilter{Tags: []string{"debugging", "nonexistent-tag"}}, nil, 0},
		{"search all words", ledger.PatternFilter{Search: "Bisect HALVE"}, []string{"actually-bisect-configs", "bisect-a-regression"}, 2},
		{"search content", ledger.PatternFilter{Search: "root"}, []string{"five-whys"}, 1},
		{"by title asc", ledger.PatternFilter{SortBy: "title", SortOrder: "asc"}, []string{"actually-bisect-configs", "bisect-a-regression", "five-whys", "pre-mortem"}, 4},
		{"by createdAt asc, paged", ledger.PatternFilter{SortBy: "createdAt", SortOrder: "asc", Limit: 2, Offset: 1}, []string{"five-whys", "pre-mortem"}, 4},
		{"offset past the end", ledger.PatternFilter{Offset: 10}, nil, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := list(tc.filter)
			if got := ids(page); !cmp.Equal(got, tc.want) || page.Total != tc.total {
				t.Errorf("ids = %v (total %d), want %v (total %d)", got, page.Total, tc.want, tc.total)
			}
			if page.Patterns == nil {
				t.Errorf("Patterns is nil; want [] for JSON")
			}
		})
	}

	// Pages of one search never repeat a pattern or skip one.
	var seen []string
	for off := 0; ; off++ {
		page := list(ledger.PatternFilter{Search: "bisect", Limit: 1, Offset: off})
		seen = append(seen, ids(page)...)
		if !page.HasMore {
			break
		}
	}
	if len(seen) != 2 || seen[0] == seen[1] {
		t.Errorf("paging through the search: %v", seen)
	}

	for _, tc := range []struct {
		filter ledger.PatternFilter
		field  string
	}{
		{ledger.PatternFilter{Limit: 101}, "limit"},
		{ledger.PatternFilter{Limit: -1}, "limit"},
		{ledger.PatternFilter{Offset: -1}, "offset"},
		{ledger.PatternFilter{SortBy: "id"}, "sortBy"},
		{ledger.PatternFilter{SortOrder: "up"}, "sortOrder"},
	} {
		_, err := k.ListPatterns(ctx, tc.filter)
		wantField(t, err, tc.field)
	}

	tags, err := k.PatternTags(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []ledger.TagCount{{Name: "debugging", Count: 2}, {Name: "Debugging", Count: 1}, {Name: "git", Count: 1}, {Name: "planning", Count: 1}}
	if diff := cmp.Diff(want, tags); diff != "" {
		t.Errorf("PatternTags (-want +got):\n%s", diff)
	}
}

func TestDeletePattern(t *testing.T) {
	ctx := context.Background()
	k, _ := knowledgeEnv(t)
	p, err := k.CreatePattern(ctx, bisect(), knowledgeAgent)
	if err != nil {
		t.Fatal(err)
	}
	d, err := k.DeletePattern(ctx, p.ID, knowledgeAgent)
	if err != nil || d.ID != p.ID || d.Content != p.Content {
		t.Fatalf("DeletePattern = %+v, %v", d, err)
	}
	for _, err := range []error{
		func() error { _, err := k.Pattern(ctx, p.ID); return err }(),
		func() error { _, err := k.DeletePattern(ctx, p.ID, knowledgeAgent); return err }(),
	} {
		if !errors.Is(err, ledger.ErrKnowledgeNotFound) {
			t.Errorf("after delete: %v, want not found", err)
		}
	}
	if page, _ := k.ListPatterns(ctx, ledger.PatternFilter{Tags: []string{"self-test"}}); page.Total != 0 {
		t.Errorf("listed after delete: %+v", page)
	}
	_, err = k.DeletePattern(ctx, "", knowledgeAgent)
	wantField(t, err, "id")
}

func TestNotes(t *testing.T) {
	ctx := context.Background()
	k, store := knowledgeEnv(t)
	w1, err := k.WriteNote(ctx, ledger.WriteNoteParams{ID: "self-test-note", Title: "Self-test note", Content: "first draft"}, knowledgeAgent)
	if err != nil {
		t.Fatal(err)
	}
	if !w1.Created || w1.Note.ID != "self-test-note" || !w1.Note.CreatedAt.Equal(w1.Note.UpdatedAt) {
		t.Errorf("first write = %+v", w1)
	}
	// Replacing keeps createdAt and, without a title, the title.
	w2, err := k.WriteNote(ctx, ledger.WriteNoteParams{ID: "self-test-note", Content: "second draft"}, knowledgeAgent)
	if err != nil {
		t.Fatal(err)
	}
	if w2.Created || w2.Note.Content != "second draft" || w2.Note.Title != "Self-test note" ||
		!w2.Note.CreatedAt.Equal(w1.Note.CreatedAt) || !w2.Note.UpdatedAt.After(w1.Note.UpdatedAt) {
		t.Errorf("second write = %+v (first %+v)", w2, w1)
	}
	if n, err := k.Note(ctx, "self-test-note"); err != nil || n != w2.Note {
		t.Errorf("Note = %+v, %v", n, err)
	}

	// An id from the title; a new note needs a title.
	w3, err := k.WriteNote(ctx, ledger.WriteNoteParams{Title: "Open questions", Content: "why?"}, knowledgeAgent)
	if err != nil || w3.Note.ID != "open-questions" {
		t.Fatalf("write by title = %+v, %v", w3, err)
	}
	_, err = k.WriteNote(ctx, ledger.WriteNoteParams{ID: "untitled", Content: "x"}, knowledgeAgent)
	wantField(t, err, "title")
	_, err = k.WriteNote(ctx, ledger.WriteNoteParams{Content: "x"}, knowledgeAgent)
	wantField(t, err, "id")
	_, err = k.WriteNote(ctx, ledger.WriteNoteParams{ID: "x", Title: "x"}, knowledgeAgent)
	wantField(t, err, "content")

	notes, err := k.ListNotes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range notes {
		ids = append(ids, n.ID)
	}
	if !cmp.Equal(ids, []string{"open-questions", "self-test-note"}) {
		t.Errorf("ListNotes = %v", ids)
	}

	if _, err := k.DeleteNote(ctx, "self-test-note", knowledgeAgent); err != nil {
		t.Fatal(err)
	}
	_, err = k.Note(ctx, "self-test-note")
	if e := wantField(t, err, "id"); !errors.Is(err, ledger.ErrKnowledgeNotFound) || e.Details["kind"] != "note" {
		t.Errorf("read deleted note: %v", err)
	}
	// Patterns and notes are apart: a pattern list sees no notes.
	if page, _ := k.ListPatterns(ctx, ledger.PatternFilter{}); page.Total != 0 {
		t.Errorf("patterns: %+v", page)
	}
	if i := slices.IndexFunc(store.writes, func(w ledger.KnowledgeWrite) bool { return w.Entry.Kind != ledger.KindNote }); i >= 0 {
		t.Errorf("write %d is not a note: %+v", i, store.writes[i])
	}
}

// TestConcurrentNoteWrites: racing writers of one note all land, one after
// the other, and none is lost to another's stale read.
func TestConcurrentNoteWrites(t *testing.T) {
	ctx := context.Background()
	k, store := knowledgeEnv(t)
	if _, err := k.WriteNote(ctx, ledger.WriteNoteParams{ID: "n", Title: "N", Content: "0"}, knowledgeAgent); err != nil {
		t.Fatal(err)
	}
	const writers = 8
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := k.WriteNote(ctx, ledger.WriteNoteParams{ID: "n", Content: fmt.Sprint(i + 1)}, knowledgeAgent); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if len(store.writes) != writers+1 {
		t.Errorf("%d writes, want %d", len(store.writes), writers+1)
	}
	for i := 1; i < len(store.writes); i++ {
		if store.writes[i].Expected == "" {
			t.Errorf("write %d created the note again instead of replacing it", i)
		}
	}
}

// TestKnowledgeOneRetryLoop: a store's write is one attempt, and losing the
// zone's compare-and-swap to a write of another entry (ErrConflict) is
// retried by the service's one loop, for creates, updates, notes and
// deletes alike; a create is not mistaken for a taken id. A store that
// always loses is tried MaxAppendAttempts times in all, not that many
// times some inner bound.
func TestKnowledgeOneRetryLoop(t *testing.T) {
	ctx := context.Background()
	k, store := knowledgeEnv(t)
	lose := func(n int) {
		store.mu.Lock()
		store.conflicts, store.calls = n, 0
		store.mu.Unlock()
	}
	calls := func() int {
		store.mu.Lock()
		defer store.mu.Unlock()
		return store.calls
	}
	lose(3)
	p, err := k.CreatePattern(ctx, bisect(), knowledgeAgent)
	if err != nil || calls() != 4 {
		t.Fatalf("create after 3 lost swaps: %v after %d writes, want success after 4", err, calls())
	}
	lose(2)
	content := "changed"
	if _, err := k.UpdatePattern(ctx, ledger.UpdatePatternParams{ID: p.ID, Content: &content}, knowledgeAgent); err != nil || calls() != 3 {
		t.Fatalf("update after 2 lost swaps: %v after %d writes", err, calls())
	}
	lose(2)
	if _, err := k.WriteNote(ctx, ledger.WriteNoteParams{Title: "A note", Content: "c"}, knowledgeAgent); err != nil || calls() != 3 {
		t.Fatalf("note after 2 lost swaps: %v after %d writes", err, calls())
	}
	lose(1)
	if _, err := k.DeletePattern(ctx, p.ID, knowledgeAgent); err != nil || calls() != 2 {
		t.Fatalf("delete after 1 lost swap: %v after %d writes", err, calls())
	}
	lose(-1)
	_, err = k.CreatePattern(ctx, ledger.CreatePatternParams{Title: "Never lands", Description: "d", Content: "c"}, knowledgeAgent)
	if err == nil || !errors.Is(err, ledger.ErrConflict) || ledger.CodeOf(err) != ledger.CodeStorage {
		t.Fatalf("create that always loses: %v, want a storage error wrapping ErrConflict", err)
	}
	if n := calls(); n != ledger.MaxAppendAttempts {
		t.Errorf("a write that always loses was tried %d times, want %d", n, ledger.MaxAppendAttempts)
	}
}
