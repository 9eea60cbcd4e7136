package repo

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// TestFSSharedRecoversStaleLocks: shared with git, a flusher killed while
// it held a ref's lock left batches in the log; the next open removes the
// old lock and publishes them. An open over an empty log leaves the ref
// folders alone (it does not walk them), and a later flush still moves a
// ref whose old lock is in the way.
func TestFSSharedRecoversStaleLocks(t *testing.T) {
	open := func(dir string) *FS {
		t.Helper()
		r, err := OpenFS(dir, FSOptions{FlushEvery: time.Hour, LockTimeout: 5 * time.Second, LockedRefRoots: roots, SharedWithGit: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	old := time.Now().Add(-time.Minute)
	leaveLock := func(dir, ref string) string {
		t.Helper()
		lock := filepath.Join(dir, filepath.FromSlash(ref)+".lock")
		os.MkdirAll(filepath.Dir(lock), 0o755)
		if err := os.WriteFile(lock, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(lock, old, old); err != nil {
			t.Fatal(err)
		}
		return lock
	}

	dir := t.TempDir()
	r := open(dir)
	b, c := commitBatch(sessions+"s1/main", object.ZeroHash, object.ZeroHash, "kept")
	if err := r.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	crashed := t.TempDir()
	if out, err := exec.Command("cp", "-a", dir+"/.", crashed).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	lock := leaveLock(crashed, sessions+"s1/main")
	other := leaveLock(crashed, sessions+"s9/main")
	r2 := open(crashed)
	if h, err := r2.ReadRef(t.Context(), sessions+"s1/main"); err != nil || h != c {
		t.Fatalf("ReadRef after recovery = %s, %v; want %s", h, err, c)
	}
	if got := git(t, crashed, "rev-parse", sessions+"s1/main"); got != c.String() {
		t.Fatalf("after recovery git rev-parse = %s, want %s", got, c)
	}
	for _, p := range []string{lock, other} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s survived an open over a log with batches: %v", p, err)
		}
	}
	if err := r2.Close(); err != nil {
		t.Fatal(err)
	}

	// The log is empty now: opening does not walk the ref folders, and a
	// flush moving a ref past an old lock removes it then.
	lock = leaveLock(crashed, sessions+"s1/main")
	r3 := open(crashed)
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("an open over an empty log walked the ref folders: %v", err)
	}
	b, c2 := commitBatch(sessions+"s1/main", c, c, "next")
	if err := r3.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	if err := r3.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := git(t, crashed, "rev-parse", sessions+"s1/main"); got != c2.String() {
		t.Fatalf("after the flush git rev-parse = %s, want %s", got, c2)
	}
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old lock survived a flush of its ref: %v", err)
	}
}
