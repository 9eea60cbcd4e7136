package wal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// ErrDamaged is returned when the log holds a record that fails its
// checksum with intact records after it. A torn tail (a write cut by a
// crash before its fsync, never acknowledged) is cut off; damage in the
// middle is not a torn write, and the records after it were acknowledged,
// so nothing is cut or replayed until the log is repaired.
var ErrDamaged = errors.New("write-ahead log is damaged")

// DamageError says where: the record at Offset fails its checksum or does
// not decode, and an intact record starts at Next.
type DamageError struct {
	Path         string
	Offset, Next int64
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("%s is damaged at offset %d: that record fails its checksum, yet an intact record follows at offset %d; nothing was changed — run 'thoughtbox verify --repair' to keep every record that checks out",
		e.Path, e.Offset, e.Next)
}

func (e *DamageError) Unwrap() error { return ErrDamaged }

// Ahead is how far past its last record the log is extended with zeros.
const Ahead = 256 << 10

// Options configure a Log.
type Options struct {
	// Holder is the file that names the process holding the log's lock.
	Holder string
	// Timeout bounds a wait for another process's lock.
	Timeout time.Duration
	// Name is what error messages call the log's owner (its repository).
	Name string
	// Reset is called when the records replayed so far no longer count:
	// another process replaced the log (its records are published by
	// then), or this one trimmed it.
	Reset func()
	// Record is called with each record replayed, in order.
	Record func(*Batch)
	// Damage wraps the *DamageError a replay meets (nil: returned as is),
	// so the caller can classify it without this package knowing how.
	Damage func(error) error
}

// Log is the write-ahead log file of a repository: a Magic header, then
// records. Several processes share it: the file lock (Lock) serialises
// appends and trims, and each process replays what others appended before
// it acts on the log's content. A Log is not safe for concurrent use; its
// owner serialises calls (the disk repository's mu).
type Log struct {
	path string
	opt  Options
	rec  *durable.Record
	f    *os.File
	ino  uint64
	off  int64 // end of the last record replayed or appended
	// size is the file's size: past off it holds zeros written ahead of
	// the records.
	size int64
}

// Open opens the log at path, creating it if it is missing. When the file
// cannot be written (a read-only mount, another user's ledger) it is opened
// for reading and readOnly is set.
func Open(path string, opt Options) (l *Log, readOnly bool, err error) {
	f, err := durable.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)) {
		// Someone may still read this ledger.
		if f, err = durable.OpenFile(path, os.O_RDONLY, 0); err == nil {
			readOnly = true
		}
	}
	if err != nil {
		return nil, false, err
	}
	if opt.Reset == nil {
		opt.Reset = func() {}
	}
	if opt.Record == nil {
		opt.Record = func(*Batch) {}
	}
	return &Log{path: path, opt: opt, rec: durable.NewRecord(opt.Holder), f: f}, readOnly, nil
}

// Path is the log file's path.
func (l *Log) Path() string { return l.path }

// End is the offset just past the last record replayed or appended.
func (l *Log) End() int64 { return l.off }

// ID identifies the log file: a trim replaces it with a new one.
func (l *Log) ID() uint64 { return l.ino }

// Close closes the file and the holder record.
func (l *Log) Close() error {
	err := l.f.Close()
	l.rec.Close()
	return err
}

func (l *Log) reset() {
	l.off = 0
	l.opt.Reset()
}

// Lock takes the log's file lock, waiting for another process at most the
// Timeout (a stuck holder makes it fail with a *durable.HeldError naming
// it, not hang) or until ctx ends, then replays what others appended.
func (l *Log) Lock(ctx context.Context) error {
	if err := durable.Lock(ctx, l.f, l.rec, l.opt.Timeout); err != nil {
		return fmt.Errorf("log of %s: %w", l.opt.Name, err)
	}
	if err := l.sync(ctx); err != nil {
		l.Unlock()
		return err
	}
	return nil
}

