package ledger_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// step is one AddThought call and what it should produce.
type step struct {
	in        ledger.ThoughtInput
	wantNum   int // checked on success
	wantTotal int // checked if non-zero
	wantID    string
	err       wantErr
}

// runSteps plays steps against a fresh session and checks that exactly the
// accepted ones reached the store.
func runSteps(t *testing.T, steps []step) (env, string) {
	t.Helper()
	e := setup(t)
	id := e.start(t)
	stored := 0
	for i, s := range steps {
		callsBefore, _ := e.store.stats()
		res, err := e.l.AddThought(context.Background(), id, s.in, agent)
		s.err.check(t, err)
		if err != nil {
			if calls, _ := e.store.stats(); calls != callsBefore {
				t.Errorf("step %d: refused thought reached the store", i)
			}
			continue
		}
		stored++
		if res.Thought.ThoughtNumber != s.wantNum {
			t.Errorf("step %d: thoughtNumber = %d, want %d", i, res.Thought.ThoughtNumber, s.wantNum)
		}
		if s.wantTotal != 0 && res.Thought.TotalThoughts != s.wantTotal {
			t.Errorf("step %d: totalThoughts = %d, want %d", i, res.Thought.TotalThoughts, s.wantTotal)
		}
		if s.wantID != "" && res.Node.ID != s.wantID {
			t.Errorf("step %d: node id = %q, want %q", i, res.Node.ID, s.wantID)
		}
	}
	if _, appended := e.store.stats(); appended != stored {
		t.Errorf("store holds %d thoughts, want %d", appended, stored)
	}
	if got := e.view(t, id).Graph.Len(); got != stored {
		t.Errorf("graph holds %d thoughts, want %d", got, stored)
	}
	return e, id
}

var taken = wantErr{code: ledger.CodeInvalidPayload, field: "thoughtNumber", sentinel: ledger.ErrNumberTaken}

func TestNumbering(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"auto from one", []step{
			{in: th("a"), wantNum: 1, wantTotal: 1, wantID: "s1:1"},
			{in: th("b"), wantNum: 2, wantTotal: 2},
			{in: th("c"), wantNum: 3, wantTotal: 3, wantID: "s1:3"},
		}},
		{"gaps", []step{
			{in: num("a", 1), wantNum: 1},
			{in: num("b", 5), wantNum: 5},
			{in: th("c"), wantNum: 6},
		}},
		{"backwards, then auto skips used numbers", []step{
			{in: num("a", 5), wantNum: 5},
			{in: num("b", 4), wantNum: 4},
			{in: num("c", 3), wantNum: 3},
			{in: th("d"), wantNum: 6},
		}},
		{"auto follows the last thought, not the largest", []step{
			{in: th("a"), wantNum: 1},
			{in: th("b"), wantNum: 2},
			{in: num("c", 10), wantNum: 10},
			{in: num("d", 3), wantNum: 3},
			{in: th("e"), wantNum: 4},
		}},
		{"duplicate refused, then auto continues", []step{
			{in: th("a"), wantNum: 1},
			{in: th("b"), wantNum: 2},
			{in: num("again", 2), err: taken},
			{in: num("again", 1), err: taken},
			{in: th("c"), wantNum: 3},
		}},
		{"totalThoughts defaults and is raised", []step{
			{in: ledger.ThoughtInput{Thought: "a", TotalThoughts: ip(10)}, wantNum: 1, wantTotal: 10},
			{in: ledger.ThoughtInput{Thought: "b", ThoughtNumber: ip(5), TotalThoughts: ip(2)}, wantNum: 5, wantTotal: 5},
			{in: num("c", 7), wantNum: 7, wantTotal: 7},
		}},
		{"an omitted totalThoughts keeps what the agent last said", []step{
			{in: ledger.ThoughtInput{Thought: "a", TotalThoughts: ip(12)}, wantNum: 1, wantTotal: 12},
			{in: th("b"), wantNum: 2, wantTotal: 12},
			{in: th("c"), wantNum: 3, wantTotal: 12},
			{in: onBranch(th("x"), "alt", 2), wantNum: 3, wantTotal: 12},
			{in: ledger.ThoughtInput{Thought: "d", TotalThoughts: ip(4)}, wantNum: 4, wantTotal: 4},
			{in: th("e"), wantNum: 5, wantTotal: 5},
			{in: th("f"), wantNum: 6, wantTotal: 6},
		}},
		{"numbers at least one", []step{
			{in: num("a", 0), err: wantErr{code: ledger.CodeInvalidPayload, field: "thoughtNumber"}},
			{in: ledger.ThoughtInput{Thought: "a", TotalThoughts: ip(0)}, err: wantErr{code: ledger.CodeInvalidPayload, field: "totalThoughts"}},
			{in: num("a", -3), err: wantErr{code: ledger.CodeInvalidPayload, field: "thoughtNumber"}},
		}},
		{"thought text required", []step{
			{in: th(""), err: wantErr{code: ledger.CodeInvalidPayload, field: "thought"}},
			{in: th(" \n\t"), err: wantErr{code: ledger.CodeInvalidPayload, field: "thought"}},
		}},
		{"chains number independently", []step{
			{in: th("a"), wantNum: 1},
			{in: th("b"), wantNum: 2},
			{in: th("c"), wantNum: 3},
			{in: onBranch(th("x"), "alt", 2), wantNum: 3, wantID: "s1:alt:3"},
			{in: onBranch(th("y"), "alt", 2), wantNum: 4, wantID: "s1:alt:4"},
			{in: th("d"), wantNum: 4, wantID: "s1:4"},
			{in: onBranch(num("z", 4), "alt", 2), err: taken},
			{in: onBranch(num("z", 2), "alt", 2), wantNum: 2, wantID: "s1:alt:2"},
			{in: onBranch(th("w"), "alt", 2), wantNum: 5, wantID: "s1:alt:5"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, tt.steps) })
	}
}

