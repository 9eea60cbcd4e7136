package repo

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// publishFull fails every sync but the log's: a full disk whose log still
// has room in the zeros written ahead of its records, so appends go on
// and packs and refs cannot be written.
func publishFull(path string) error {
	if filepath.Base(path) == "log" && filepath.Base(filepath.Dir(path)) == "thoughtbox" {
		return nil
	}
	return syscall.ENOSPC
}

func allFull(string) error { return syscall.ENOSPC }

// TestFSFullDisk: a log that cannot be published because the disk is full
// is kept, and opening serves reads from it; a write is refused with the
// cause; once there is room the flush publishes it and plain git finds a
// sound repository.
func TestFSFullDisk(t *testing.T) {
	dir := t.TempDir()
	r, err := OpenFS(dir, FSOptions{FlushEvery: time.Hour, LockTimeout: 5 * time.Second, LockedRefRoots: roots})
	if err != nil {
		t.Fatal(err)
	}
	restore := durable.SetFault(publishFull)
	defer func() { restore() }()
	b1, c1 := commitBatch(sessions+"s1/main", object.ZeroHash, object.ZeroHash, "first")
	b2, c2 := commitBatch(sessions+"s2/main", object.ZeroHash, object.ZeroHash, "second")
	if err := r.Apply(t.Context(), b1); err != nil {
		t.Fatal(err)
	}
	if err := r.Apply(t.Context(), b2); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(t.Context()); !durable.DiskFull(err) {
		t.Fatalf("Flush on a full disk = %v, want a disk-full error", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close on a full disk = %v, want nil (the log keeps the batches)", err)
	}
	restore()
	restore = durable.SetFault(allFull)

	r2 := openFS(t, dir)
	for ref, want := range map[string]object.Hash{sessions + "s1/main": c1, sessions + "s2/main": c2} {
		if h, err := r2.ReadRef(t.Context(), ref); err != nil || h != want {
			t.Fatalf("ReadRef(%s) on a full disk = %s, %v; want %s", ref, h, err, want)
		}
	}
	typ, data, err := r2.ReadObject(t.Context(), b2.Objects[0].ID)
	if err != nil || typ != object.TypeBlob || string(data) != "second" {
		t.Fatalf("ReadObject on a full disk = %v %q %v", typ, data, err)
	}
	b3, _ := commitBatch(sessions+"s1/main", c1, c1, "third")
	err = r2.Apply(t.Context(), b3)
	if !durable.DiskFull(err) || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("Apply on a full disk = %v, want an error naming the full disk", err)
	}
	if h, _ := r2.ReadRef(t.Context(), sessions+"s1/main"); h != c1 {
		t.Fatalf("a refused write moved the ref to %s", h)
	}
	if got := git(t, dir, "for-each-ref", "refs/heads/"); got != "" {
		t.Fatalf("refs were published on a full disk:\n%s", got)
	}

	restore()
	if err := r2.Flush(t.Context()); err != nil {
		t.Fatalf("Flush once there is room: %v", err)
	}
	for ref, want := range map[string]object.Hash{sessions + "s1/main": c1, sessions + "s2/main": c2} {
		if got := git(t, dir, "rev-parse", ref); got != want.String() {
			t.Fatalf("git rev-parse %s = %s, want %s", ref, got, want)
		}
	}
	git(t, dir, "fsck", "--strict", "--no-dangling")
	if err := r2.Apply(t.Context(), b3); err != nil {
		t.Fatalf("Apply once there is room: %v", err)
	}
}

// TestFSFullDiskFlusherRetries: a log left by a full disk is published by
// the background flusher of the process that opened it, once there is
// room, without a new open or an explicit flush.
func TestFSFullDiskFlusherRetries(t *testing.T) {
	dir := t.TempDir()
	r, err := OpenFS(dir, FSOptions{FlushEvery: time.Hour, LockTimeout: 5 * time.Second, LockedRefRoots: roots})
	if err != nil {
		t.Fatal(err)
	}
	restore := durable.SetFault(publishFull)
	defer func() { restore() }()
	b, c := commitBatch(sessions+"s1/main", object.ZeroHash, object.ZeroHash, "kept")
	if err := r.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	restore()
	restore = durable.SetFault(allFull)
	r2, err := OpenFS(dir, FSOptions{FlushEvery: 10 * time.Millisecond, LockTimeout: 5 * time.Second, LockedRefRoots: roots})
	if err != nil {
		t.Fatalf("open on a full disk: %v", err)
	}
	defer r2.Close()
	ref := filepath.Join(dir, "refs", "heads", "sessions", "s1", "main")
	time.Sleep(50 * time.Millisecond) // several failed ticks
	if _, err := os.Stat(ref); err == nil {
		t.Fatal("the ref was published on a full disk")
	}
	restore()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(ref); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the flusher did not publish the log once there was room")
		}
	}
	if got := git(t, dir, "rev-parse", sessions+"s1/main"); got != c.String() {
		t.Fatalf("git rev-parse = %s, want %s", got, c)
	}
}