// Unlock lets the file lock go.
func (l *Log) Unlock() { durable.Unlock(l.f) }

// TryLock takes the file lock if it is free, without replaying.
func (l *Log) TryLock() (bool, error) { return durable.TryLock(l.f, l.rec) }

// RLock is Lock for readers, who never wait for another process: when the
// file lock is free it is taken as by Lock; when another process holds it,
// the records appended so far are read without it (see peek). RUnlock
// releases what was taken.
func (l *Log) RLock(ctx context.Context) (locked bool, err error) {
	ok, err := l.TryLock()
	if err != nil {
		return false, err
	}
	if ok {
		err = l.sync(ctx)
	} else {
		err = l.peek()
	}
	if err != nil {
		l.RUnlock(ok)
		return false, err
	}
	return ok, nil
}

// RUnlock undoes RLock.
func (l *Log) RUnlock(locked bool) {
	if locked {
		l.Unlock()
	}
}

// peek catches up with the log while another process holds its lock,
// without writing anything: it reads the complete records and stops at the
// first one that is not (yet) whole, which a writer is appending or which
// the next lock holder cuts off. A complete record is never cut off, so
// what it adds stays true. A log replaced by a flush elsewhere is reopened;
// the batches of the old one are in the refs and packs by then.
func (l *Log) peek() error {
	pid, err := durable.PathID(l.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if l.ino == 0 {
		if l.ino, err = durable.FileID(l.f); err != nil {
			return err
		}
	}
	if pid != l.ino {
		nf, err := durable.OpenFile(l.path, os.O_RDWR, 0o644)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		id, err := durable.FileID(nf)
		if err != nil {
			nf.Close()
			return err
		}
		l.f.Close()
		l.f, l.ino = nf, id
		l.reset()
	}
	fi, err := l.f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if l.off == 0 {
		if size < int64(len(Magic)) {
			return nil
		}
		if err := l.checkMagic(); err != nil {
			return err
		}
		l.off = int64(len(Magic))
	}
	var hdr [8]byte
	for l.off+8 <= size {
		if _, err := l.f.ReadAt(hdr[:], l.off); err != nil {
			return err
		}
		length := int64(binary.BigEndian.Uint32(hdr[:4]))
		if length == 0 || l.off+8+length > size {
			return nil
		}
		buf := make([]byte, 8+length)
		if _, err := l.f.ReadAt(buf, l.off); err != nil {
			return err
		}
		rec, _, err := DecodeRecord(buf)
		if err != nil || rec == nil {
			return nil
		}
		l.opt.Record(rec)
		l.off += 8 + length
	}
	return nil
}

// sync catches up with the log file under its lock. A flush in another
// process may have replaced the file; a process killed mid-append may have
// left a torn record at the end, which was never acknowledged and is cut
// off here.
func (l *Log) sync(ctx context.Context) error {
	if err := l.followReplacement(ctx); err != nil {
		return err
	}
	if l.off > 0 && l.off+8 <= l.size {
		// The usual turn of a lone writer: the bytes after the last record
		// are still the zeros laid ahead of it (see Append), so nobody
		// appended since, and the file's size is not needed. Anything
		// else (a record, a file cut short) takes the full way below.
		var hdr [8]byte
		if n, err := l.f.ReadAt(hdr[:], l.off); n == len(hdr) && err == nil && binary.BigEndian.Uint32(hdr[:4]) == 0 {
			return nil
		}
	}
	fi, err := l.f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if l.off == 0 {
		if size, err = l.startOrCheckMagic(size); err != nil {
			return err
		}
		l.off = int64(len(Magic))
	}
	if size < l.off {
		return fmt.Errorf("%s shrank from %d to %d bytes under its lock", l.path, l.off, size)
	}
	l.size = size
	return l.readNewRecords(size)
}

// followReplacement makes l.f the file at l.path, locked: a flush in
// another process may have replaced the file since l.f was opened. The old
// file's lock is released only once the new one's is held.
func (l *Log) followReplacement(ctx context.Context) error {
	for {
		pid, err := durable.PathID(l.path)
		if err == nil && l.ino != 0 && pid == l.ino {
			return nil
		}
		if err == nil && l.ino == 0 {
			fid, ferr := durable.FileID(l.f)
			if ferr != nil {
				return ferr
			}
			if fid == pid {
				l.ino = fid
				continue
			}
		}
		nf, err := durable.OpenFile(l.path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		if err := durable.Lock(ctx, nf, l.rec, l.opt.Timeout); err != nil {
			nf.Close()
			return fmt.Errorf("log of %s: %w", l.opt.Name, err)
		}
		fid, err := durable.FileID(nf)
		if err != nil {
			nf.Close()
			return err
		}
		durable.Unlock(l.f)
		l.f.Close()
		l.f, l.ino = nf, fid
		l.reset()
	}
}

// startOrCheckMagic is the first read of a log file of size bytes: one
// too short to hold the magic is new (or was never completed) and is
// started durably; any other must begin with the magic. It returns the
// file's size after.
func (l *Log) startOrCheckMagic(size int64) (int64, error) {
	if size < int64(len(Magic)) {
		if err := l.f.Truncate(0); err != nil {
			return 0, err
		}
		if _, err := l.f.WriteAt(Magic, 0); err != nil {
			return 0, err
		}
		if err := durable.Datasync(l.f); err != nil {
			return 0, err
		}
		if err := durable.SyncDir(filepath.Dir(l.path)); err != nil {
			return 0, err
		}
		return int64(len(Magic)), nil
	}
	if err := l.checkMagic(); err != nil {
		return 0, err
	}
	return size, nil
}

// readNewRecords hands the records after l.off, up to size, to
// opt.Record, and cuts off a torn record at the end.
func (l *Log) readNewRecords(size int64) error {
	// Records follow one another up to the end of the file or to the
	// zeros a writer laid down ahead of itself (a record's length is never
	// zero): see Append.
	var hdr [8]byte
	for l.off < size {
		n, err := l.f.ReadAt(hdr[:], l.off)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		length := int64(0)
		if n == len(hdr) {
			length = int64(binary.BigEndian.Uint32(hdr[:4]))
			if length == 0 {
				return nil // the preallocated tail
			}
		}
		var rec *Batch
		if n == len(hdr) && l.off+8+length <= size {
			buf := make([]byte, 8+length)
			if _, err := l.f.ReadAt(buf, l.off); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			if rec, _, err = DecodeRecord(buf); err != nil && !errors.Is(err, ErrTorn) {
				return err
			}
		}
		if rec == nil {
			// We hold the lock, so nobody is writing: this is a write that
			// died before its fsync — unless intact records follow, which
			// makes it damage (checkTornTail): then nothing is cut.
			if err := l.checkTornTail(l.off, size); err != nil {
				return err
			}
			if err := l.f.Truncate(l.off); err != nil {
				return err
			}
			l.size = l.off
			return durable.Datasync(l.f)
		}
		l.opt.Record(rec)
		l.off += 8 + length
	}
	return nil
}

// checkTornTail decides what a record that does not read at off is: a
// torn tail (nil: the caller may cut it) or damage (a *DamageError).
func (l *Log) checkTornTail(off, size int64) error {
	if size-off > 1<<30 {
		return fmt.Errorf("%s: %d bytes after an unreadable record at byte %d", l.path, size-off, off)
	}
	rest := make([]byte, size-off)
	if _, err := l.f.ReadAt(rest, off); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if next := FindRecord(rest, 1); next >= 0 {
		var err error = &DamageError{Path: l.path, Offset: off, Next: off + int64(next)}
		if l.opt.Damage != nil {
			err = l.opt.Damage(err)
		}
		return err
	}
	return nil
}

// Append writes records (one or more, as AppendRecord lays them out) after
// the last one and syncs them: one fsync for a whole group of batches. The
// caller holds the lock. On failure the file is cut back and nothing of
// records counts.
func (l *Log) Append(records []byte) error {
	if len(records) == 0 {
		return nil
	}
	// Overwriting zeros already in the file needs only the data synced;
	// growing the file makes each fdatasync commit the file system's
	// journal too. So the log is extended ahead of its end, with zeros,
	// Ahead bytes at a time.
	end := l.off + int64(len(records))
	_, err := l.f.WriteAt(records, l.off)
	if err == nil && end > l.size {
		// The zeros go in a write of their own, from one shared block:
		// appending them to records allocated and cleared 256 kB twice,
		// and copied it. Both writes precede the one fdatasync; a crash
		// between them leaves the file ending at the records, which a
		// replay reads as it reads any log without zeros ahead.
		err = writeZeros(l.f, end, Ahead)
		if err == nil {
			l.size = end + Ahead
		}
	}
	if err == nil {
		err = durable.Datasync(l.f)
	}
	if err != nil {
		l.f.Truncate(l.off)
		l.size = l.off
		return err
	}
	l.off = end
	return nil
}

// zeros is what writeZeros writes; never written to, so its pages stay
// the kernel's shared zero page and cost no memory.
var zeros [Ahead]byte

// writeZeros writes n zero bytes into f at off.
func writeZeros(f *os.File, off, n int64) error {
	for n > 0 {
		k := min(n, int64(len(zeros)))
		if _, err := f.WriteAt(zeros[:k], off); err != nil {
			return err
		}
		off += k
		n -= k
	}
	return nil
}

// Trim replaces the log with one holding only the records after offset
// end (those appended while a flush published the ones before it), then
// replays them: Reset is called first. The caller holds the lock; the new
// file is locked before it takes the old one's place.
func (l *Log) Trim(ctx context.Context, end int64) error {
	if err := l.trim(ctx, end); err != nil {
		return err
	}
	l.reset()
	return l.sync(ctx)
}

// TrimKept is Trim for an owner that still has the records after end as
// it applied them, appended or replayed (the disk repository's overlay):
// they are not replayed, and Reset is not called. Replaying them decoded
// every record logged while a flush ran (hundreds with many writers, 2–15
// ms under the lock, during which no writer could append), only to
// rebuild what the owner already held.
func (l *Log) TrimKept(ctx context.Context, end int64) error {
	return l.trim(ctx, end)
}

func (l *Log) trim(ctx context.Context, end int64) error {
	t := l.BeginTrim(end)
	if err := t.Fill(); err != nil {
		return err
	}
	return l.FinishTrim(ctx, t)
}

// A Trimming is the new file of a trim under way (see BeginTrim).
type Trimming struct {
	path      string // of the new file
	src       *os.File
	srcID     uint64
	end, upto int64 // the records of src copied by Fill
	f         *os.File
	at, size  int64 // where f's records end; its size, zeros included
	err       error
}

// BeginTrim starts a trim at end (as TrimKept) whose copying is done ahead
// of the lock: copying and syncing the records logged while a flush ran
// (0.2–0.6 MB with 64 writers) took 1–7 ms under the lock. It is called as
// the Log's other methods are, under its owner's serialisation, but needs
// no file lock: it only notes the file and how far its records go. Fill
// then copies them with no lock at all, and FinishTrim, under the lock,
// copies what was appended meanwhile and puts the file in place. The
// records up to the end noted are never rewritten while the file is the
// log (only a trim replaces them), and only one trim may be under way:
// the caller holds the flush lock, which every trimmer takes.
func (l *Log) BeginTrim(end int64) *Trimming {
	t := &Trimming{path: l.path + ".tmp", src: l.f, srcID: l.ino, end: end, upto: l.off}
	if end < int64(len(Magic)) || end > l.off || l.ino == 0 {
		t.err = fmt.Errorf("%s: trim at %d outside the records (%d to %d)", l.path, end, len(Magic), l.off)
	}
	return t
}

// Fill writes the new file: the magic, the records noted by BeginTrim,
// and zeros laid ahead of them (see Append), synced. On failure the new
// file is removed; FinishTrim then fails too.
func (t *Trimming) Fill() error {
	if t.err != nil {
		return t.err
	}
	content := make([]byte, int64(len(Magic))+t.upto-t.end)
	copy(content, Magic)
	if n, err := t.src.ReadAt(content[len(Magic):], t.end); n != len(content)-len(Magic) {
		return t.fail(fmt.Errorf("%s: reading the records to keep: %d of %d bytes at %d: %v", t.path, n, len(content)-len(Magic), t.end, err))
	}
	os.Remove(t.path)
	f, err := durable.OpenFile(t.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return t.fail(err)
	}
	t.f = f
	_, err = f.WriteAt(content, 0)
	if err == nil {
		err = writeZeros(f, int64(len(content)), Ahead)
	}
	if err == nil {
		err = durable.Datasync(f)
	}
	if err != nil {
		return t.fail(err)
	}
	t.at, t.size = int64(len(content)), int64(len(content))+Ahead
	return nil
}

func (t *Trimming) fail(err error) error {
	t.err = err
	t.Abort()
	return err
}

// Abort removes the new file of a trim that is not to be finished.
func (t *Trimming) Abort() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
		os.Remove(t.path)
	}
}

