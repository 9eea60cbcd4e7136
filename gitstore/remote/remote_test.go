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
	"github.com/thoughtbox/thoughtbox/gitstore/remote/remotetest"
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
	bare := remotetest.BareRemote(t)
	a, b := remotetest.New(t, "alice"), remotetest.New(t, "bob")
	for _, c := range []*remotetest.Clone{a, b} {
		if _, err := remote.AddRemote(c.Store, "origin", bare); err != nil {
			t.Fatal(err)
		}
	}

	s1 := a.Start("Shared design review")
	a.Think(s1, "first")
	a.Think(s1, "second")
	a.Branch(s1, "alt", 1, "an alternative")
	pr := a.Push("origin", o)
	if len(pr.Updated) != 3 || len(pr.Rejected) != 0 { // main, the session's main, its branch
		t.Fatalf("first push: %+v", pr)
	}
	if again := a.Push("origin", o); len(again.Updated) != 0 || again.UpToDate != 3 {
		t.Fatalf("second push moved something: %+v", again)
	}

	got := b.Pull("origin", o)
	if len(got.Created) != 2 || len(got.Diverged) != 0 {
		t.Fatalf("pull: %+v", got)
	}
	if want := a.Thoughts(s1); !slices.Equal(b.Thoughts(s1), want) {
		t.Fatalf("bob has %q, alice %q", b.Thoughts(s1), want)
	}

	// Bob goes on; Alice pulls and is fast-forwarded.
	b.Think(s1, "third, by bob")
	if pr := b.Push("", o); len(pr.Updated) != 1 || len(pr.Rejected) != 0 {
		t.Fatalf("bob's push: %+v", pr)
	}
	if got := a.Pull("origin", o); len(got.Updated) != 1 {
		t.Fatalf("alice's pull: %+v", got)
	}
	if !slices.Equal(a.Thoughts(s1), b.Thoughts(s1)) {
		t.Fatalf("after fast-forward: alice %q, bob %q", a.Thoughts(s1), b.Thoughts(s1))
	}
	// Alice's ledger had the session cached; a thought now goes after
	// Bob's, renumbered by the store's compare-and-swap.
	a.Think(s1, "fourth, by alice")
	if !slices.Contains(a.Thoughts(s1), "/4: fourth, by alice") {
		t.Fatalf("alice's thought after the pull: %q", a.Thoughts(s1))
	}
	a.Push("origin", o)

	// Both extend the session from thought 4: a divergence.
	b.Pull("origin", o)
	a.Think(s1, "fifth, alice's way")
	b.Think(s1, "fifth, bob's way")
	a.Push("origin", o)
	rej := b.Push("origin", o)
	if len(rej.Updated) != 0 || len(rej.Rejected) != 1 || rej.Rejected[0].Reason != "ahead" {
		t.Fatalf("bob's push over alice's: %+v", rej)
	}
	bobBefore := b.Thoughts(s1)
	if _, err := exec.LookPath("git"); err == nil {
		if out, err := exec.Command("git", "-C", bare, "fsck", "--strict").CombinedOutput(); err != nil {
			t.Fatalf("git fsck of the remote: %v\n%s", err, out)
		}
	}
	div := b.Pull("origin", o)
	if len(div.Diverged) != 1 || div.Diverged[0].Session != s1 {
		t.Fatalf("pull after divergence: %+v", div)
	}
	if !slices.Equal(b.Thoughts(s1), bobBefore) {
		t.Fatalf("pull changed bob's chain: %q, was %q", b.Thoughts(s1), bobBefore)
	}
	chains, err := b.Store.Diverged(s1)
	if err != nil {
		t.Fatal(err)
	}
	if len(chains) != 1 || !slices.Equal(chains[0].Thoughts, []string{"Thought 5: fifth, alice's way"}) || chains[0].Remote != "origin" {
		t.Fatalf("diverged chains: %+v", chains)
	}
	rej = b.Push("origin", o)
	if len(rej.Rejected) != 1 || rej.Rejected[0].Reason != "diverged" {
		t.Fatalf("push after divergence: %+v", rej)
	}
	// A new session still goes, despite the diverged one.
	s2 := b.Start("Bob's own")
	b.Think(s2, "solo")
	pr = b.Push("origin", o)
	if len(pr.Updated) != 1 || pr.Updated[0].Session != s2 || len(pr.Rejected) != 1 {
		t.Fatalf("push with one diverged session: %+v", pr)
	}
	// Forcing replaces the remote's chain; alice then keeps hers aside.
	pr = b.Push("origin", remote.TransferOptions{BuiltinFile: o.BuiltinFile, Force: []string{s1}})
	if len(pr.Updated) != 1 || len(pr.Rejected) != 0 {
		t.Fatalf("forced push: %+v", pr)
	}
	div = a.Pull("origin", o)
	if len(div.Diverged) != 1 || len(div.Created) != 1 {
		t.Fatalf("alice's pull after bob forced: %+v", div)
	}
	if got := a.Sessions(); !slices.Equal(got, sorted(s1, s2)) {
		t.Fatalf("alice's sessions: %q", got)
	}
}

