package gitstore_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// clone is one agent's ledger: its own repository and a ledger on it.
type clone struct {
	t     *testing.T
	name  string
	store *gitstore.Store
	l     *ledger.Ledger
}

func newClone(t *testing.T, name string) *clone {
	t.Helper()
	s, err := gitstore.Open(filepath.Join(t.TempDir(), name+".git"), gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &clone{t: t, name: name, store: s, l: ledger.New(s, ledger.Options{})}
}

func (c *clone) start(title string) string {
	c.t.Helper()
	ss, err := c.l.StartSession(context.Background(), ledger.CreateSessionParams{Title: title}, ledger.Author{Name: c.name})
	if err != nil {
		c.t.Fatal(err)
	}
	return ss.ID
}

func (c *clone) think(id, text string) {
	c.t.Helper()
	if _, err := c.l.AddThought(context.Background(), id, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true}, ledger.Author{Name: c.name}); err != nil {
		c.t.Fatalf("%s: thought %q: %v", c.name, text, err)
	}
}

func (c *clone) branch(id, branch string, from int, text string) {
	c.t.Helper()
	if _, err := c.l.AddThought(context.Background(), id, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true, BranchID: branch, BranchFromThought: &from}, ledger.Author{Name: c.name}); err != nil {
		c.t.Fatalf("%s: branch thought %q: %v", c.name, text, err)
	}
}

// thoughts lists a session's thoughts as "branch/n: text", as this clone's
// store has them now (read fresh, not from the ledger's cache).
func (c *clone) thoughts(id string) []string {
	c.t.Helper()
	v, err := ledger.New(c.store, ledger.Options{}).Load(context.Background(), id)
	if err != nil {
		c.t.Fatalf("%s: load %s: %v", c.name, id, err)
	}
	if !v.Integrity.Valid {
		c.t.Fatalf("%s: session %s fails its integrity check: %+v", c.name, id, v.Integrity)
	}
	var out []string
	for _, n := range v.Graph.Nodes() {
		out = append(out, fmt.Sprintf("%s/%d: %s", n.Data.BranchID, n.Data.ThoughtNumber, n.Data.Thought))
	}
	sort.Strings(out)
	return out
}

func (c *clone) sessions() []string {
	c.t.Helper()
	list, err := c.store.ListSessions(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.Meta.ID)
	}
	sort.Strings(ids)
	return ids
}

func (c *clone) push(remote string, o gitstore.TransferOptions) *gitstore.PushResult {
	c.t.Helper()
	r, err := c.store.Push(context.Background(), remote, o)
	if err != nil {
		c.t.Fatalf("%s: push: %v", c.name, err)
	}
	return r
}

func (c *clone) pull(remote string, o gitstore.TransferOptions) *gitstore.PullResult {
	c.t.Helper()
	r, err := c.store.Pull(context.Background(), remote, o)
	if err != nil {
		c.t.Fatalf("%s: pull: %v", c.name, err)
	}
	return r
}

func bareRemote(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "remote.git")
	if _, err := gogit.PlainInit(dir, true); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPushPullDivergence walks the life of a shared ledger on a bare
// repository, with go-git's in-process server (no git programs needed):
// publish, fetch, fast-forward, a session extended in two places, and the
// divergence kept on both sides.
func TestPushPullDivergence(t *testing.T) {
	for _, builtin := range []bool{true, false} {
		t.Run(fmt.Sprintf("builtin=%v", builtin), func(t *testing.T) {
			if !builtin {
				if _, err := exec.LookPath("git-receive-pack"); err != nil {
					t.Skip("git-receive-pack is not installed; the builtin run covers paths")
				}
			}
			testPushPullDivergence(t, gitstore.TransferOptions{BuiltinFile: builtin})
		})
	}
}