// FinishTrim completes a trim filled by Fill, as TrimKept does: the caller
// holds the lock. The records appended since BeginTrim are copied and
// synced, then the new file is locked and takes the log's place. On
// failure the log is left as it was and the new file removed.
func (l *Log) FinishTrim(ctx context.Context, t *Trimming) error {
	if t.err != nil {
		return t.err
	}
	if t.f == nil {
		return fmt.Errorf("%s: a trim finished without its file", l.path)
	}
	if l.f != t.src || l.ino != t.srcID || l.off < t.upto {
		return t.fail(fmt.Errorf("%s: the log was replaced while a trim copied it", l.path))
	}
	f := t.f
	if more := l.off - t.upto; more > 0 {
		buf := make([]byte, more)
		if n, err := l.f.ReadAt(buf, t.upto); int64(n) != more {
			return t.fail(fmt.Errorf("%s: reading the records appended during the trim: %d of %d bytes at %d: %v", l.path, n, more, t.upto, err))
		}
		_, err := f.WriteAt(buf, t.at)
		t.at += more
		if err == nil && t.at > t.size {
			err = writeZeros(f, t.at, Ahead)
			t.size = t.at + Ahead
		}
		if err == nil {
			err = durable.Datasync(f)
		}
		if err != nil {
			return t.fail(err)
		}
	}
	// Nobody else has it open yet, so this cannot wait.
	err := durable.Lock(ctx, f, l.rec, l.opt.Timeout)
	if err == nil {
		err = durable.Rename(t.path, l.path)
	}
	if err == nil {
		err = durable.SyncDir(filepath.Dir(l.path))
	}
	if err != nil {
		return t.fail(err)
	}
	fid, err := durable.FileID(f)
	if err != nil {
		return err
	}
	t.f = nil
	old := l.f
	l.f, l.ino = f, fid
	l.off, l.size = t.at, t.size
	durable.Unlock(old)
	old.Close()
	return nil
}

// checkMagic refuses a file that does not begin as our logs do, so that a
// foreign file at the log's path is never replayed or cut.
func (l *Log) checkMagic() error {
	head := make([]byte, len(Magic))
	if _, err := l.f.ReadAt(head, 0); err != nil {
		return err
	}
	if string(head) != string(Magic) {
		return fmt.Errorf("%s is not a Thoughtbox log", l.path)
	}
	return nil
}
