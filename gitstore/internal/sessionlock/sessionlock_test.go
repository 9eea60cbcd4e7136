package sessionlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// TestSessionLockFilesBounded: the sessions' lock files do not pile up. Past
// maxKept the least recently used quarter are let go and their files
// deleted, a session in use all along keeps its lock open, and Close
// deletes the rest.
func TestSessionLockFilesBounded(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("lock files are kept on Windows (durable.Mutex.Remove)")
	}
	dir := filepath.Join(t.TempDir(), "locks")
	ls := New(dir, durable.DefaultTimeout)
	closed := false
	defer func() {
		if !closed {
			ls.Close()
		}
	}()
	ctx := context.Background()
	lock := func(id string) {
		t.Helper()
		unlock, err := ls.Lock(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		unlock()
	}
	files := func() int {
		t.Helper()
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	const hot = "hot-session"
	n := maxKept + maxKept/2
	for i := range n {
		lock(hot)
		lock(fmt.Sprintf("session-%04d", i))
		if f := files(); f > 2*maxKept {
			t.Fatalf("after %d sessions, %d lock files: more than %d sessions' worth", i+1, f, maxKept)
		}
	}
	if f := files(); f >= 2*(n+1) {
		t.Fatalf("%d lock files for %d sessions: none deleted", f, n+1)
	}
	ls.mu.Lock()
	_, kept := ls.m[hot]
	_, first := ls.m["session-0000"]
	ls.mu.Unlock()
	if !kept {
		t.Error("the session locked between every other one was let go")
	}
	if first {
		t.Error("the least recently used session was kept")
	}
	closed = true
	ls.Close()
	if f := files(); f != 0 {
		t.Errorf("%d lock files left after Close", f)
	}
}

// TestKeptSessionLocksFollowTheFileLimit: where the process may open few files
// the Set keeps fewer session locks open.
func TestKeptSessionLocksFollowTheFileLimit(t *testing.T) {
	for _, c := range []struct {
		limit uint64
		want  int
	}{{0, 256}, {256, 64}, {1024, 64}, {2048, 128}, {20000, 256}, {1 << 62, 256}} {
		if got := keptLocks(c.limit); got != c.want {
			t.Errorf("keptLocks(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
}

// TestCloseLeavesALockBeingTaken: closing the Set leaves a lock a
// goroutine has looked up and is about to take (users > 0): removed under
// it, its files would be opened again and never closed. The last user
// lets it go instead.
func TestCloseLeavesALockBeingTaken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	ls := New(dir, durable.DefaultTimeout)
	defer ls.Close()
	ctx := context.Background()
	for _, id := range []string{"idle-session", "taken-session"} {
		unlock, err := ls.Lock(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		unlock()
	}
	ls.mu.Lock()
	ls.m["taken-session"].users++ // as Lock does before it takes it
	ls.mu.Unlock()
	ls.Close()
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
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
			t.Errorf("lock files left after Close and the last user: %d (%v)", len(ents), err)
		}
	}
}

// TestQuietUntilAnotherTakesTurn: a Set that holds a session's mutex
// reports it quiet while nobody else took it since this Set last let it
// go; once another Set (another process) took a turn it is not, and a
// session not held is never quiet.
func TestQuietUntilAnotherTakesTurn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	a, b := New(dir, durable.DefaultTimeout), New(dir, durable.DefaultTimeout)
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	const id = "one-session"
	if a.Quiet(id) {
		t.Fatal("quiet before the session was ever locked")
	}
	turn := func(ls *Set) func() {
		t.Helper()
		unlock, err := ls.Lock(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return unlock
	}
	turn(a)()
	unlock := turn(a)
	if !a.Quiet(id) {
		t.Error("not quiet on a second turn nobody came between")
	}
	unlock()
	if a.Quiet(id) {
		t.Error("quiet while not held")
	}
	turn(b)()
	unlock = turn(a)
	if a.Quiet(id) {
		t.Error("quiet although another Set took a turn since")
	}
	unlock()
}

// TestLockWaitsThenNamesTheSession: a session another Set holds is waited
// for until the timeout, and the error then names the session.
func TestLockWaitsThenNamesTheSession(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	a, b := New(dir, durable.DefaultTimeout), New(dir, 50*time.Millisecond)
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	unlock, err := a.Lock(ctx, "held-session")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Lock(ctx, "held-session")
	unlock()
	if err == nil {
		t.Fatal("a session another Set holds was taken at once")
	}
	if want := "session held-session: "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("error %v: want a timeout, not a cancellation", err)
	}
	again, err := b.Lock(ctx, "held-session")
	if err != nil {
		t.Fatalf("after the holder let go: %v", err)
	}
	again()
}
