package project

import (
	"context"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/sharing"
)

// TestPullResumesAnInterruptedBranch: a pull killed after it recorded part
// of this side's chain as a branch, before it moved the refs, leaves the
// chain where it was; the next pull goes on with the same branch, so each
// thought ends on it once, and the session converges with the remote's.
func TestPullResumesAnInterruptedBranch(t *testing.T) {
	remote := bareRemote(t)
	a, b := newTeamMember(t), newTeamMember(t)
	ctx := context.Background()
	s, err := a.Ledger().StartSession(ctx, ledger.CreateSessionParams{Title: "Why the cache misses"}, ledger.Author{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	a.think(t, s.ID, "The eviction counter climbs.")
	a.push(t, remote)
	if _, err := b.Pull(ctx, remote, nil); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"B one.", "B two.", "B three."} {
		if _, err := b.Ledger().AddThought(ctx, s.ID, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true}, ledger.Author{Name: "Bob Builder"}); err != nil {
			t.Fatal(err)
		}
	}
	a.think(t, s.ID, "A two.")
	a.push(t, remote)

	// What the interrupted pull did: the fetch, and the first of B's
	// thoughts recorded on the branch.
	res, err := b.Pull(ctx, remote, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Branched) != 1 || len(res.Diverged) != 0 {
		t.Fatalf("first pull: branched %+v, diverged %+v", res.Branched, res.Diverged)
	}
	br := res.Branched[0]
	if !strings.HasPrefix(br.Branch, "bob-builder-") || len(br.Branch) != len("bob-builder-")+7 || br.FromThought != 1 || br.Thoughts != 3 {
		t.Fatalf("branched %+v: want bob-builder-<7 hex> from thought 1 with 3 thoughts", br)
	}

	// Now the same again, interrupted: B extends main apart once more;
	// the branch it would become is begun by hand, as a killed pull
	// leaves it.
	b.think(t, s.ID, "B four.")
	b.think(t, s.ID, "B five.")
	a.think(t, s.ID, "A three.")
	a.push(t, remote)
	if _, err := b.pullWithout(ctx, remote); err != nil {
		t.Fatal(err)
	}
	kept, err := b.Diverged(s.ID)
	if err != nil || len(kept) != 1 {
		t.Fatalf("kept chains after the fetch alone: %+v, %v", kept, err)
	}
	ac, err := b.store.Apart(ctx, s.ID, kept[0].Ref, kept[0].Tip)
	if err != nil || ac.Unmergeable != "" || len(ac.Thoughts) != 2 {
		t.Fatalf("apart: %+v, %v", ac, err)
	}
	from := ac.ForkThought
	name := apartBranchName(ac)
	if _, err := b.Ledger().AddThought(ctx, s.ID, ledger.ThoughtInput{Thought: ac.Thoughts[0].Thought, NextThoughtNeeded: true, BranchID: name, BranchFromThought: &from}, ac.Authors[0]); err != nil {
		t.Fatal(err)
	}

	res, err = b.Pull(ctx, remote, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Branched) != 1 || res.Branched[0].Branch != name || len(res.Diverged) != 0 {
		t.Fatalf("resumed pull: branched %+v, diverged %+v; want branch %s", res.Branched, res.Diverged, name)
	}
	v, err := b.Ledger().View(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, n := range v.Graph.MainChain() {
		count[n.Data.Thought]++
	}
	for _, id := range v.Graph.BranchIDs() {
		nodes, _ := v.Graph.Branch(id)
		for _, n := range nodes {
			count[n.Data.Thought]++
		}
	}
	for _, text := range []string{"The eviction counter climbs.", "A two.", "A three.", "B one.", "B two.", "B three.", "B four.", "B five."} {
		if count[text] != 1 {
			t.Errorf("%q is in the session %d times, want once (all: %v)", text, count[text], count)
		}
	}
	if got := len(v.Graph.MainChain()); got != 3 {
		t.Errorf("main chain has %d thoughts, want A's 3", got)
	}
	vr, err := b.Ledger().Verify(ctx, s.ID, ledger.VerifyOptions{})
	if err != nil || !vr.Valid {
		t.Errorf("verify: %+v, %v", vr, err)
	}
	b.push(t, remote)
	if _, err := a.Pull(ctx, remote, nil); err != nil {
		t.Fatal(err)
	}
	ra, _ := a.store.ListRefs("refs/heads/sessions/")
	rb, _ := b.store.ListRefs("refs/heads/sessions/")
	if len(ra) != 3 || len(ra) != len(rb) {
		t.Fatalf("refs: A %v, B %v; want main and two branches on both", ra, rb)
	}
	for ref, h := range ra {
		if rb[ref] != h {
			t.Errorf("%s: A %s, B %s", ref, h, rb[ref])
		}
	}
}

// pullWithout pulls without settling divergences: what a pull killed
// after its fetch and ref moves, before it recorded anything, leaves.
func (p *Project) pullWithout(ctx context.Context, name string) (*sharing.PullResult, error) {
	to, err := transferOptions(p.cfg, nil)
	if err != nil {
		return nil, err
	}
	return remote.Pull(ctx, p.store, name, to)
}