func TestDuplicateNumberMessage(t *testing.T) {
	e := setup(t)
	id := e.start(t)
	e.add(t, id, th("one"))
	e.add(t, id, th("two"))
	_, err := e.l.AddThought(context.Background(), id, num("dup", 2), agent)
	want := "thoughtNumber: 2 is already used on the main chain; omit thoughtNumber to take the next free number (3): thought number already used"
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
	if diff := cmp.Diff([]int{1, 2}, e.store.numbers(id, "")); diff != "" {
		t.Errorf("stored numbers (-want +got):\n%s", diff)
	}
}

func TestBranchRules(t *testing.T) {
	main3 := []step{{in: th("1"), wantNum: 1}, {in: th("2"), wantNum: 2}, {in: th("3"), wantNum: 3}}
	invalid := func(field string) wantErr { return wantErr{code: ledger.CodeInvalidPayload, field: field} }
	notFound := wantErr{code: ledger.CodeThoughtNotFound, field: "branchFromThought", sentinel: ledger.ErrThoughtNotFound}
	tests := []struct {
		name  string
		steps []step
	}{
		{"branchId needs branchFromThought", []step{
			{in: ledger.ThoughtInput{Thought: "x", BranchID: "alt"}, err: invalid("branchFromThought")},
		}},
		{"branchFromThought needs branchId", []step{
			{in: ledger.ThoughtInput{Thought: "x", BranchFromThought: ip(1)}, err: invalid("branchId")},
		}},
		{"branchId pattern", []step{
			{in: onBranch(th("x"), "Redis", 1), err: invalid("branchId")},
			{in: onBranch(th("x"), "a b", 1), err: invalid("branchId")},
			{in: onBranch(th("x"), "a_b", 1), err: invalid("branchId")},
		}},
		{"origin must exist on the main chain", []step{
			{in: onBranch(th("x"), "alt", 9), err: notFound},
		}},
		{"first branch thought is origin plus one", []step{
			{in: onBranch(th("x"), "alt", 2), wantNum: 3, wantID: "s1:alt:3"},
		}},
		{"explicit number on a new branch", []step{
			{in: onBranch(num("x", 4), "redis-approach", 3), wantNum: 4, wantID: "s1:redis-approach:4"},
		}},
		{"continuing needs the same origin", []step{
			{in: onBranch(th("x"), "alt", 2), wantNum: 3},
			{in: onBranch(th("y"), "alt", 1), err: invalid("branchFromThought")},
			{in: onBranch(th("y"), "alt", 2), wantNum: 4},
		}},
		{"continuing needs only the branchId", []step{
			{in: onBranch(th("x"), "alt", 2), wantNum: 3, wantID: "s1:alt:3"},
			{in: ledger.ThoughtInput{Thought: "y", BranchID: "alt"}, wantNum: 4, wantID: "s1:alt:4"},
			{in: ledger.ThoughtInput{Thought: "z", BranchID: "other"}, err: invalid("branchFromThought")},
		}},
		{"a branch-only number is no origin", []step{
			{in: onBranch(num("x", 7), "alt", 2), wantNum: 7},
			{in: onBranch(th("y"), "other", 7), err: notFound},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, append(main3[:3:3], tt.steps...)) })
	}
}

