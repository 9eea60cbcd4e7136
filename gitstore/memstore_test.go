package gitstore_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/gitstore/remote/remotetest"
	"github.com/thoughtbox/thoughtbox/ledger"
)

func newMemClone(t *testing.T, name string) *remotetest.Clone {
	t.Helper()
	s, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &remotetest.Clone{T: t, Name: name, Store: s, Ledger: ledger.New(s, ledger.Options{})}
}

// TestMemoryStoreLongSession: the memory store keeps objects as edits of
// their bases (whole every few dozen versions); a session far longer than
// that reads back whole, verifies, pushes, and a memory store that pulls
// it (go-git resolving the pack's deltas against objects held as edits)
// can extend it, push again, and a disk clone sees the same.
func TestMemoryStoreLongSession(t *testing.T) {
	ctx := context.Background()
	url := remotetest.BareRemote(t)
	a, b, c := newMemClone(t, "a"), newMemClone(t, "b"), remotetest.New(t, "c")
	id := a.Start("Long, in memory")
	const n = 150
	for i := 1; i <= n; i++ {
		a.Think(id, fmt.Sprintf("step %d", i))
		if i == 70 {
			a.Branch(id, "alt", 40, "another way from 40")
		}
	}
	res, err := a.Store.Verify(ctx, id, ledger.VerifyOptions{})
	if err != nil || !res.Valid {
		t.Fatalf("verify: %v %+v", err, res)
	}
	if got := a.Thoughts(id); len(got) != n+1 {
		t.Fatalf("a has %d thoughts, want %d", len(got), n+1)
	}
	a.Push(url, remote.TransferOptions{})

	// b already holds a session of its own, long enough to have objects
	// kept as edits when the pack arrives.
	own := b.Start("b's own")
	for i := 1; i <= 40; i++ {
		b.Think(own, fmt.Sprintf("b step %d", i))
	}
	b.Pull(url, remote.TransferOptions{})
	if !slices.Equal(b.Thoughts(id), a.Thoughts(id)) {
		t.Fatal("b's copy differs from a's")
	}
	for i := n + 1; i <= n+40; i++ {
		b.Think(id, fmt.Sprintf("step %d", i))
	}
	b.Think(own, "b step 41")
	b.Push(url, remote.TransferOptions{})

	c.Pull(url, remote.TransferOptions{})
	if got, want := c.Thoughts(id), b.Thoughts(id); !slices.Equal(got, want) || len(got) != n+41 {
		t.Fatalf("c has %d thoughts of the long session, b %d", len(got), len(want))
	}
	if got := c.Thoughts(own); len(got) != 41 {
		t.Fatalf("c has %d thoughts of b's session, want 41", len(got))
	}
	if _, err := exec.LookPath("git"); err == nil {
		if out, err := exec.Command("git", "-C", url, "fsck", "--strict").CombinedOutput(); err != nil {
			t.Fatalf("git fsck of the remote: %v\n%s", err, out)
		}
	}
}
