package why

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/ledger"
)

func TestCovered(t *testing.T) {
	squash := map[string][]string{
		"a.go": {"package a", "func One() int { return 1 }", "func Two() int { return 2 }"},
		"b.go": {"x", "x"},
	}
	for _, c := range []struct {
		name   string
		theirs map[string][]string
		want   float64
	}{
		{"all its lines", map[string][]string{"a.go": {"package a", "func One() int { return 1 }"}}, 1},
		{"a line changed again later", map[string][]string{"a.go": {"package a", "func One() int { return 0 }"}}, 0.5},
		{"the same lines in another file", map[string][]string{"c.go": {"package a"}}, 0},
		{"repeats counted", map[string][]string{"b.go": {"x", "x", "x", "x"}}, 0.5},
		{"nothing added", map[string][]string{}, 0},
	} {
		if got := Covered(squash, c.theirs); got != c.want {
			t.Errorf("%s: Covered = %v, want %v", c.name, got, c.want)
		}
	}
	if Covered(squash, map[string][]string{"a.go": {"package a", "func One() int { return 1 }", "func Two() int { return 2 }", "func Three()", "func Four()"}}) >= MinCovered {
		t.Errorf("a commit with 3 of 5 lines in the squash matched")
	}
}

// fakeLinks is a LinkStore in memory that counts its reads.
type fakeLinks struct {
	links map[string][]ledger.CodeLink
	tips  map[string]string
	reads int
	lists int
}

func (f *fakeLinks) AddLinks(_ context.Context, s string, links []ledger.CodeLink) (int, error) {
	f.links[s] = append(f.links[s], links...)
	f.tips[s] = fmt.Sprintf("tip%d", len(f.links[s]))
	return len(links), nil
}

func (f *fakeLinks) ReadLinks(_ context.Context, s string) ([]ledger.CodeLink, string, error) {
	f.reads++
	return f.links[s], f.tips[s], nil
}

func (f *fakeLinks) LinkTips(context.Context) (map[string]string, error) {
	f.lists++
	out := map[string]string{}
	for k, v := range f.tips {
		out[k] = v
	}
	return out, nil
}

// TestIndexFollowsTheRefs: a fresh index file is read without listing
// the links refs; a check re-reads only the sessions whose links ref
// moved, and drops a session that went away.
func TestIndexFollowsTheRefs(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	f := &fakeLinks{links: map[string][]ledger.CodeLink{}, tips: map[string]string{}}
	c1, c2 := fmt.Sprintf("%040x", 1), fmt.Sprintf("%040x", 2)
	f.AddLinks(ctx, "s1", []ledger.CodeLink{{Commit: c1, Session: "s1", Files: []string{"a.go"}, PatchID: "p1", Via: ledger.ViaCommit}})
	f.AddLinks(ctx, "s2", []ledger.CodeLink{{Commit: c2, Session: "s2", Files: []string{"a.go"}, Via: ledger.ViaCommit}})
	ask := func() *Asker {
		return &Asker{Repo: &coderepo.Repo{Worktree: dir, GitDir: dir, CommonDir: dir}, Links: f}
	}
	idx, err := ask().index(ctx)
	if err != nil || len(idx.sessionsOf(c1)) != 1 || len(idx.byFile["a.go"]) != 2 || idx.byPatch["p1"][0] != c1 || f.reads != 2 {
		t.Fatalf("first index: %+v, %v, %d reads", idx, err, f.reads)
	}
	if _, err := os.Stat(ask().indexPath()); err != nil {
		t.Fatalf("no index file: %v", err)
	}
	if _, err := ask().index(ctx); err != nil || f.reads != 2 || f.lists != 1 {
		t.Fatalf("a fresh index was checked again: %d reads, %d listings, %v", f.reads, f.lists, err)
	}
	f.AddLinks(ctx, "s1", []ledger.CodeLink{{Commit: c2, Session: "s1", Via: ledger.ViaRelink}})
	delete(f.tips, "s2")
	a := ask()
	idx, err = a.checkIndex(ctx, a.readIndexFile())
	if err != nil || f.reads != 3 {
		t.Fatalf("after a move: %d reads, %v; want one more", f.reads, err)
	}
	if got := idx.sessionsOf(c2); len(got) != 1 || got[0].Session != "s1" {
		t.Errorf("commit 2 is linked to %+v, want s1 only (s2 is gone)", got)
	}
	if got, _ := ask().index(ctx); len(got.sessionsOf(c2)) != 1 {
		t.Errorf("the checked index was not written: %+v", got.sessionsOf(c2))
	}
	// A pull forgets the file: the next read checks the refs.
	if err := a.Repo.ForgetLinkIndex(); err != nil {
		t.Fatal(err)
	}
	if _, err := ask().index(ctx); err != nil || f.lists != 3 {
		t.Errorf("after ForgetLinkIndex: %d listings, %v", f.lists, err)
	}
}

// TestLinkedReadsEntries: a session's linked commits are those whose
// trailers name it and those its link entries name (a relinked squash),
// each once; an entry for a commit this repository lacks is left out.
func TestLinkedReadsEntries(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	ctx := context.Background()
	gitIn(t, dir, "init", "-q", "-b", "main")
	const s = "00000000-0000-4000-8000-0000000000aa"
	gitIn(t, dir, "commit", "-q", "--allow-empty", "-m", "By trailer", "-m", "Thoughtbox-Session: "+s)
	byTrailer := gitIn(t, dir, "rev-parse", "HEAD")
	gitIn(t, dir, "commit", "-q", "--allow-empty", "-m", "Squashed elsewhere")
	byEntry := gitIn(t, dir, "rev-parse", "HEAD")
	r, err := coderepo.Find(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeLinks{links: map[string][]ledger.CodeLink{}, tips: map[string]string{}}
	f.AddLinks(ctx, s, []ledger.CodeLink{
		{Commit: byEntry, Session: s, Via: ledger.ViaRelink},
		{Commit: byTrailer, Session: s, Via: ledger.ViaCommit},
		{Commit: fmt.Sprintf("%040x", 7), Session: s, Via: ledger.ViaCommit},
	})
	got, err := (&Asker{Repo: r, Links: f}).Linked(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Commits) != 2 || got.Commits[0].ID != byTrailer || got.Commits[1].ID != byEntry || got.Commits[1].Subject != "Squashed elsewhere" {
		t.Fatalf("linked %+v, want %s by trailer then %s by entry", got.Commits, byTrailer, byEntry)
	}
	got, err = (&Asker{Repo: r}).Linked(ctx, s)
	if err != nil || len(got.Commits) != 1 {
		t.Fatalf("without link entries: %+v, %v", got, err)
	}
}