func TestBranchIDMessage(t *testing.T) {
	_, err := ledger.NewBranchID("Redis")
	want := `branchId: must match ^[a-z0-9-]+$, got "Redis"`
	if err == nil || err.Error() != want {
		t.Fatalf("NewBranchID(Redis) error = %v, want %q", err, want)
	}
	var e *ledger.Error
	if !errors.As(err, &e) || e.Details["field"] != "branchId" {
		t.Errorf("error details = %+v, want field branchId", e)
	}
}

func TestRevisionRules(t *testing.T) {
	invalid := func(field string) wantErr { return wantErr{code: ledger.CodeInvalidPayload, field: field} }
	notFound := wantErr{code: ledger.CodeThoughtNotFound, field: "revisesThought", sentinel: ledger.ErrThoughtNotFound}
	// main 1 2 3, branch alt from 1 holding alt:2 alt:8.
	base := []step{
		{in: th("1"), wantNum: 1}, {in: th("2"), wantNum: 2}, {in: th("3"), wantNum: 3},
		{in: onBranch(th("a2"), "alt", 1), wantNum: 2}, {in: onBranch(num("a8", 8), "alt", 1), wantNum: 8},
	}
	tests := []struct {
		name        string
		step        step
		wantRevises string // node id
	}{
		{"revisesThought needs isRevision",
			step{in: ledger.ThoughtInput{Thought: "x", RevisesThought: ip(1)}, err: invalid("isRevision")}, ""},
		{"isRevision needs revisesThought",
			step{in: ledger.ThoughtInput{Thought: "x", IsRevision: true}, err: invalid("revisesThought")}, ""},
		{"revisesThought at least one",
			step{in: revises(th("x"), 0), err: invalid("revisesThought")}, ""},
		{"main revises main",
			step{in: revises(th("fix"), 2), wantNum: 4}, "s1:2"},
		{"target must exist",
			step{in: revises(th("fix"), 9), err: notFound}, ""},
		{"main may not revise a branch",
			step{in: revises(th("fix"), 8), err: notFound}, ""},
		{"branch revises its own thought first",
			step{in: revises(onBranch(th("fix"), "alt", 1), 2), wantNum: 9}, "s1:alt:2"},
		{"branch revises the main chain up to the fork",
			step{in: revises(onBranch(th("fix"), "alt", 1), 1), wantNum: 9}, "s1:1"},
		{"branch may not revise main after the fork",
			step{in: revises(onBranch(th("fix"), "alt", 1), 3), err: notFound}, ""},
		{"new branch revises before its fork",
			step{in: revises(onBranch(th("fix"), "new", 3), 2), wantNum: 4}, "s1:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, id := runSteps(t, append(base[:len(base):len(base)], tt.step))
			if tt.wantRevises == "" {
				return
			}
			last, _ := e.view(t, id).Graph.Last()
			if last.RevisesNode != tt.wantRevises {
				t.Errorf("revisesNode = %q, want %q", last.RevisesNode, tt.wantRevises)
			}
			target, _ := e.view(t, id).Graph.Node(tt.wantRevises)
			if e.store.last.Revises != target.Commit() || target.Commit() == "" {
				t.Errorf("AppendRequest.Revises = %q, want %q", e.store.last.Revises, target.Commit())
			}
		})
	}
}

