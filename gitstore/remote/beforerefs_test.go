package remote_test

import (
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/gitstore/remote/remotetest"
)

// TestBeforeRefsMove: a pull that moves refs calls BeforeRefsMove once,
// before the refs move; a pull with nothing new never calls it.
func TestBeforeRefsMove(t *testing.T) {
	bare := remotetest.BareRemote(t)
	a, b := remotetest.New(t, "a"), remotetest.New(t, "b")
	id := a.Start("Shared")
	a.Think(id, "one")
	a.Push(bare, remote.TransferOptions{})

	calls := 0
	o := remote.TransferOptions{BeforeRefsMove: func() {
		calls++
		if got := b.Sessions(); len(got) != 0 {
			t.Errorf("the refs had moved before BeforeRefsMove: %v", got)
		}
	}}
	b.Pull(bare, o)
	if calls != 1 || len(b.Sessions()) != 1 {
		t.Fatalf("a pull that brought a session: %d calls, sessions %v", calls, b.Sessions())
	}
	b.Pull(bare, o)
	if calls != 1 {
		t.Fatalf("an up-to-date pull called BeforeRefsMove (%d calls)", calls)
	}
}
