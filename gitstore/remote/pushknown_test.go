package remote_test

import (
	"fmt"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/gitstore/remote/remotetest"
)

// TestPushSendsOnlyWhatTheRemoteLacks: after a first push of several
// sessions, a push that extends every one of them sends each session's
// new thought (a commit, its trees and files) and nothing of the history
// the remote has — which needs each session's own remote refs found,
// branches included.
func TestPushSendsOnlyWhatTheRemoteLacks(t *testing.T) {
	bare := remotetest.BareRemote(t)
	a := remotetest.New(t, "a")
	o := remote.TransferOptions{BuiltinFile: true}
	const sessions = 6
	var ids []string
	for i := range sessions {
		id := a.Start(fmt.Sprintf("session %d", i))
		for j := range 5 {
			a.Think(id, fmt.Sprintf("thought %d of session %d", j, i))
		}
		if i%2 == 0 {
			a.Branch(id, "alt", 2, fmt.Sprintf("a branch of session %d", i))
		}
		ids = append(ids, id)
	}
	first := a.Push(bare, o)
	for _, id := range ids {
		a.Think(id, "one more for "+id)
	}
	second := a.Push(bare, o)
	if len(second.Updated) != sessions {
		t.Fatalf("second push moved %d refs, want %d: %+v", len(second.Updated), sessions, second.Updated)
	}
	// A thought adds a commit and a handful of trees and files; the whole
	// history is dozens of objects a session.
	perSession := float64(second.Objects) / sessions
	if perSession > 12 || second.Objects >= first.Objects/2 {
		t.Fatalf("second push sent %d objects (%.1f a session) after a first of %d: history the remote has was sent again",
			second.Objects, perSession, first.Objects)
	}
	b := remotetest.New(t, "b")
	b.Pull(bare, o)
	for _, id := range ids {
		if got, want := len(b.Thoughts(id)), len(a.Thoughts(id)); got != want {
			t.Fatalf("session %s: the remote has %d thoughts, want %d", id, got, want)
		}
	}
}
