package wal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// replica is what one opener of a log has replayed: a stand-in for the
// disk repository's overlay.
type replica struct {
	recs   []*Batch
	resets int
}

func openLog(t *testing.T, path string, r *replica, timeout time.Duration) *Log {
	t.Helper()
	l, ro, err := Open(path, Options{
		Holder:  path + ".holder",
		Timeout: timeout,
		Name:    "test repo",
		Reset:   func() { r.recs = nil; r.resets++ },
		Record:  func(b *Batch) { r.recs = append(r.recs, b) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if ro {
		t.Fatal("opened read-only")
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func refBatch(name string, n byte) *Batch {
	var h object.Hash
	h[0] = n
	return &Batch{
		Updates: []RefUpdate{{Name: name, New: h}},
		Objects: []Object{{ID: h, Type: object.TypeBlob, Data: []byte(fmt.Sprintf("blob %d", n))}},
	}
}

func appendBatches(t *testing.T, l *Log, bs ...*Batch) {
	t.Helper()
	var buf []byte
	for _, b := range bs {
		buf = AppendRecord(buf, b)
	}
	if err := l.Append(buf); err != nil {
		t.Fatal(err)
	}
}

// lock takes l's lock, which also replays what others appended.
func lock(t *testing.T, l *Log) {
	t.Helper()
	if err := l.Lock(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func names(r *replica) []string {
	var out []string
	for _, b := range r.recs {
		out = append(out, b.Updates[0].Name)
	}
	return out
}

// noTempFile fails t when a trim left its new file behind.
func noTempFile(t *testing.T, path, what string) {
	t.Helper()
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s left its temporary file: %v", what, err)
	}
}

// replayedAnew opens the log at path as another process would, takes and
// releases its lock, and returns the names of the records it replayed.
func replayedAnew(t *testing.T, path string) ([]string, *replica) {
	t.Helper()
	var r replica
	l := openLog(t, path, &r, time.Second)
	lock(t, l)
	l.Unlock()
	return names(&r), &r
}

// twoOpeners opens one log twice, as two processes would.
func twoOpeners(t *testing.T) (path string, a, b *Log, ra, rb *replica) {
	path = filepath.Join(t.TempDir(), "log")
	ra, rb = &replica{}, &replica{}
	a = openLog(t, path, ra, time.Second)
	b = openLog(t, path, rb, time.Second)
	return path, a, b, ra, rb
}

func TestLogAppendReplayAcrossOpeners(t *testing.T) {
	path, a, b, ra, rb := twoOpeners(t)
	ctx := t.Context()

	lock(t, a)
	if a.End() != int64(len(Magic)) {
		t.Fatalf("a new log ends at %d, want just past its magic (%d)", a.End(), len(Magic))
	}
	appendBatches(t, a, refBatch("r1", 1), refBatch("r2", 2))
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != a.End()+Ahead {
		t.Fatalf("log is %d bytes, want its records (%d) plus %d zeros ahead", fi.Size(), a.End(), Ahead)
	}
	// b cannot take the lock while a holds it, so it peeks.
	locked, err := b.RLock(ctx)
	if err != nil || locked {
		t.Fatalf("RLock while another holds the lock: locked %v, %v", locked, err)
	}
	b.RUnlock(locked)
	if got := names(rb); fmt.Sprint(got) != "[r1 r2]" {
		t.Fatalf("peek replayed %v, want [r1 r2]", got)
	}
	appendBatches(t, a, refBatch("r3", 3))
	a.Unlock()

	locked, err = b.RLock(ctx)
	if err != nil || !locked {
		t.Fatalf("RLock of a free log: locked %v, %v", locked, err)
	}
	b.RUnlock(locked)
	if got := names(rb); fmt.Sprint(got) != "[r1 r2 r3]" {
		t.Fatalf("replay after peek gave %v, want [r1 r2 r3]", got)
	}
	if b.End() != a.End() {
		t.Fatalf("b ends at %d, a at %d", b.End(), a.End())
	}
	if len(ra.recs) != 0 {
		t.Fatalf("the appender replayed its own records: %v", names(ra))
	}
	if b.ID() == 0 || a.ID() != b.ID() {
		t.Fatalf("ids %d and %d, want the same file", a.ID(), b.ID())
	}
	if a.Path() != path {
		t.Fatalf("Path() = %s", a.Path())
	}
}

func TestLogTornTailIsCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var r replica
	l := openLog(t, path, &r, time.Second)
	lock(t, l)
	appendBatches(t, l, refBatch("r1", 1))
	good := l.End()
	l.Unlock()
	// A second record cut off mid-write (its length claims more than is
	// there), with nothing after it.
	rec := AppendRecord(nil, refBatch("r2", 2))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(good); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(rec[:len(rec)-5], good); err != nil {
		t.Fatal(err)
	}
	f.Close()

	var r2 replica
	l2 := openLog(t, path, &r2, time.Second)
	if err := l2.Lock(t.Context()); err != nil {
		t.Fatalf("a torn tail must not stop the log: %v", err)
	}
	l2.Unlock()
	if got := names(&r2); fmt.Sprint(got) != "[r1]" {
		t.Fatalf("replayed %v, want [r1]", got)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != good {
		t.Fatalf("log is %d bytes after cutting its tail, want %d", fi.Size(), good)
	}
}

func TestLogDamageInTheMiddleIsReportedNotCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var r replica
	l := openLog(t, path, &r, time.Second)
	lock(t, l)
	appendBatches(t, l, refBatch("r1", 1), refBatch("r2", 2))
	l.Unlock()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	size := len(data)
	data[len(Magic)+10] ^= 0xff // inside the first record's payload
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}

	wrapped := errors.New("classified")
	l2, _, err := Open(path, Options{Holder: path + ".holder", Timeout: time.Second,
		Damage: func(err error) error { return fmt.Errorf("%w: %w", wrapped, err) }})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	err = l2.Lock(t.Context())
	var de *DamageError
	if !errors.As(err, &de) || !errors.Is(err, ErrDamaged) || !errors.Is(err, wrapped) {
		t.Fatalf("Lock of a damaged log: %v, want a wrapped *DamageError", err)
	}
	if de.Offset != int64(len(Magic)) || de.Next <= de.Offset || de.Path != path {
		t.Fatalf("damage at %d, next %d, path %s", de.Offset, de.Next, de.Path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != int64(size) {
		t.Fatalf("a damaged log was changed: %d bytes, had %d", fi.Size(), size)
	}
}

func TestLogTrimKeepsLaterRecords(t *testing.T) {
	path, a, b, ra, rb := twoOpeners(t)
	ctx := t.Context()
	lock(t, a)
	appendBatches(t, a, refBatch("r1", 1), refBatch("r2", 2))
	end := a.End()
	appendBatches(t, a, refBatch("r3", 3))
	a.Unlock()
	// b has seen the old file.
	locked, err := b.RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.RUnlock(locked)
	oldID := b.ID()
	// Another holder of the old file, so that b's lock attempt on it
	// fails and b peeks.
	stale, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close()

	lock(t, a)
	if err := a.Trim(ctx, end); err != nil {
		t.Fatal(err)
	}
	if got := names(ra); fmt.Sprint(got) != "[r3]" || ra.resets != 1 {
		t.Fatalf("after trim a replayed %v with %d resets, want [r3] after one", got, ra.resets)
	}
	if a.ID() == oldID {
		t.Fatal("trim did not replace the file")
	}
	noTempFile(t, path, "trim")
	// While a holds the new file's lock, b peeks and finds it replaced.
	if ok, err := durable.TryLock(stale, nil); !ok || err != nil {
		t.Fatalf("lock the old file: %v %v", ok, err)
	}
	locked, err = b.RLock(ctx)
	if err != nil || locked {
		t.Fatalf("RLock: %v %v", locked, err)
	}
	b.RUnlock(locked)
	if got := names(rb); fmt.Sprint(got) != "[r3]" || rb.resets != 1 {
		t.Fatalf("b peeked %v with %d resets, want [r3] after one", got, rb.resets)
	}
	appendBatches(t, a, refBatch("r4", 4))
	a.Unlock()

	// A third opener still holding the first file catches up under the lock.
	if got, _ := replayedAnew(t, path); fmt.Sprint(got) != "[r3 r4]" {
		t.Fatalf("c replayed %v", got)
	}
	lock(t, b)
	b.Unlock()
	if got := names(rb); fmt.Sprint(got) != "[r3 r4]" {
		t.Fatalf("b replayed %v", got)
	}
}

func TestLogReplacedUnderLockIsReopened(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log")
	var ra, rb replica
	a := openLog(t, path, &ra, time.Second)
	b := openLog(t, path, &rb, time.Second)
	ctx := t.Context()
	lock(t, b)
	b.Unlock()
	lock(t, a)
	appendBatches(t, a, refBatch("r1", 1))
	if err := a.Trim(ctx, a.End()); err != nil {
		t.Fatal(err)
	}
	appendBatches(t, a, refBatch("r2", 2))
	a.Unlock()
	// b's file is the one trim replaced; Lock moves to the new one.
	lock(t, b)
	b.Unlock()
	if got := names(&rb); fmt.Sprint(got) != "[r2]" {
		t.Fatalf("b replayed %v, want [r2]", got)
	}
}

func TestLogLockWaitIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var ra, rb replica
	a := openLog(t, path, &ra, time.Second)
	b := openLog(t, path, &rb, 20*time.Millisecond)
	lock(t, a)
	defer a.Unlock()
	err := b.Lock(t.Context())
	if !errors.Is(err, durable.ErrHeld) {
		t.Fatalf("Lock of a held log: %v, want durable.ErrHeld", err)
	}
	if ok, err := b.TryLock(); ok || err != nil {
		t.Fatalf("TryLock of a held log: %v %v", ok, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	slow := openLog(t, path, &rb, time.Hour)
	if err := slow.Lock(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestLogRefusesAForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("not a thoughtbox log at all\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var r replica
	l := openLog(t, path, &r, time.Second)
	if err := l.Lock(t.Context()); err == nil {
		t.Fatal("Lock accepted a file that is not a log")
	}
	// A peek refuses it too. Hold the lock elsewhere so b must peek.
	holder, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if ok, err := durable.TryLock(holder, nil); !ok || err != nil {
		t.Fatalf("lock: %v %v", ok, err)
	}
	defer durable.Unlock(holder)
	var r2 replica
	l2 := openLog(t, path, &r2, time.Second)
	if _, err := l2.RLock(t.Context()); err == nil {
		t.Fatal("RLock accepted a file that is not a log")
	}
}

func TestLogOpenReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes read-only files")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "log")
	if err := os.WriteFile(path, Magic, 0o444); err != nil {
		t.Fatal(err)
	}
	l, ro, err := Open(path, Options{Holder: filepath.Join(dir, "holder")})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !ro {
		t.Fatal("a read-only log was not reported read-only")
	}
}

// TestLogTurnsSeeEachOthersRecords has two openers take turns appending:
// each turn must replay what the other appended since its own last turn
// (the lone writer's shortcut must not hide them), and a torn record left
// at the end between turns must still be cut.
func TestLogTurnsSeeEachOthersRecords(t *testing.T) {
	path, a, b, ra, rb := twoOpeners(t)
	turn := func(l *Log, name string, n byte) {
		t.Helper()
		lock(t, l)
		appendBatches(t, l, refBatch(name, n))
		l.Unlock()
	}
	turn(a, "a1", 1)
	turn(a, "a2", 2) // a's own turns in a row: nothing to replay
	turn(b, "b1", 3)
	turn(b, "b2", 4)
	turn(a, "a3", 5)
	if got := names(ra); fmt.Sprint(got) != "[b1 b2]" {
		t.Fatalf("a replayed %v, want [b1 b2]", got)
	}
	turn(b, "b3", 6)
	if got := names(rb); fmt.Sprint(got) != "[a1 a2 a3]" {
		t.Fatalf("b replayed %v, want [a1 a2 a3]", got)
	}
	// A writer killed mid-append leaves a partial record after b3.
	end := b.End()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	torn := AppendRecord(nil, refBatch("torn", 7))
	if _, err := f.WriteAt(torn[:len(torn)/2], end); err != nil {
		t.Fatal(err)
	}
	f.Close()
	turn(b, "b4", 8)
	turn(a, "a4", 9)
	if got := names(ra); fmt.Sprint(got) != "[b1 b2 b3 b4]" {
		t.Fatalf("a replayed %v after the torn record, want [b1 b2 b3 b4]", got)
	}
	turn(b, "b5", 10)
	if got := names(rb); fmt.Sprint(got) != "[a1 a2 a3 a4]" {
		t.Fatalf("b replayed %v, want [a1 a2 a3 a4]", got)
	}
}

// TestTrimKept: a trim whose owner keeps the records after end replays
// nothing and resets nothing, yet leaves a log that another opener (and
// this one, appending on) reads exactly as a replaying Trim would.
func TestTrimKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var ra replica
	a := openLog(t, path, &ra, time.Second)
	ctx := t.Context()
	lock(t, a)
	appendBatches(t, a, refBatch("r1", 1), refBatch("r2", 2))
	end := a.End()
	appendBatches(t, a, refBatch("r3", 3))
	oldID := a.ID()
	if err := a.TrimKept(ctx, end); err != nil {
		t.Fatal(err)
	}
	if ra.resets != 0 || len(ra.recs) != 0 {
		t.Fatalf("TrimKept replayed %v with %d resets, want nothing", names(&ra), ra.resets)
	}
	if a.ID() == oldID {
		t.Fatal("trim did not replace the file")
	}
	noTempFile(t, path, "trim")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != a.End()+Ahead {
		t.Fatalf("the new log holds %d bytes, End says %d (and %d zeros ahead)", fi.Size(), a.End(), Ahead)
	}
	// The next append lands after r3, and a new lock finds nothing new.
	appendBatches(t, a, refBatch("r4", 4))
	a.Unlock()
	lock(t, a)
	a.Unlock()
	if ra.resets != 0 || len(ra.recs) != 0 {
		t.Fatalf("relocking replayed %v with %d resets", names(&ra), ra.resets)
	}

	if got, _ := replayedAnew(t, path); fmt.Sprint(got) != "[r3 r4]" {
		t.Fatalf("a new opener replayed %v, want [r3 r4]", got)
	}

	// An end outside the records is refused, and the log is left alone.
	lock(t, a)
	defer a.Unlock()
	if err := a.TrimKept(ctx, a.End()+1); err == nil {
		t.Fatal("TrimKept past the end succeeded")
	}
	if err := a.TrimKept(ctx, 0); err == nil {
		t.Fatal("TrimKept inside the magic succeeded")
	}
	var rc replica
	c := openLog(t, path, &rc, time.Second)
	if ok, err := c.RLock(ctx); err != nil || ok {
		t.Fatalf("RLock while a holds it: %v %v", ok, err)
	}
	if got := names(&rc); fmt.Sprint(got) != "[r3 r4]" {
		t.Fatalf("after refused trims the log reads %v", got)
	}
}

// TestTrimFilledAhead: a trim whose new file is filled before the lock
// keeps the records appended meanwhile too, and one whose log was
// replaced in between is refused and leaves no file behind.
func TestTrimFilledAhead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var ra replica
	a := openLog(t, path, &ra, time.Second)
	ctx := t.Context()
	lock(t, a)
	appendBatches(t, a, refBatch("r1", 1))
	end := a.End()
	appendBatches(t, a, refBatch("r2", 2))
	tr := a.BeginTrim(end)
	a.Unlock()
	if err := tr.Fill(); err != nil {
		t.Fatal(err)
	}
	// Appended after the fill, before the trim is finished: a second
	// opener (another process) and this one, many records at once, past
	// the zeros laid ahead.
	var rb replica
	b := openLog(t, path, &rb, time.Second)
	lock(t, b)
	appendBatches(t, b, refBatch("r3", 3))
	b.Unlock()
	lock(t, a)
	big := refBatch("r4", 4)
	big.Objects[0].Data = make([]byte, Ahead+1)
	appendBatches(t, a, big)
	if err := a.FinishTrim(ctx, tr); err != nil {
		t.Fatal(err)
	}
	appendBatches(t, a, refBatch("r5", 5))
	a.Unlock()
	noTempFile(t, path, "trim")
	got, rc := replayedAnew(t, path)
	if fmt.Sprint(got) != "[r2 r3 r4 r5]" {
		t.Fatalf("a new opener replayed %v, want [r2 r3 r4 r5]", got)
	}
	if n := len(rc.recs[2].Objects[0].Data); n != Ahead+1 {
		t.Fatalf("the large record came back with %d bytes", n)
	}

	// Replaced between the fill and the finish: refused.
	lock(t, a)
	tr = a.BeginTrim(a.End())
	a.Unlock()
	if err := tr.Fill(); err != nil {
		t.Fatal(err)
	}
	lock(t, b)
	if err := b.Trim(ctx, b.End()); err != nil {
		t.Fatal(err)
	}
	b.Unlock()
	lock(t, a)
	defer a.Unlock()
	if err := a.FinishTrim(ctx, tr); err == nil {
		t.Fatal("a trim of a replaced log was finished")
	}
	noTempFile(t, path, "the refused trim")
	// A trim at an end outside the records fails at once.
	if err := a.BeginTrim(a.End() + 1).Fill(); err == nil {
		t.Fatal("a trim past the end was filled")
	}
}
