package gitstore_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/gitstore/remote/remotetest"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// The on-disk session index (thoughtbox/index) must be rebuilt from Git
// whenever it is missing, damaged or out of date, and never answer for
// what Git no longer holds. Each test reopens the repository as a new
// process would.

func openAt(t *testing.T, dir string) (*gitstore.Store, *ledger.Ledger) {
	t.Helper()
	s, err := gitstore.Open(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, ledger.New(s, ledger.Options{})
}

// searchIDs searches and returns the ids of the hits and how many
// sessions the search read.
func searchIDs(t *testing.T, l *ledger.Ledger, q string) ([]string, int) {
	t.Helper()
	r, err := l.Search(context.Background(), ledger.SearchQuery{Query: q, Limit: 100})
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	var ids []string
	for _, h := range r.Hits {
		ids = append(ids, h.Session.ID)
	}
	slices.Sort(ids)
	return ids, r.Indexed
}

func indexDir(repo string) string { return filepath.Join(repo, "thoughtbox", "index") }

func segments(t *testing.T, repo string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(indexDir(repo), "*.seg"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed; this test needs it")
	}
}

func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// twoSessions writes two sessions with words of their own and one in
// common, and returns the repository and their ids.
func twoSessions(t *testing.T) (string, *remotetest.Clone, string, string) {
	t.Helper()
	c := newRepoClone(t, "a")
	a := c.Start("Cache planning")
	c.Think(a, "The walrus eats the shared lunch")
	b := c.Start("Queue planning")
	c.Think(b, "The narwhal eats the shared lunch")
	if ids, _ := searchIDs(t, c.Ledger, "shared lunch"); !slices.Equal(ids, sorted(a, b)) {
		t.Fatalf("shared lunch: %v", ids)
	}
	if err := c.Store.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(segments(t, repoOf(c))) == 0 {
		t.Fatal("searching wrote no index segment")
	}
	return repoOf(c), c, a, b
}

// repos remembers where each clone made here keeps its repository.
var repos = map[*remotetest.Clone]string{}

func repoOf(c *remotetest.Clone) string { return repos[c] }

// newRepoClone is newClone with the repository's path known.
func newRepoClone(t *testing.T, name string) *remotetest.Clone {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name+".git")
	s, l := openAt(t, dir)
	c := &remotetest.Clone{T: t, Name: name, Store: s, Ledger: l}
	repos[c] = dir
	return c
}

func TestIndexNewProcessAnswersFromWhatAnOldOneWrote(t *testing.T) {
	repo, c, a, _ := twoSessions(t)
	c.Store.Close()
	_, l := openAt(t, repo)
	ids, read := searchIDs(t, l, "walrus")
	if !slices.Equal(ids, []string{a}) || read != 0 {
		t.Fatalf("walrus: %v, %d sessions read; want %s from the index, none read", ids, read, a)
	}
	page, total, err := l.ListPage(context.Background(), 0, 1)
	if err != nil || total != 2 || len(page) != 1 {
		t.Fatalf("first page: %v of %d, %v", page, total, err)
	}
}

func TestIndexRebuiltAfterItsFilesAreDeleted(t *testing.T) {
	repo, c, a, b := twoSessions(t)
	c.Store.Close()
	if err := os.RemoveAll(indexDir(repo)); err != nil {
		t.Fatal(err)
	}
	_, l := openAt(t, repo)
	ids, read := searchIDs(t, l, "lunch")
	if !slices.Equal(ids, sorted(a, b)) || read != 2 {
		t.Fatalf("lunch: %v, %d read; want both, read again", ids, read)
	}
	if len(segments(t, repo)) == 0 {
		t.Fatal("the index was not written again")
	}
}

func TestIndexRebuiltAfterACrashMidUpdate(t *testing.T) {
	repo, c, a, b := twoSessions(t)
	c.Store.Close()
	// A segment cut short (written but not yet on disk when the machine
	// stopped), another with a byte gone wrong, and a writer's temporary
	// file left half written.
	segs := segments(t, repo)
	for i, f := range segs {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			data = data[:len(data)*2/3]
		} else {
			data[len(data)/3] ^= 0x55
		}
		os.WriteFile(f, data, 0o644)
	}
	os.WriteFile(filepath.Join(indexDir(repo), "seg-123.tmp"), []byte("TBIDX01\nhalf"), 0o644)
	_, l := openAt(t, repo)
	ids, read := searchIDs(t, l, "lunch")
	if !slices.Equal(ids, sorted(a, b)) || read != 2 {
		t.Fatalf("lunch after damage: %v, %d read; want both, read again", ids, read)
	}
	if ids, _ := searchIDs(t, l, "narwhal"); !slices.Equal(ids, []string{b}) {
		t.Fatalf("narwhal: %v", ids)
	}
}

func TestIndexFollowsGitGC(t *testing.T) {
	needGit(t)
	repo, c, a, b := twoSessions(t)
	c.Store.Close()
	mustGit(t, repo, "gc", "--prune=now", "--quiet")
	s, l := openAt(t, repo)
	ids, read := searchIDs(t, l, "lunch")
	if !slices.Equal(ids, sorted(a, b)) || read != 0 {
		t.Fatalf("lunch after gc: %v, %d read; the tips did not change, so none should be", ids, read)
	}
	// Written after the gc: the moved session is read again.
	if _, err := l.AddThought(context.Background(), a, ledger.ThoughtInput{Thought: "An okapi joins", NextThoughtNeeded: true}, ledger.Author{Name: "t"}); err != nil {
		t.Fatal(err)
	}
	s.Flush()
	ids, read = searchIDs(t, l, "okapi")
	if !slices.Equal(ids, []string{a}) || read != 1 {
		t.Fatalf("okapi: %v, %d read", ids, read)
	}
}

