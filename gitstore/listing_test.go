package gitstore_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/gitstore/remote/remotetest"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// The index's listing (thoughtbox/index/listing) answers a page without
// checking every session's refs, while the refs are as they were when it
// was written. These tests change the refs every way they can change —
// our own writer in another process, git moving, packing and deleting
// refs — and damage the file, and hold each new process's first page to
// the list made by checking every session against Git.

func listingPath(repo string) string { return filepath.Join(indexDir(repo), "listing") }

// listedAsGit opens repo as a new process, takes the first page and the
// full list (which reads every session's refs), and fails unless they
// agree and hold exactly want. It returns the page.
func listedAsGit(t *testing.T, repo string, want ...string) []ledger.Session {
	t.Helper()
	s, l := openAt(t, repo)
	defer s.Close()
	ctx := context.Background()
	page, total, err := l.ListPage(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	all, err := l.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if total != len(all) || len(page) != len(all) {
		t.Fatalf("page of %d (total %d), list of %d", len(page), total, len(all))
	}
	var ids []string
	for i, p := range page {
		g := all[i]
		if p.ID != g.ID || p.Title != g.Title || p.ThoughtCount != g.ThoughtCount || p.BranchCount != g.BranchCount || !p.UpdatedAt.Equal(g.UpdatedAt) {
			t.Fatalf("row %d: page has %s %q %d thoughts %d branches %v; Git has %s %q %d thoughts %d branches %v",
				i, p.ID, p.Title, p.ThoughtCount, p.BranchCount, p.UpdatedAt, g.ID, g.Title, g.ThoughtCount, g.BranchCount, g.UpdatedAt)
		}
		ids = append(ids, p.ID)
	}
	slices.Sort(ids)
	if w := sorted(want...); !slices.Equal(ids, w) {
		t.Fatalf("listed %v, want %v", ids, w)
	}
	return page
}

// settle makes packed-refs look older than the racy window (3 s), as it
// is on any ledger not written this instant; a listing is written only
// then. It leaves a packed-refs that is old already as it is.
func settle(t *testing.T, repo string) {
	t.Helper()
	p := filepath.Join(repo, "packed-refs")
	fi, err := os.Stat(p)
	if err != nil || time.Since(fi.ModTime()) > time.Minute {
		return
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

func thoughtsOf(page []ledger.Session, id string) int {
	for _, s := range page {
		if s.ID == id {
			return s.ThoughtCount
		}
	}
	return -1
}

func TestListingFollowsEveryChangeOfTheRefs(t *testing.T) {
	needGit(t)
	c := newRepoClone(t, "a")
	repo := repoOf(c)
	a := c.Start("Cache planning")
	c.Think(a, "The walrus eats")
	b := c.Start("Queue planning")
	c.Think(b, "The narwhal eats")
	br := c.Start("Branching")
	c.Think(br, "One")
	c.Branch(br, "alt", 1, "Two, elsewhere")
	c.Store.Close()

	// Loose refs only: their values are in the stamp, so a listing is
	// written at once.
	listedAsGit(t, repo, a, b, br)
	if _, err := os.Stat(listingPath(repo)); err != nil {
		t.Fatalf("no listing over loose refs: %v", err)
	}
	// packed-refs written this instant: no listing under its stamp yet,
	// since a rewrite within the same tick of a coarse clock could look
	// unchanged.
	mustGit(t, repo, "pack-refs", "--all")
	os.Remove(listingPath(repo))
	listedAsGit(t, repo, a, b, br)
	if _, err := os.Stat(listingPath(repo)); err == nil {
		t.Fatal("a listing was written under the stamp of a packed-refs changed just now")
	}
	settle(t, repo)
	listedAsGit(t, repo, a, b, br)
	fi, err := os.Stat(listingPath(repo))
	if err != nil {
		t.Fatalf("a full check wrote no listing: %v", err)
	}
	// Nothing moved: the next process answers from the listing as it is.
	listedAsGit(t, repo, a, b, br)
	if again, err := os.Stat(listingPath(repo)); err != nil || !os.SameFile(fi, again) || !again.ModTime().Equal(fi.ModTime()) {
		t.Fatalf("the listing was rewritten though no ref moved (%v)", err)
	}

	// Our own writer in another process: the thought is in its log (and
	// perhaps in the refs by now), never in the old listing.
	ws, wl := openAt(t, repo)
	if _, err := wl.AddThought(context.Background(), a, ledger.ThoughtInput{Thought: "An okapi joins", NextThoughtNeeded: true}, ledger.Author{Name: "w"}); err != nil {
		t.Fatal(err)
	}
	settle(t, repo)
	if n := thoughtsOf(listedAsGit(t, repo, a, b, br), a); n != 2 {
		t.Fatalf("after another process's thought: %s lists %d thoughts, want 2", a, n)
	}
	ws.Close()
	settle(t, repo)
	listedAsGit(t, repo, a, b, br)

	// git moves a ref (a loose ref over the packed one): b back to its
	// first commit.
	mustGit(t, repo, "update-ref", "refs/heads/sessions/"+b+"/main", "refs/heads/sessions/"+b+"/main~1")
	settle(t, repo)
	if n := thoughtsOf(listedAsGit(t, repo, a, b, br), b); n != 0 {
		t.Fatalf("after git moved %s back: %d thoughts listed, want 0", b, n)
	}
	// git gc packs the refs: same tips, another packed-refs.
	mustGit(t, repo, "gc", "--prune=now", "--quiet")
	settle(t, repo)
	listedAsGit(t, repo, a, b, br)
	// git deletes a session's refs: it is never listed again.
	mustGit(t, repo, "update-ref", "-d", "refs/heads/sessions/"+a+"/main")
	settle(t, repo)
	listedAsGit(t, repo, b, br)
	// A branch of its own moves the session's key too.
	mustGit(t, repo, "update-ref", "-d", "refs/heads/sessions/"+br+"/branches/alt")
	settle(t, repo)
	page := listedAsGit(t, repo, b, br)
	for _, s := range page {
		if s.ID == br && s.BranchCount != 0 {
			t.Fatalf("%s lists %d branches after git deleted its branch", br, s.BranchCount)
		}
	}
}

func TestListingDamagedIsDroppedAndRebuilt(t *testing.T) {
	_, c, a, b := twoSessions(t)
	repo := repoOf(c)
	c.Store.Close()
	settle(t, repo)
	listedAsGit(t, repo, a, b)
	data, err := os.ReadFile(listingPath(repo))
	if err != nil {
		t.Fatal(err)
	}
	for _, damage := range []func([]byte) []byte{
		func(d []byte) []byte { return d[:len(d)-3] },                              // cut short
		func(d []byte) []byte { d = slices.Clone(d); d[len(d)-10] ^= 1; return d }, // a record's byte
		func(d []byte) []byte { d = slices.Clone(d); d[40] ^= 1; return d },        // an offset
		func(d []byte) []byte { return []byte("TBLST01\n") },
	} {
		if err := os.WriteFile(listingPath(repo), damage(data), 0o644); err != nil {
			t.Fatal(err)
		}
		listedAsGit(t, repo, a, b)
		got, err := os.ReadFile(listingPath(repo))
		if err != nil || !slices.Equal(got, data) {
			t.Fatalf("the damaged listing was not replaced by a good one (%v)", err)
		}
	}
	// A listing left by a writer that died before its rename is ignored.
	os.Remove(listingPath(repo))
	os.WriteFile(filepath.Join(indexDir(repo), "listing-1.tmp"), data[:len(data)/2], 0o644)
	listedAsGit(t, repo, a, b)
	entries, _ := os.ReadDir(indexDir(repo))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "listing") && e.Name() != "listing" && e.Name() != "listing-1.tmp" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

func TestListingFollowsAPullThatMovedSessions(t *testing.T) {
	bare := remotetest.BareRemote(t)
	a := newRepoClone(t, "a")
	b := newRepoClone(t, "b")
	id := a.Start("Shared investigation")
	a.Think(id, "First the pangolin")
	a.Push(bare, remote.TransferOptions{})
	b.Pull(bare, remote.TransferOptions{})
	b.Store.Flush()
	settle(t, repoOf(b))
	if n := thoughtsOf(listedAsGit(t, repoOf(b), id), id); n != 1 {
		t.Fatalf("b lists %d thoughts, want 1", n)
	}
	if _, err := os.Stat(listingPath(repoOf(b))); err != nil {
		t.Fatalf("no listing on b before the pull: %v", err)
	}
	a.Think(id, "Then the quokka")
	other := a.Start("Another quokka question")
	a.Push(bare, remote.TransferOptions{})
	b.Pull(bare, remote.TransferOptions{})
	b.Store.Flush()
	settle(t, repoOf(b))
	if n := thoughtsOf(listedAsGit(t, repoOf(b), id, other), id); n != 2 {
		t.Fatalf("b lists %d thoughts after the pull, want 2", n)
	}
}