func testPushPullDivergence(t *testing.T, o gitstore.TransferOptions) {
	remote := bareRemote(t)
	a, b := newClone(t, "alice"), newClone(t, "bob")
	for _, c := range []*clone{a, b} {
		if _, err := c.store.AddRemote("origin", remote); err != nil {
			t.Fatal(err)
		}
	}

	s1 := a.start("Shared design review")
	a.think(s1, "first")
	a.think(s1, "second")
	a.branch(s1, "alt", 1, "an alternative")
	pr := a.push("origin", o)
	if len(pr.Updated) != 3 || len(pr.Rejected) != 0 { // main, the session's main, its branch
		t.Fatalf("first push: %+v", pr)
	}
	if again := a.push("origin", o); len(again.Updated) != 0 || again.UpToDate != 3 {
		t.Fatalf("second push moved something: %+v", again)
	}

	got := b.pull("origin", o)
	if len(got.Created) != 2 || len(got.Diverged) != 0 {
		t.Fatalf("pull: %+v", got)
	}
	if want := a.thoughts(s1); !slices.Equal(b.thoughts(s1), want) {
		t.Fatalf("bob has %q, alice %q", b.thoughts(s1), want)
	}

	// Bob goes on; Alice pulls and is fast-forwarded.
	b.think(s1, "third, by bob")
	if pr := b.push("", o); len(pr.Updated) != 1 || len(pr.Rejected) != 0 {
		t.Fatalf("bob's push: %+v", pr)
	}
	if got := a.pull("origin", o); len(got.Updated) != 1 {
		t.Fatalf("alice's pull: %+v", got)
	}
	if !slices.Equal(a.thoughts(s1), b.thoughts(s1)) {
		t.Fatalf("after fast-forward: alice %q, bob %q", a.thoughts(s1), b.thoughts(s1))
	}
	// Alice's ledger had the session cached; a thought now goes after
	// Bob's, renumbered by the store's compare-and-swap.
	a.think(s1, "fourth, by alice")
	if !slices.Contains(a.thoughts(s1), "/4: fourth, by alice") {
		t.Fatalf("alice's thought after the pull: %q", a.thoughts(s1))
	}
	a.push("origin", o)

	// Both extend the session from thought 4: a divergence.
	b.pull("origin", o)
	a.think(s1, "fifth, alice's way")
	b.think(s1, "fifth, bob's way")
	a.push("origin", o)
	rej := b.push("origin", o)
	if len(rej.Updated) != 0 || len(rej.Rejected) != 1 || rej.Rejected[0].Reason != "ahead" {
		t.Fatalf("bob's push over alice's: %+v", rej)
	}
	bobBefore := b.thoughts(s1)
	if _, err := exec.LookPath("git"); err == nil {
		if out, err := exec.Command("git", "-C", remote, "fsck", "--strict").CombinedOutput(); err != nil {
			t.Fatalf("git fsck of the remote: %v\n%s", err, out)
		}
	}
	div := b.pull("origin", o)
	if len(div.Diverged) != 1 || div.Diverged[0].Session != s1 {
		t.Fatalf("pull after divergence: %+v", div)
	}
	if !slices.Equal(b.thoughts(s1), bobBefore) {
		t.Fatalf("pull changed bob's chain: %q, was %q", b.thoughts(s1), bobBefore)
	}
	chains, err := b.store.Diverged(s1)
	if err != nil {
		t.Fatal(err)
	}
	if len(chains) != 1 || !slices.Equal(chains[0].Thoughts, []string{"Thought 5: fifth, alice's way"}) || chains[0].Remote != "origin" {
		t.Fatalf("diverged chains: %+v", chains)
	}
	rej = b.push("origin", o)
	if len(rej.Rejected) != 1 || rej.Rejected[0].Reason != "diverged" {
		t.Fatalf("push after divergence: %+v", rej)
	}
	// A new session still goes, despite the diverged one.
	s2 := b.start("Bob's own")
	b.think(s2, "solo")
	pr = b.push("origin", o)
	if len(pr.Updated) != 1 || pr.Updated[0].Session != s2 || len(pr.Rejected) != 1 {
		t.Fatalf("push with one diverged session: %+v", pr)
	}
	// Forcing replaces the remote's chain; alice then keeps hers aside.
	pr = b.push("origin", gitstore.TransferOptions{BuiltinFile: o.BuiltinFile, Force: []string{s1}})
	if len(pr.Updated) != 1 || len(pr.Rejected) != 0 {
		t.Fatalf("forced push: %+v", pr)
	}
	div = a.pull("origin", o)
	if len(div.Diverged) != 1 || len(div.Created) != 1 {
		t.Fatalf("alice's pull after bob forced: %+v", div)
	}
	if got := a.sessions(); !slices.Equal(got, sorted(s1, s2)) {
		t.Fatalf("alice's sessions: %q", got)
	}
}