func TestIndexNeverAnswersForRefsGitNoLongerHas(t *testing.T) {
	needGit(t)
	repo, c, a, b := twoSessions(t)
	c.Store.Close()
	mustGit(t, repo, "update-ref", "-d", "refs/heads/sessions/"+a+"/main")
	_, l := openAt(t, repo)
	if ids, _ := searchIDs(t, l, "walrus"); len(ids) != 0 {
		t.Fatalf("walrus found in %v after its session's refs were deleted", ids)
	}
	if ids, _ := searchIDs(t, l, "lunch"); !slices.Equal(ids, []string{b}) {
		t.Fatalf("lunch: %v, want only %s", ids, b)
	}
	page, total, err := l.ListPage(context.Background(), 0, 10)
	if err != nil || total != 1 || len(page) != 1 || page[0].ID != b {
		t.Fatalf("listing after the deletion: %v of %d, %v", page, total, err)
	}
	list, err := l.List(context.Background())
	if err != nil || len(list) != 1 {
		t.Fatalf("List: %v, %v", list, err)
	}
}

func TestIndexFollowsAPullThatMovedSessions(t *testing.T) {
	url := remotetest.BareRemote(t)
	a := newRepoClone(t, "a")
	b := newRepoClone(t, "b")
	id := a.Start("Shared investigation")
	a.Think(id, "First the pangolin")
	a.Push(url, remote.TransferOptions{})
	b.Pull(url, remote.TransferOptions{})
	if ids, _ := searchIDs(t, b.Ledger, "pangolin"); !slices.Equal(ids, []string{id}) {
		t.Fatalf("b: pangolin: %v", ids)
	}
	a.Think(id, "Then the quokka")
	other := a.Start("Another quokka question")
	a.Push(url, remote.TransferOptions{})
	res := b.Pull(url, remote.TransferOptions{})
	_ = res
	// A new process on b, as after a server's pull.
	b.Store.Close()
	_, l := openAt(t, repoOf(b))
	ids, read := searchIDs(t, l, "quokka")
	if !slices.Equal(ids, sorted(id, other)) || read != 2 {
		t.Fatalf("b after the pull: quokka in %v, %d read; want both sessions, both read again", ids, read)
	}
	page, total, err := l.ListPage(context.Background(), 0, 10)
	if err != nil || total != 2 {
		t.Fatalf("b's listing: %v of %d, %v", page, total, err)
	}
	for _, s := range page {
		if s.ID == id && s.ThoughtCount != 2 {
			t.Fatalf("b lists %s with %d thoughts, want 2", id, s.ThoughtCount)
		}
	}
}

// TestIndexIDsThatPrefixOthers: "abc" and "abc-d" are in one order as ids
// and in the other as refs ('-' sorts before '/').
func TestIndexIDsThatPrefixOthers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p.git")
	s, _ := openAt(t, dir)
	ids := []string{"abc-d", "abc", "abc-d-e", "ab"}
	k := 0
	l := ledger.New(s, ledger.Options{NewID: func() string { k++; return ids[k-1] }})
	ctx := context.Background()
	for range ids {
		ss, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "prefix"}, ledger.Author{Name: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AddThought(ctx, ss.ID, ledger.ThoughtInput{Thought: "tapir " + ss.ID, NextThoughtNeeded: true}, ledger.Author{Name: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	s.Flush()
	if got, _ := searchIDs(t, l, "tapir"); !slices.Equal(got, sorted(ids...)) {
		t.Fatalf("tapir: %v", got)
	}
	list, err := l.List(ctx)
	if err != nil || len(list) != len(ids) {
		t.Fatalf("List: %d sessions, %v", len(list), err)
	}
}

// TestIndexedSessionsPageAsFilterSessions: the page the index gives equals
// FilterSessions over the whole list, order and ties included.
func TestIndexedSessionsPageAsFilterSessions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p.git")
	s, _ := openAt(t, dir)
	at := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	k := 0
	// Several sessions share a time, so that ties are broken by id.
	l := ledger.New(s, ledger.Options{Now: func() time.Time { k++; return at.Add(time.Duration(k/3) * time.Second) }})
	ctx := context.Background()
	for i := range 7 {
		if _, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: fmt.Sprintf("s%d", i)}, ledger.Author{Name: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := l.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []ledger.SessionFilter{{Limit: 3}, {Limit: 3, Offset: 3}, {Limit: 5, Offset: 5}, {Offset: 9}} {
		want, err := ledger.FilterSessions(all, f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.Sessions(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if got.Total != want.Total || got.More != want.More || len(got.Sessions) != len(want.Sessions) {
			t.Fatalf("%+v: got %d of %d (more %v), want %d of %d (more %v)", f, len(got.Sessions), got.Total, got.More, len(want.Sessions), want.Total, want.More)
		}
		for i := range want.Sessions {
			if got.Sessions[i].ID != want.Sessions[i].ID {
				t.Fatalf("%+v row %d: %s, want %s", f, i, got.Sessions[i].ID, want.Sessions[i].ID)
			}
		}
	}
}

func sorted(s ...string) []string { sort.Strings(s); return s }
