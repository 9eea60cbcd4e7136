package gitstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestSessionLockFilesBounded: the sessions' lock files do not pile up.
// Past maxKeptSessionLocks the least recently used quarter are let go and
// their files deleted, a session in use all along keeps its lock open,
// and Close deletes the rest.
func TestSessionLockFilesBounded(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("lock files are kept on Windows (durable.Mutex.Remove)")
	}
	s, err := Open(filepath.Join(t.TempDir(), "p.git"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			s.Close()
		}
	}()
	ctx := context.Background()
	lock := func(id string) {
		t.Helper()
		unlock, err := s.LockSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		unlock()
	}
	files := func() int {
		t.Helper()
		ents, err := os.ReadDir(s.locksDir)
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	const hot = "hot-session"
	n := maxKeptSessionLocks + maxKeptSessionLocks/2
	for i := range n {
		lock(hot)
		lock(fmt.Sprintf("session-%04d", i))
		if f := files(); f > 2*maxKeptSessionLocks {
			t.Fatalf("after %d sessions, %d lock files: more than %d sessions' worth", i+1, f, maxKeptSessionLocks)
		}
	}
	if f := files(); f >= 2*(n+1) {
		t.Fatalf("%d lock files for %d sessions: none deleted", f, n+1)
	}
	s.sessionLocks.mu.Lock()
	_, kept := s.sessionLocks.m[hot]
	_, first := s.sessionLocks.m["session-0000"]
	s.sessionLocks.mu.Unlock()
	if !kept {
		t.Error("the session locked between every other one was let go")
	}
	if first {
		t.Error("the least recently used session was kept")
	}
	closed = true
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if f := files(); f != 0 {
		t.Errorf("%d lock files left after Close", f)
	}
}

// TestKeptSessionLocksFollowTheFileLimit: where the process may open few
// files the store keeps fewer session locks open.
func TestKeptSessionLocksFollowTheFileLimit(t *testing.T) {
	for _, c := range []struct {
		limit uint64
		want  int
	}{{0, 256}, {256, 64}, {1024, 64}, {2048, 128}, {20000, 256}, {1 << 62, 256}} {
		if got := keptSessionLocks(c.limit); got != c.want {
			t.Errorf("keptSessionLocks(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
}

// TestCloseLeavesALockBeingTaken: closing the store's session locks
// leaves one a goroutine has looked up and is about to take (users > 0):
// removed under it, its files would be opened again and never closed.
// The last user lets it go instead.
func TestCloseLeavesALockBeingTaken(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "p.git"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, id := range []string{"idle-session", "taken-session"} {
		unlock, err := s.LockSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		unlock()
	}
	ls := &s.sessionLocks
	ls.mu.Lock()
	ls.m["taken-session"].users++ // as lockSessionFiles does before it takes it
	ls.mu.Unlock()
	s.closeSessionLocks()
	ls.mu.Lock()
	_, idle := ls.m["idle-session"]
	taken := ls.m["taken-session"]
	ls.mu.Unlock()
	if idle {
		t.Error("an idle session's lock was kept")
	}
	if taken == nil {
		t.Fatal("the lock a goroutine was about to take was let go under it")
	}
	ls.mu.Lock()
	ls.done("taken-session", taken) // its last user lets it go
	_, kept := ls.m["taken-session"]
	ls.mu.Unlock()
	if kept {
		t.Error("the last user of a lock left after Close did not let it go")
	}
	if runtime.GOOS != "windows" {
		if ents, err := os.ReadDir(s.locksDir); err != nil || len(ents) != 0 {
			t.Errorf("lock files left after Close and the last user: %d (%v)", len(ents), err)
		}
	}
}
