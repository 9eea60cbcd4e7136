package repo

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// gitRef is what plain Git reads for ref, "" when it has none.
func gitRef(t *testing.T, dir, ref string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	out, err := exec.Command("git", "--git-dir", dir, "rev-parse", "--verify", "--quiet", ref).CombinedOutput()
	if err != nil {
		// --quiet: a missing ref exits 1 saying nothing; anything said is
		// another failure, which must not pass for a missing ref.
		if len(out) > 0 {
			t.Fatalf("git rev-parse %s: %v\n%s", ref, err, out)
		}
		return ""
	}
	return strings.TrimSpace(string(out))
}

// waitForGit polls until plain Git reads want for ref. The deadline is
// only a bound on a hang, not a speed requirement.
func waitForGit(t *testing.T, dir, ref string, want object.Hash) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for gitRef(t, dir, ref) != want.String() {
		if time.Now().After(deadline) {
			t.Fatalf("plain git never saw %s at %s (reads %q)", ref, want, gitRef(t, dir, ref))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func stampOf(t *testing.T, r *FS, prefix string) ([20]byte, time.Time) {
	t.Helper()
	s, at, err := r.RefsStamp(t.Context(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return s, at
}

// TestFSRefsStamp: the stamp moves with every change to the refs under
// its prefix — logged, loose or packed — and with nothing else.
func TestFSRefsStamp(t *testing.T) {
	dir := t.TempDir()
	r := openFS(t, dir)
	ctx := t.Context()
	s0, at := stampOf(t, r, sessions)
	if !at.IsZero() {
		t.Fatalf("packedAt = %v with no packed-refs", at)
	}
	if s, _ := stampOf(t, r, sessions); s != s0 {
		t.Fatal("the stamp changed while nothing did")
	}

	// Logged through Apply, not yet on disk.
	ref := sessions + "s1/main"
	b1, c1 := commitBatch(ref, object.ZeroHash, object.ZeroHash, "one")
	if err := r.Apply(ctx, b1); err != nil {
		t.Fatal(err)
	}
	s1, _ := stampOf(t, r, sessions)
	if s1 == s0 {
		t.Fatal("a logged ref under the prefix left the stamp as it was")
	}
	// A ref outside the prefix, logged or loose, does not count.
	bt, ct := commitBatch("refs/tags/elsewhere", object.ZeroHash, object.ZeroHash, "tag")
	if err := r.Apply(ctx, bt); err != nil {
		t.Fatal(err)
	}
	if s, _ := stampOf(t, r, sessions); s != s1 {
		t.Fatal("a logged ref outside the prefix changed the stamp")
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	s2, _ := stampOf(t, r, sessions)
	if s2 == s1 {
		t.Fatal("the stamp did not see the flush turn a logged ref into a loose one")
	}
	git(t, dir, "update-ref", "refs/tags/moved", ct.String())
	if s, _ := stampOf(t, r, sessions); s != s2 {
		t.Fatal("a loose ref outside the prefix changed the stamp")
	}

	// A loose ref moved by plain Git.
	b2, c2 := commitBatch(sessions+"s2/main", object.ZeroHash, object.ZeroHash, "two")
	if err := r.Apply(ctx, b2); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	s3, _ := stampOf(t, r, sessions)
	if s, _ := stampOf(t, r, sessions+"s1/"); s == s3 {
		t.Fatal("a narrower prefix gave the same stamp as a wider one with more refs")
	}
	git(t, dir, "update-ref", ref, c2.String(), c1.String())
	s4, _ := stampOf(t, r, sessions)
	if s4 == s3 {
		t.Fatal("a loose ref moved by git left the stamp as it was")
	}
	git(t, dir, "update-ref", ref, c1.String(), c2.String())
	if s, _ := stampOf(t, r, sessions); s != s3 {
		t.Fatal("moving a ref back did not give back the stamp: it hashes more than the refs")
	}

	// Packed: the loose files go and packed-refs is rewritten.
	git(t, dir, "pack-refs", "--all")
	s5, at5 := stampOf(t, r, sessions)
	if s5 == s3 {
		t.Fatal("git pack-refs --all left the stamp as it was")
	}
	fi, err := os.Stat(filepath.Join(dir, "packed-refs"))
	if err != nil {
		t.Fatal(err)
	}
	if !at5.Equal(fi.ModTime()) {
		t.Fatalf("packedAt = %v, packed-refs' mtime is %v", at5, fi.ModTime())
	}
	if s, _ := stampOf(t, r, sessions); s != s5 {
		t.Fatal("the stamp changed while nothing did (packed)")
	}
	// A packed ref moved: packed-refs is replaced by another file.
	git(t, dir, "update-ref", ref, c2.String(), c1.String())
	git(t, dir, "pack-refs", "--all")
	if s, _ := stampOf(t, r, sessions); s == s5 {
		t.Fatal("a rewritten packed-refs left the stamp as it was")
	}
}

// syncBuffer is a log sink the flusher goroutine and the test share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestFSFlusherPublishes: the background flusher moves logged batches
// into packs and refs plain Git reads, without any Flush, retries a flush
// that failed (the log keeps the batch meanwhile), and stops on Close.
func TestFSFlusherPublishes(t *testing.T) {
	dir := t.TempDir()
	var logs syncBuffer
	r, err := OpenFS(dir, FSOptions{FlushEvery: 5 * time.Millisecond, LockTimeout: 5 * time.Second,
		LockedRefRoots: roots, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := t.Context()
	ref := sessions + "s/main"
	b1, c1 := commitBatch(ref, object.ZeroHash, object.ZeroHash, "one")
	if err := r.Apply(ctx, b1); err != nil {
		t.Fatal(err)
	}
	waitForGit(t, dir, ref, c1)
	if got := git(t, dir, "show", c1.String()+":file.txt"); got != "one" {
		t.Fatalf("git show = %q", got)
	}

	// A flush that fails is logged and retried; the batch stays readable.
	// A file where the flusher wants to write the ref's folder makes the
	// ref write fail whoever runs the test (root ignores permissions).
	blocker := filepath.Join(dir, "refs", "heads", "sessions", "t")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b2, c2 := commitBatch(sessions+"t/main", object.ZeroHash, object.ZeroHash, "two")
	if err := r.Apply(ctx, b2); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(logs.String(), "flush failed") {
		if time.Now().After(deadline) {
			t.Fatalf("the failed flush was not logged: %q", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if h, err := r.ReadRef(ctx, sessions+"t/main"); err != nil || h != c2 {
		t.Fatalf("after a failed flush ReadRef = %s, %v; want %s from the log", h, err, c2)
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	waitForGit(t, dir, sessions+"t/main", c2)

	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Apply(ctx, &wal.Batch{}); !errors.Is(err, wal.ErrClosed) {
		t.Fatalf("Apply after Close: %v, want wal.ErrClosed", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	git(t, dir, "fsck", "--strict", "--full")
}

// TestFSBigLogFlushesAtOnce: a log past bigLog bytes wakes the flusher
// at once, though its interval is an hour away.
func TestFSBigLogFlushesAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("logs more than 8 MiB")
	}
	dir := t.TempDir()
	r := openFS(t, dir)
	big := make([]byte, bigLog+1)
	rand.Read(big)
	id := object.HashObject(object.TypeBlob, big)
	b := &wal.Batch{Objects: []wal.Object{{ID: id, Type: object.TypeBlob, Data: big}},
		Updates: []wal.RefUpdate{{Name: "refs/tags/big", New: id}}}
	if err := r.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	waitForGit(t, dir, "refs/tags/big", id)
	if got := git(t, dir, "cat-file", "-s", id.String()); got != "8388609" {
		t.Fatalf("git cat-file -s = %s", got)
	}
}

// TestFSLockHeldByAnotherOpener: a second opener of the same repository
// (as another process) holding the log lock makes a writer fail naming
// it after LockTimeout, and a cancelled waiter give up; readers do not
// wait; opening and closing still work.
func TestFSLockHeldByAnotherOpener(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	opt := FSOptions{FlushEvery: time.Hour, LockTimeout: 50 * time.Millisecond, LockedRefRoots: roots}
	r, err := OpenFS(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ref := sessions + "s/main"
	b1, c1 := commitBatch(ref, object.ZeroHash, object.ZeroHash, "one")
	if err := r.Apply(ctx, b1); err != nil {
		t.Fatal(err)
	}
	holder := openFS(t, dir)
	if err := holder.lock(ctx); err != nil {
		t.Fatal(err)
	}
	held := true
	defer func() {
		if held {
			holder.unlock()
		}
	}()

	b2, _ := commitBatch(ref, c1, c1, "two")
	if err := r.Apply(ctx, b2); !errors.Is(err, durable.ErrHeld) {
		t.Fatalf("Apply while another opener holds the log: %v, want ErrHeld", err)
	}
	var he *durable.HeldError
	if err := r.Flush(ctx); !errors.As(err, &he) {
		t.Fatalf("Flush while another opener holds the log: %v, want a HeldError", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	patient, err := OpenFS(dir, FSOptions{FlushEvery: time.Hour, LockTimeout: time.Hour, LockedRefRoots: roots})
	if err != nil {
		t.Fatalf("open while another opener holds the log: %v", err)
	}
	defer patient.Close()
	if err := patient.lock(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("lock with a cancelled context: %v", err)
	}
	// Readers read around the holder and see what was logged.
	if h, err := patient.ReadRef(ctx, ref); err != nil || h != c1 {
		t.Fatalf("ReadRef while the log is held = %s, %v; want %s", h, err, c1)
	}
	if _, _, err := patient.RefsStamp(ctx, sessions); err != nil {
		t.Fatalf("RefsStamp while the log is held: %v", err)
	}
	holder.unlock()
	held = false

	if err := r.Apply(ctx, b2); err != nil {
		t.Fatalf("Apply once the holder let go: %v", err)
	}
	// Closing publishes; a flush lock held elsewhere does not make Close fail.
	fl, err := os.OpenFile(filepath.Join(dir, "thoughtbox", "flush.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	if ok, err := durable.TryLock(fl, nil); !ok || err != nil {
		t.Fatalf("flush lock: %v %v", ok, err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close while the flush lock is held: %v", err)
	}
	if got := gitRef(t, dir, ref); got == b2.Updates[0].New.String() {
		t.Fatal("Close published while another held the flush lock")
	}
	durable.Unlock(fl)
	if err := patient.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitForGit(t, dir, ref, b2.Updates[0].New)
}

// TestFSRecoverSkipsWhenLockHeld: opening does not recover a log another
// live opener holds (it publishes it itself), and does not wait for it.
func TestFSRecoverSkipsWhenLockHeld(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	r := openFS(t, dir)
	b, c := commitBatch(sessions+"s/main", object.ZeroHash, object.ZeroHash, "x")
	if err := r.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := r.lock(ctx); err != nil {
		t.Fatal(err)
	}
	second := openFS(t, dir)
	r.unlock()
	if got := gitRef(t, dir, sessions+"s/main"); got != "" {
		t.Fatalf("a second open recovered a held log: git reads %s", got)
	}
	if h, err := second.ReadRef(ctx, sessions+"s/main"); err != nil || h != c {
		t.Fatalf("second opener ReadRef = %s, %v", h, err)
	}
	// The flush lock held elsewhere: Flush gives up after LockTimeout
	// and the flusher's path (no wait) leaves the log as it is.
	fl, err := os.OpenFile(filepath.Join(dir, "thoughtbox", "flush.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	if ok, err := durable.TryLock(fl, nil); !ok || err != nil {
		t.Fatalf("flush lock: %v %v", ok, err)
	}
	if err := second.flushSoon(); err != nil {
		t.Fatalf("flushSoon with the flush lock held elsewhere: %v", err)
	}
	if got := gitRef(t, dir, sessions+"s/main"); got != "" {
		t.Fatal("flushSoon published while another held the flush lock")
	}
	durable.Unlock(fl)
	if err := second.flushSoon(); err != nil {
		t.Fatal(err)
	}
	if got := gitRef(t, dir, sessions+"s/main"); got != c.String() {
		t.Fatalf("after flushSoon git reads %q, want %s", got, c)
	}
}

// TestOpenFSErrors: paths that cannot hold a repository fail to open
// with an error, and leave what was there alone.
func TestOpenFSErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("not a repository"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFS(file, FSOptions{}); err == nil {
		t.Fatal("OpenFS of a file succeeded")
	}
	if got, _ := os.ReadFile(file); string(got) != "not a repository" {
		t.Fatalf("the file was changed: %q", got)
	}

	// A repository whose thoughtbox folder is a file.
	dir := t.TempDir()
	if err := initBareRepo(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "thoughtbox"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFS(dir, FSOptions{}); err == nil {
		t.Fatal("OpenFS with thoughtbox a file succeeded")
	}

	// A log that is a folder.
	dir = t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "thoughtbox", "log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFS(dir, FSOptions{}); err == nil {
		t.Fatal("OpenFS with the log a folder succeeded")
	}
}

// TestOpenFSReadOnlyDirectory: a repository in a folder this process
// cannot write opens read-only: its refs read, writes are refused, and
// nothing is recovered or flushed into it.
func TestOpenFSReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes read-only folders")
	}
	dir := t.TempDir()
	r := openFS(t, dir)
	b, c := commitBatch(sessions+"s/main", object.ZeroHash, object.ZeroHash, "x")
	if err := r.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	// r stays open with the batch only in its log, as after a crash.
	var all []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			all = append(all, p)
		}
		return nil
	})
	for _, p := range all {
		os.Chmod(p, 0o555)
	}
	t.Cleanup(func() {
		for _, p := range all {
			os.Chmod(p, 0o755)
		}
	})
	ro := openFS(t, dir)
	if !ro.ReadOnly() {
		t.Fatal("a read-only folder opened for writing")
	}
	if h, err := ro.ReadRef(t.Context(), sessions+"s/main"); err != nil || h != c {
		t.Fatalf("read-only ReadRef = %s, %v; want %s from the log", h, err, c)
	}
	if got := gitRef(t, dir, sessions+"s/main"); got != "" {
		t.Fatalf("a read-only open recovered the log into the repository: git reads %s", got)
	}
	b2, _ := commitBatch(sessions+"s/main", c, c, "y")
	if err := ro.Apply(t.Context(), b2); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Apply on a read-only folder: %v", err)
	}
}