func TestCompletion(t *testing.T) {
	e := setup(t)
	id := e.start(t)
	e.add(t, id, th("one"))
	done := th("done")
	done.NextThoughtNeeded = false
	if res := e.add(t, id, done); !res.Completed {
		t.Errorf("Completed = false after nextThoughtNeeded=false")
	}
	if !e.view(t, id).Graph.Completed() {
		t.Errorf("graph not completed")
	}
	res := e.add(t, id, th("after all"))
	if res.Completed || res.Thought.ThoughtNumber != 3 {
		t.Errorf("thought after completion: completed=%v number=%d, want false 3", res.Completed, res.Thought.ThoughtNumber)
	}
	if e.view(t, id).Graph.Completed() {
		t.Errorf("graph still completed after a new thought")
	}
}

var branchIDRE = regexp.MustCompile(`^[a-z0-9-]+$`)

func FuzzNewBranchID(f *testing.F) {
	for _, s := range []string{"", "alt", "redis-approach", "Redis", "a_b", "é", strings.Repeat("a", 101), "-", "a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ledger.NewBranchID(s)
		want := branchIDRE.MatchString(s) && len(s) <= ledger.MaxBranchIDLength
		if (err == nil) != want {
			t.Fatalf("NewBranchID(%q) error = %v, want valid=%v", s, err, want)
		}
		if err != nil {
			if ledger.CodeOf(err) != ledger.CodeInvalidPayload {
				t.Fatalf("code = %s", ledger.CodeOf(err))
			}
			return
		}
		if string(b) != s {
			t.Fatalf("NewBranchID(%q) = %q", s, b)
		}
	})
}

// FuzzAddThought feeds arbitrary input to a session with a branch in it:
// every call either commits a thought that keeps the invariants, or fails
// with a client error and stores nothing.
func FuzzAddThought(f *testing.F) {
	f.Add("x", 0, 0, 0, 0, "", false)
	f.Add("x", 2, 0, 0, 0, "", false)
	f.Add("x", 0, 9, 1, 0, "", true)
	f.Add("x", 0, 0, 0, 2, "alt", false)
	f.Add("x", 4, 3, 2, 1, "b", true)
	f.Add(" ", -1, -1, -1, -1, "B", true)
	f.Fuzz(func(t *testing.T, text string, n, total, rev, from int, branch string, isRev bool) {
		e := setup(t)
		id := e.start(t)
		e.add(t, id, th("1"))
		e.add(t, id, th("2"))
		e.add(t, id, onBranch(th("a"), "alt", 1))
		opt := func(v int) *int {
			if v == 0 {
				return nil
			}
			return ip(v)
		}
		in := ledger.ThoughtInput{Thought: text, ThoughtNumber: opt(n), TotalThoughts: opt(total),
			RevisesThought: opt(rev), BranchFromThought: opt(from), BranchID: branch, IsRevision: isRev}
		calls, _ := e.store.stats()
		res, err := e.l.AddThought(context.Background(), id, in, agent)
		if err != nil {
			if c := ledger.CodeOf(err); c != ledger.CodeInvalidPayload && c != ledger.CodeThoughtNotFound {
				t.Fatalf("code %s for %v", c, err)
			}
			if after, _ := e.store.stats(); after != calls {
				t.Fatalf("refused input reached the store: %v", err)
			}
			return
		}
		d := res.Thought
		if d.ThoughtNumber < 1 || d.TotalThoughts < d.ThoughtNumber {
			t.Fatalf("numbers %d/%d", d.ThoughtNumber, d.TotalThoughts)
		}
		if want := ledger.NodeID(id, ledger.BranchID(d.BranchID), d.ThoughtNumber); res.Node.ID != want {
			t.Fatalf("node id %q, want %q", res.Node.ID, want)
		}
		if got := e.view(t, id).Graph.Len(); got != 4 {
			t.Fatalf("graph has %d thoughts, want 4", got)
		}
	})
}

// TestInvalidFieldKeepsPercentInNames: a client's field name is data, not
// part of the format.
func TestInvalidFieldKeepsPercentInNames(t *testing.T) {
	err := ledger.InvalidField("weird%dname", "expected %s", "a string")
	if got, want := err.Error(), "weird%dname: expected a string"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	if err.Code != ledger.CodeInvalidPayload || err.Details["field"] != "weird%dname" {
		t.Errorf("code %s, details %v", err.Code, err.Details)
	}
}
