package remote_test

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

	"github.com/thoughtbox/thoughtbox/gitstore/remote"
)

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
			testPushPullDivergence(t, remote.TransferOptions{BuiltinFile: builtin})
		})
	}
}

func testPushPullDivergence(t *testing.T, o remote.TransferOptions) {
	bare := bareRemote(t)
	a, b := newClone(t, "alice"), newClone(t, "bob")
	for _, c := range []*clone{a, b} {
		if _, err := remote.AddRemote(c.store, "origin", bare); err != nil {
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
		if out, err := exec.Command("git", "-C", bare, "fsck", "--strict").CombinedOutput(); err != nil {
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
	pr = b.push("origin", remote.TransferOptions{BuiltinFile: o.BuiltinFile, Force: []string{s1}})
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
	if _, err := remote.AddRemote(c.store, "bad name", "/x"); !errors.Is(err, remote.ErrInvalidRemoteName) {
		t.Fatalf("bad name: %v", err)
	}
	if _, err := remote.AddRemote(c.store, "origin", "ftp://example.com/x"); !errors.Is(err, remote.ErrInvalidRemoteURL) {
		t.Fatalf("ftp: %v", err)
	}
	if _, err := remote.AddRemote(c.store, "origin", "relative/path.git"); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.AddRemote(c.store, "origin", "/other"); !errors.Is(err, remote.ErrRemoteExists) {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := remote.AddRemote(c.store, "backup", "https://git.example.com/team/ledger.git"); err != nil {
		t.Fatal(err)
	}
	list, err := remote.Remotes(c.store)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "backup" || list[1].Name != "origin" || !filepath.IsAbs(list[1].URL) {
		t.Fatalf("remotes: %+v", list)
	}
	if err := remote.RemoveRemote(c.store, "backup"); err != nil {
		t.Fatal(err)
	}
	if err := remote.RemoveRemote(c.store, "backup"); !errors.Is(err, remote.ErrNoRemote) {
		t.Fatal("removing twice succeeded")
	}
	if list, _ := remote.Remotes(c.store); len(list) != 1 {
		t.Fatalf("after remove: %+v", list)
	}
	if _, err := remote.Push(context.Background(), c.store, "nope", remote.TransferOptions{}); !errors.Is(err, remote.ErrNoRemote) {
		t.Fatalf("push to unknown remote: %v", err)
	}
	// A path that is no repository says how to make one.
	_, err = remote.Push(context.Background(), c.store, t.TempDir(), remote.TransferOptions{BuiltinFile: true})
	// The hint is part of what the user reads, so its text is checked.
	if !errors.Is(err, remote.ErrNoRepository) || !strings.Contains(err.Error(), "git init --bare") {
		t.Fatalf("push to an empty directory: %v", err)
	}
}

var builtinLong = flag.Bool("remote.builtin", true, "TestPushLongSession: use the in-process server")

// TestPushLongSession sends a long session: its growing folder tree and
// manifest travel as deltas, so the pack stays small, and the remote and a
// second clone read it back whole.
func TestPushLongSession(t *testing.T) {
	bare := bareRemote(t)
	a, b := newClone(t, "a"), newClone(t, "b")
	id := a.start("A long one")
	const n = 800
	for i := 1; i <= n; i++ {
		a.think(id, fmt.Sprintf("step %d of a long argument", i))
	}
	var progress strings.Builder
	o := remote.TransferOptions{BuiltinFile: *builtinLong, Progress: &progress}
	start := time.Now()
	pr, err := remote.Push(context.Background(), a.store, bare, o)
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
	if _, err := remote.Pull(context.Background(), b.store, bare, o); err != nil {
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
		if out, err := exec.Command("git", "-C", bare, "fsck", "--strict").CombinedOutput(); err != nil {
			t.Fatalf("git fsck of the remote: %v\n%s", err, out)
		}
	}
}
