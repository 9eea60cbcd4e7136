package ledger_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// links is the part of a node that the graph computes.
type links struct {
	Prev, RevisesNode, BranchOrigin string
	Next                            []string
	Branch                          ledger.BranchID
	Rev                             ledger.RevisionInfo
}

func graphLinks(g *ledger.Graph) map[string]links {
	out := map[string]links{}
	for _, n := range g.Nodes() {
		rev, _ := g.Revision(n.ID)
		out[n.ID] = links{Prev: n.Prev, RevisesNode: n.RevisesNode, BranchOrigin: n.BranchOrigin,
			Next: n.Next, Branch: n.BranchID, Rev: rev}
	}
	return out
}

func ids(ns []ledger.ThoughtNode) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.ID)
	}
	return out
}

// forkSession writes: main 1 2 3; branch a from 2 (a:3 a:4); branch b from
// 2 (b:3); main 4; a revision of 2 on main (5); a revision of that (6); a
// second revision of 2 on branch a (a:5).
func forkSession(t *testing.T, e env) string {
	t.Helper()
	id := e.start(t)
	for _, in := range []ledger.ThoughtInput{
		th("1"), th("2"), th("3"),
		onBranch(th("a3"), "a", 2), onBranch(th("a4"), "a", 2),
		onBranch(th("b3"), "b", 2),
		th("4"),
		revises(th("5 fixes 2"), 2),
		revises(th("6 fixes 5"), 5),
		revises(onBranch(th("a5 fixes 2"), "a", 2), 2),
	} {
		e.add(t, id, in)
	}
	return id
}

func TestGraphLinks(t *testing.T) {
	e := setup(t)
	id := forkSession(t, e)
	g := e.view(t, id).Graph

	orig := func(id string) ledger.RevisionInfo { return ledger.RevisionInfo{RevisionChainID: id} }
	want := map[string]links{
		"s1:1": {Next: []string{"s1:2"}, Rev: orig("s1:1")},
		"s1:2": {Prev: "s1:1", Next: []string{"s1:3", "s1:a:3", "s1:b:3"},
			Rev: ledger.RevisionInfo{RevisedBy: []string{"s1:5", "s1:a:5"}, RevisionChainID: "s1:2"}},
		"s1:3":   {Prev: "s1:2", Next: []string{"s1:4"}, Rev: orig("s1:3")},
		"s1:a:3": {Prev: "s1:2", BranchOrigin: "s1:2", Branch: "a", Next: []string{"s1:a:4"}, Rev: orig("s1:a:3")},
		"s1:a:4": {Prev: "s1:a:3", BranchOrigin: "s1:2", Branch: "a", Next: []string{"s1:a:5"}, Rev: orig("s1:a:4")},
		"s1:b:3": {Prev: "s1:2", BranchOrigin: "s1:2", Branch: "b", Rev: orig("s1:b:3")},
		"s1:4":   {Prev: "s1:3", Next: []string{"s1:5"}, Rev: orig("s1:4")},
		"s1:5": {Prev: "s1:4", Next: []string{"s1:6"}, RevisesNode: "s1:2",
			Rev: ledger.RevisionInfo{RevisedBy: []string{"s1:6"}, RevisionDepth: 1, RevisionChainID: "s1:2"}},
		"s1:6": {Prev: "s1:5", RevisesNode: "s1:5",
			Rev: ledger.RevisionInfo{RevisionDepth: 2, RevisionChainID: "s1:2"}},
		"s1:a:5": {Prev: "s1:a:4", BranchOrigin: "s1:2", Branch: "a", RevisesNode: "s1:2",
			Rev: ledger.RevisionInfo{RevisionDepth: 1, RevisionChainID: "s1:2"}},
	}
	if diff := cmp.Diff(want, graphLinks(g), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("links (-want +got):\n%s", diff)
	}

	if diff := cmp.Diff([]string{"s1:1", "s1:2", "s1:3", "s1:4", "s1:5", "s1:6"}, ids(g.MainChain())); diff != "" {
		t.Errorf("MainChain (-want +got):\n%s", diff)
	}
	a, ok := g.Branch("a")
	if diff := cmp.Diff([]string{"s1:a:3", "s1:a:4", "s1:a:5"}, ids(a)); !ok || diff != "" {
		t.Errorf("Branch(a) ok=%v (-want +got):\n%s", ok, diff)
	}
	wantBranches := []ledger.BranchInfo{
		{ID: "a", FromThought: 2, Origin: "s1:2", Count: 3},
		{ID: "b", FromThought: 2, Origin: "s1:2", Count: 1},
	}
	if diff := cmp.Diff(wantBranches, g.Branches()); diff != "" {
		t.Errorf("Branches (-want +got):\n%s", diff)
	}
	if n, ok := g.Thought(4); !ok || n.Data.Thought != "4" {
		t.Errorf("Thought(4) = %+v, %v", n, ok)
	}
	if n, ok := g.BranchThought("b", 3); !ok || n.Data.Thought != "b3" {
		t.Errorf("BranchThought(b, 3) = %+v, %v", n, ok)
	}
	if _, ok := g.Node("s1:b:4"); ok {
		t.Errorf("Node(s1:b:4) found, want none")
	}
	for b, want := range map[ledger.BranchID]int{"": 7, "a": 6, "b": 4} {
		if got, ok := g.NextNumber(b); !ok || got != want {
			t.Errorf("NextNumber(%q) = %d, %v; want %d", b, got, ok, want)
		}
	}
	s := e.view(t, id).Session
	if s.ThoughtCount != 10 || s.BranchCount != 2 {
		t.Errorf("counts = %d thoughts, %d branches; want 10, 2", s.ThoughtCount, s.BranchCount)
	}
}