func sorted(s ...string) []string { sort.Strings(s); return s }

func TestRemotesConfig(t *testing.T) {
	c := newClone(t, "c")
	if _, err := c.store.AddRemote("bad name", "/x"); !errors.Is(err, gitstore.ErrInvalidRemoteName) {
		t.Fatalf("bad name: %v", err)
	}
	if _, err := c.store.AddRemote("origin", "ftp://example.com/x"); !errors.Is(err, gitstore.ErrInvalidRemoteURL) {
		t.Fatalf("ftp: %v", err)
	}
	if _, err := c.store.AddRemote("origin", "relative/path.git"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.store.AddRemote("origin", "/other"); !errors.Is(err, gitstore.ErrRemoteExists) {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := c.store.AddRemote("backup", "https://git.example.com/team/ledger.git"); err != nil {
		t.Fatal(err)
	}
	list, err := c.store.Remotes()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "backup" || list[1].Name != "origin" || !filepath.IsAbs(list[1].URL) {
		t.Fatalf("remotes: %+v", list)
	}
	if err := c.store.RemoveRemote("backup"); err != nil {
		t.Fatal(err)
	}
	if err := c.store.RemoveRemote("backup"); !errors.Is(err, gitstore.ErrNoRemote) {
		t.Fatal("removing twice succeeded")
	}
	if list, _ := c.store.Remotes(); len(list) != 1 {
		t.Fatalf("after remove: %+v", list)
	}
	if _, err := c.store.Push(context.Background(), "nope", gitstore.TransferOptions{}); !errors.Is(err, gitstore.ErrNoRemote) {
		t.Fatalf("push to unknown remote: %v", err)
	}
	// A path that is no repository says how to make one.
	_, err = c.store.Push(context.Background(), t.TempDir(), gitstore.TransferOptions{BuiltinFile: true})
	// The hint is part of what the user reads, so its text is checked.
	if !errors.Is(err, gitstore.ErrNoRepository) || !strings.Contains(err.Error(), "git init --bare") {
		t.Fatalf("push to an empty directory: %v", err)
	}
}

var builtinLong = flag.Bool("remote.builtin", true, "TestPushLongSession: use the in-process server")

// TestPushLongSession sends a long session: its growing folder tree and
// manifest travel as deltas, so the pack stays small, and the remote and a
// second clone read it back whole.
func TestPushLongSession(t *testing.T) {
	remote := bareRemote(t)
	a, b := newClone(t, "a"), newClone(t, "b")
	id := a.start("A long one")
	const n = 800
	for i := 1; i <= n; i++ {
		a.think(id, fmt.Sprintf("step %d of a long argument", i))
	}
	var progress strings.Builder
	o := gitstore.TransferOptions{BuiltinFile: *builtinLong, Progress: &progress}
	start := time.Now()
	pr, err := a.store.Push(context.Background(), remote, o)
	t.Logf("push took %s", time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	// 800 versions of a folder tree that ends near 25 KB (and as many of
	// the manifest), sent whole, would be ~20 MB.
	t.Logf("pushed %d objects, %d bytes", pr.Objects, pr.Bytes)
	if pr.Bytes > 2<<20 {
		t.Errorf("the pack for %d thoughts is %d bytes; deltas should keep it under 2 MiB", n, pr.Bytes)
	}
	start = time.Now()
	if _, err := b.store.Pull(context.Background(), remote, o); err != nil {
		t.Fatal(err)
	}
	t.Logf("pull took %s", time.Since(start))
	// Past a thousand objects both directions say how many.
	if !strings.Contains(progress.String(), fmt.Sprintf("Sending %d objects", pr.Objects)) ||
		!regexp.MustCompile(`(?m)^Received [0-9]{4,} objects \(`).MatchString(progress.String()) {
		t.Errorf("progress of a %d-object transfer:\n%s", pr.Objects, progress.String())
	}
	if got := b.thoughts(id); len(got) != n || !slices.Equal(got, a.thoughts(id)) {
		t.Fatalf("b has %d thoughts, want %d", len(got), n)
	}
	if _, err := exec.LookPath("git"); err == nil {
		if out, err := exec.Command("git", "-C", remote, "fsck", "--strict").CombinedOutput(); err != nil {
			t.Fatalf("git fsck of the remote: %v\n%s", err, out)
		}
	}
}