func sorted(s ...string) []string { sort.Strings(s); return s }

func TestRemotesConfig(t *testing.T) {
	c := remotetest.New(t, "c")
	if _, err := remote.AddRemote(c.Store, "bad name", "/x"); !errors.Is(err, remote.ErrInvalidRemoteName) {
		t.Fatalf("bad name: %v", err)
	}
	if _, err := remote.AddRemote(c.Store, "origin", "ftp://example.com/x"); !errors.Is(err, remote.ErrInvalidRemoteURL) {
		t.Fatalf("ftp: %v", err)
	}
	if _, err := remote.AddRemote(c.Store, "origin", "relative/path.git"); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.AddRemote(c.Store, "origin", "/other"); !errors.Is(err, remote.ErrRemoteExists) {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := remote.AddRemote(c.Store, "backup", "https://git.example.com/team/ledger.git"); err != nil {
		t.Fatal(err)
	}
	list, err := remote.Remotes(c.Store)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "backup" || list[1].Name != "origin" || !filepath.IsAbs(list[1].URL) {
		t.Fatalf("remotes: %+v", list)
	}
	if err := remote.RemoveRemote(c.Store, "backup"); err != nil {
		t.Fatal(err)
	}
	if err := remote.RemoveRemote(c.Store, "backup"); !errors.Is(err, remote.ErrNoRemote) {
		t.Fatal("removing twice succeeded")
	}
	if list, _ := remote.Remotes(c.Store); len(list) != 1 {
		t.Fatalf("after remove: %+v", list)
	}
	if _, err := remote.Push(context.Background(), c.Store, "nope", remote.TransferOptions{}); !errors.Is(err, remote.ErrNoRemote) {
		t.Fatalf("push to unknown remote: %v", err)
	}
	// A path that is no repository says how to make one.
	_, err = remote.Push(context.Background(), c.Store, t.TempDir(), remote.TransferOptions{BuiltinFile: true})
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
	bare := remotetest.BareRemote(t)
	a, b := remotetest.New(t, "a"), remotetest.New(t, "b")
	id := a.Start("A long one")
	const n = 800
	for i := 1; i <= n; i++ {
		a.Think(id, fmt.Sprintf("step %d of a long argument", i))
	}
	var progress strings.Builder
	o := remote.TransferOptions{BuiltinFile: *builtinLong, Progress: &progress}
	start := time.Now()
	pr, err := remote.Push(context.Background(), a.Store, bare, o)
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
	if _, err := remote.Pull(context.Background(), b.Store, bare, o); err != nil {
		t.Fatal(err)
	}
	t.Logf("pull took %s", time.Since(start))
	// Past a thousand objects both directions say how many.
	if !strings.Contains(progress.String(), fmt.Sprintf("Sending %d objects", pr.Objects)) ||
		!regexp.MustCompile(`(?m)^Received [0-9]{4,} objects \(`).MatchString(progress.String()) {
		t.Errorf("progress of a %d-object transfer:\n%s", pr.Objects, progress.String())
	}
	if got := b.Thoughts(id); len(got) != n || !slices.Equal(got, a.Thoughts(id)) {
		t.Fatalf("b has %d thoughts, want %d", len(got), n)
	}
	if _, err := exec.LookPath("git"); err == nil {
		if out, err := exec.Command("git", "-C", bare, "fsck", "--strict").CombinedOutput(); err != nil {
			t.Fatalf("git fsck of the remote: %v\n%s", err, out)
		}
	}
}