// TestReloadRebuildsSameGraph checks that the graph built from the store
// equals the one grown thought by thought, so that a restart loses nothing.
func TestReloadRebuildsSameGraph(t *testing.T) {
	e := setup(t)
	id := forkSession(t, e)
	grown := e.view(t, id).Graph

	fresh := setupWith(t, e.store)
	v, err := fresh.l.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Integrity.Valid || len(v.Graph.Problems()) > 0 {
		t.Errorf("integrity = %+v, problems = %q", v.Integrity, v.Graph.Problems())
	}
	if diff := cmp.Diff(graphLinks(grown), graphLinks(v.Graph), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("reloaded links (-grown +reloaded):\n%s", diff)
	}
	if diff := cmp.Diff(ids(grown.Nodes()), ids(v.Graph.Nodes())); diff != "" {
		t.Errorf("creation order (-grown +reloaded):\n%s", diff)
	}
	for _, n := range grown.Nodes() {
		m, _ := v.Graph.Node(n.ID)
		if m.Commit() != n.Commit() || n.Commit() == "" {
			t.Errorf("%s: commit %q after reload, %q before", n.ID, m.Commit(), n.Commit())
		}
	}
	// The reloaded ledger continues every chain where the first left off.
	res := fresh.add(t, id, onBranch(th("a6"), "a", 2))
	if res.Node.ID != "s1:a:6" || res.Node.Prev != "s1:a:5" {
		t.Errorf("continuing branch a after reload: id %s prev %s", res.Node.ID, res.Node.Prev)
	}
}

func TestBuildGraphDamaged(t *testing.T) {
	d := func(n int, b string) ledger.ThoughtData {
		return ledger.ThoughtData{Thought: "t", ThoughtNumber: n, TotalThoughts: n, BranchID: b}
	}
	s := &ledger.StoredSession{
		Meta: ledger.SessionMeta{ID: "s"},
		Main: []ledger.StoredThought{
			{Data: d(1, ""), Commit: "c1"},
			{Data: d(1, ""), Commit: "c2"}, // number used twice
			{Data: d(2, ""), Commit: "c3"},
		},
		Branches: []ledger.StoredBranch{
			{ID: "lost", ForkCommit: "gone", Thoughts: []ledger.StoredThought{{Data: d(5, "lost"), Commit: "c4"}}},
		},
	}
	rev := d(3, "")
	rev.IsRevision, rev.RevisesThought = true, ip(9)
	s.Main = append(s.Main, ledger.StoredThought{Data: rev, Commit: "c5"})

	g := ledger.BuildGraph(s)
	if diff := cmp.Diff([]string{"s:1", "s:2", "s:3", "s:lost:5"}, ids(g.Nodes())); diff != "" {
		t.Errorf("nodes kept (-want +got):\n%s", diff)
	}
	if got := len(g.Problems()); got != 3 {
		t.Errorf("problems = %q, want 3 (duplicate, lost fork, missing revision target)", g.Problems())
	}
	if n, _ := g.Node("s:1"); n.Commit() != "c1" {
		t.Errorf("duplicate kept commit %s, want the first (c1)", n.Commit())
	}
}

func TestThoughtNodeJSON(t *testing.T) {
	e := setup(t)
	id := forkSession(t, e)
	g := e.view(t, id).Graph
	decode := func(id string) map[string]any {
		n, _ := g.Node(id)
		b, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "data")
		return m
	}
	tests := []struct {
		id   string
		want map[string]any
	}{
		{"s1:1", map[string]any{"id": "s1:1", "prev": nil, "next": []any{"s1:2"},
			"revisesNode": nil, "branchOrigin": nil, "branchId": nil}},
		{"s1:b:3", map[string]any{"id": "s1:b:3", "prev": "s1:2", "next": []any{},
			"revisesNode": nil, "branchOrigin": "s1:2", "branchId": "b"}},
		{"s1:6", map[string]any{"id": "s1:6", "prev": "s1:5", "next": []any{},
			"revisesNode": "s1:5", "branchOrigin": nil, "branchId": nil}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, decode(tt.id)); diff != "" {
			t.Errorf("%s JSON (-want +got):\n%s", tt.id, diff)
		}
	}
}

// TestSnapshotIsStable checks that a view handed out never changes.
func TestSnapshotIsStable(t *testing.T) {
	e := setup(t)
	id := e.start(t)
	e.add(t, id, th("1"))
	before := e.view(t, id)
	e.add(t, id, th("2"))
	e.add(t, id, onBranch(th("x"), "x", 1))
	if got := before.Graph.Len(); got != 1 {
		t.Errorf("old snapshot grew to %d thoughts", got)
	}
	if n, _ := before.Graph.Thought(1); len(n.Next) != 0 {
		t.Errorf("old snapshot's thought 1 gained next %v", n.Next)
	}
	if before.Session.ThoughtCount != 1 {
		t.Errorf("old snapshot's session counts %d thoughts", before.Session.ThoughtCount)
	}
	after := e.view(t, id)
	if n, _ := after.Graph.Thought(1); len(n.Next) != 2 || after.Graph.Len() != 3 {
		t.Errorf("new snapshot: len %d, thought 1 next %v", after.Graph.Len(), n.Next)
	}
}
