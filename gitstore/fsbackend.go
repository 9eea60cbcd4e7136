package gitstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/pack"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/refs"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// Lock order. The disk backend's locks, and the store's above them, are
// taken outermost first; a goroutine holding one may wait only for those
// below it, never for one above:
//
//  1. a session's writer lock: the ledger's per-session mutex, then
//     thoughtbox/locks/<id>.lock (Store.LockSession, a durable.Mutex);
//  2. a chain's cs.mu (Store.lockChain), held while a thought is built
//     and applied;
//  3. flushMu, then thoughtbox/flush.lock (flushAndClean): one flush per
//     process, then one per repository;
//  4. mu, then the log file's flock (lock, rlock): the log, the overlay
//     built from it (recs, refs, objs) and rebuilt;
//  5. leaves, never held together: the pack set's locks (pack.Set: mu,
//     then its cacheMu), gitMu (go-git's storage, for loose objects) and
//     refs' .lock files while a ref is published.
//
// cmu (the group-commit queue) is a leaf as well: apply takes it to queue
// or hand on the lead and always lets it go before commitGroup takes the
// log lock. Nothing waits for the flush lock while holding the log lock;
// a reader never waits for another process's log lock (rlock), and a
// writer waits for one at most lockTimeout.

// fsBackend keeps a project in a bare repository on disk.
//
// A batch is durable once it is appended to the write-ahead log
// (thoughtbox/log) and the log is fsync'd; batches from many goroutines share
// one fsync (group commit). A flusher moves logged batches into a pack, points
// the refs at them, and drops them from the log. Until then, reads see logged
// objects and refs through an overlay built from the log.
//
// Several processes may share one repository: the log is appended only under
// a file lock on it, and each process replays what others appended before it
// checks a ref, so compare-and-swap holds across processes. A writer waits
// for that lock at most lockTimeout and then fails naming the holder (from
// logRec); a reader never waits for it (see rlock).
type fsBackend struct {
	gitDir    string
	logPath   string
	flushPath string

	lockTimeout time.Duration
	logger      *slog.Logger    // Options.Logger: the flusher's retries
	logRec      *durable.Record // who holds the log lock
	// wrote is set once this process logged a batch: only then does close
	// flush, so a read-only command never waits for the flush lock.
	wrote bool
	// readOnly is set when the repository's files cannot be written (a
	// read-only mount, another user's ledger): reads work, writes are
	// refused with ErrReadOnly, and nothing is recovered or flushed.
	readOnly bool

	packs *pack.Set
	// gitMu guards st: go-git's storage is not safe for concurrent use. It
	// is used only for loose objects (which the git CLI may write).
	gitMu sync.Mutex
	st    *filesystem.Storage

	// heads holds the whole content of the newest version of each object
	// the last flush wrote, since the next flush's first edits apply to
	// them; reading them back from the pack would cost more.
	heads     map[hash][]byte
	nextHeads map[hash][]byte // from the flush in progress
	nextLinks []pack.Link     // from the flush in progress
	// looseRefs counts ref files written since refs were last packed.
	looseRefs int

	// mu guards the log file and the overlay built from it; the flock on
	// log extends that to other processes.
	mu     sync.Mutex
	log    *os.File
	logIno uint64
	logOff int64
	// logSize is the log file's size: past logOff it holds zeros written
	// ahead of the records.
	logSize int64
	recs    []*batch
	refs    map[string]hash
	objs    map[hash]*logObject
	// rebuilt keeps the content of large logged objects already rebuilt
	// from their edits: each version of a session's folder tree is an
	// edit of the one before, and a reader (above all a writer catching
	// up with another process's appends) asks for the version after the
	// one it read last, so one edit is applied instead of the whole chain
	// since the last flush. Content-addressed, so it never goes stale.
	rebuilt rebuiltCache

	// cmu guards the group-commit queue (see apply).
	cmu      sync.Mutex
	queue    []*applyReq
	leading  bool
	stopping bool
	inflight sync.WaitGroup
	bigLog   chan struct{} // the log passed bigLog bytes: flush now
	flushMu  sync.Mutex
	stop     chan struct{}
	wg       sync.WaitGroup
	closed   bool
}

type applyReq struct {
	b    *batch
	err  error
	done chan struct{}
	// promote tells a waiting caller to lead the next group.
	promote chan struct{}
}

// packRefsEvery is how many loose ref writes trigger packing refs.
const packRefsEvery = 256

// logAhead is how far past its last record the log is extended with zeros.
const logAhead = 256 << 10

func openFSBackend(gitDir string, flushEvery, lockTimeout time.Duration, logger *slog.Logger) (*fsBackend, error) {
	if err := initBareRepo(gitDir); err != nil {
		return nil, err
	}
	tbDir := filepath.Join(gitDir, "thoughtbox")
	if err := os.MkdirAll(tbDir, 0o755); err != nil {
		return nil, err
	}
	st := filesystem.NewStorageWithOptions(osfs.New(gitDir), cache.NewObjectLRU(32*cache.MiByte),
		filesystem.Options{KeepDescriptors: true})
	b := &fsBackend{
		gitDir:    gitDir,
		logPath:   filepath.Join(tbDir, "log"),
		flushPath: filepath.Join(tbDir, "flush.lock"),
		st:        st,

		lockTimeout: lockTimeout,
		logger:      logger,
		logRec:      durable.NewRecord(filepath.Join(tbDir, "log.holder")),
		packs:       pack.NewSet(filepath.Join(gitDir, "objects", "pack")),
		bigLog:      make(chan struct{}, 1),
		stop:        make(chan struct{}),
	}
	b.resetOverlay()
	f, err := durable.OpenFile(b.logPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)) {
		// Someone may still read this ledger.
		if f, err = durable.OpenFile(b.logPath, os.O_RDONLY, 0); err == nil {
			b.readOnly = true
		}
	}
	if err != nil {
		return nil, err
	}
	b.log = f
	if err := b.packs.Refresh(); err != nil {
		f.Close()
		return nil, err
	}
	if b.readOnly {
		return b, nil
	}
	// A crash may have left batches in the log: recover them into the
	// repository before serving, so plain git sees everything acknowledged.
	// When another process holds the flush or log lock, it is alive and
	// publishes the log itself; opening does not wait for it.
	if err := b.flushAndClean(false, true); err != nil {
		f.Close()
		return nil, fmt.Errorf("recover %s: %w", gitDir, err)
	}
	b.wg.Add(1)
	go b.flusher(flushEvery)
	return b, nil
}

func (b *fsBackend) resetOverlay() {
	b.recs = nil
	b.refs = map[string]hash{}
	b.objs = map[hash]*logObject{}
	b.logOff = 0
}

// lock takes the log for this process and, by its file lock, from other
// processes, then catches up with what they appended. It waits for another
// process at most lockTimeout: a stuck holder (a suspended server) makes a
// writer fail with a *durable.HeldError naming it, not hang.
//
// Lock order: a session's chain lock (Store.lockSession), then the flush
// lock (flushMu, then flush.lock), then the log lock (mu, then the log's
// file lock). Nothing waits for the flush lock while holding the log lock.
func (b *fsBackend) lock() error {
	b.mu.Lock()
	if err := durable.Lock(context.Background(), b.log, b.logRec, b.lockTimeout); err != nil {
		b.mu.Unlock()
		return fmt.Errorf("log of %s: %w", b.gitDir, err)
	}
	if err := b.syncLocked(); err != nil {
		b.unlock()
		return err
	}
	return nil
}

func (b *fsBackend) unlock() {
	durable.Unlock(b.log)
	b.mu.Unlock()
}

// rlock is lock for readers, who never wait for another process: when the
// log's file lock is free it is taken as by lock; when another process
// holds it, the overlay catches up from the log without it (peekLocked).
// Either way b.mu is held; runlock releases what was taken.
func (b *fsBackend) rlock() (locked bool, err error) {
	b.mu.Lock()
	ok, err := durable.TryLock(b.log, b.logRec)
	if err != nil {
		b.mu.Unlock()
		return false, err
	}
	if ok {
		err = b.syncLocked()
	} else {
		err = b.peekLocked()
	}
	if err != nil {
		b.runlock(ok)
		return false, err
	}
	return ok, nil
}

func (b *fsBackend) runlock(locked bool) {
	if locked {
		durable.Unlock(b.log)
	}
	b.mu.Unlock()
}

// peekLocked brings the overlay up to date with the log while another
// process holds its lock, without writing anything: it reads the complete
// records and stops at the first one that is not (yet) whole, which a
// writer is appending or which the next lock holder cuts off. A complete
// record is never cut off, so what it adds to the overlay stays true. A log
// replaced by a flush elsewhere is reopened; the batches of the old one
// are in the refs and packs by then.
func (b *fsBackend) peekLocked() error {
	pid, err := durable.PathID(b.logPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if b.logIno == 0 {
		if b.logIno, err = durable.FileID(b.log); err != nil {
			return err
		}
	}
	if pid != b.logIno {
		nf, err := durable.OpenFile(b.logPath, os.O_RDWR, 0o644)
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
		b.log.Close()
		b.log, b.logIno = nf, id
		b.resetOverlay()
	}
	fi, err := b.log.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if b.logOff == 0 {
		if size < int64(len(wal.Magic)) {
			return nil
		}
		head := make([]byte, len(wal.Magic))
		if _, err := b.log.ReadAt(head, 0); err != nil {
			return err
		}
		if string(head) != string(wal.Magic) {
			return fmt.Errorf("%s is not a Thoughtbox log", b.logPath)
		}
		b.logOff = int64(len(wal.Magic))
	}
	var hdr [8]byte
	for b.logOff+8 <= size {
		if _, err := b.log.ReadAt(hdr[:], b.logOff); err != nil {
			return err
		}
		length := int64(binary.BigEndian.Uint32(hdr[:4]))
		if length == 0 || b.logOff+8+length > size {
			return nil
		}
		buf := make([]byte, 8+length)
		if _, err := b.log.ReadAt(buf, b.logOff); err != nil {
			return err
		}
		rec, _, err := wal.DecodeRecord(buf)
		if err != nil || rec == nil {
			return nil
		}
		b.applyLocked(rec)
		b.logOff += 8 + length
	}
	return nil
}

// syncLocked brings the overlay up to date with the log file. A flush in
// another process may have replaced the file; a process killed mid-append
// may have left a torn record at the end, which was never acknowledged and
// is cut off here.
func (b *fsBackend) syncLocked() error {
	for {
		pid, err := durable.PathID(b.logPath)
		if err == nil && b.logIno != 0 && pid == b.logIno {
			break
		}
		if err == nil && b.logIno == 0 {
			fid, ferr := durable.FileID(b.log)
			if ferr != nil {
				return ferr
			}
			if fid == pid {
				b.logIno = fid
				continue
			}
		}
		nf, err := durable.OpenFile(b.logPath, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		if err := durable.Lock(context.Background(), nf, b.logRec, b.lockTimeout); err != nil {
			nf.Close()
			return fmt.Errorf("log of %s: %w", b.gitDir, err)
		}
		fid, err := durable.FileID(nf)
		if err != nil {
			nf.Close()
			return err
		}
		durable.Unlock(b.log)
		b.log.Close()
		b.log, b.logIno = nf, fid
		b.resetOverlay()
	}
	fi, err := b.log.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if b.logOff == 0 {
		if size < int64(len(wal.Magic)) {
			// new (or never completed) log: start it
			if err := b.log.Truncate(0); err != nil {
				return err
			}
			if _, err := b.log.WriteAt(wal.Magic, 0); err != nil {
				return err
			}
			if err := durable.Datasync(b.log); err != nil {
				return err
			}
			if err := syncDir(filepath.Dir(b.logPath)); err != nil {
				return err
			}
			size = int64(len(wal.Magic))
		} else {
			head := make([]byte, len(wal.Magic))
			if _, err := b.log.ReadAt(head, 0); err != nil {
				return err
			}
			if string(head) != string(wal.Magic) {
				return fmt.Errorf("%s is not a Thoughtbox log", b.logPath)
			}
		}
		b.logOff = int64(len(wal.Magic))
	}
	if size < b.logOff {
		return fmt.Errorf("%s shrank from %d to %d bytes under its lock", b.logPath, b.logOff, size)
	}
	b.logSize = size
	// Records follow one another up to the end of the file or to the
	// zeros a writer laid down ahead of itself (a record's length is never
	// zero): see commitGroup.
	var hdr [8]byte
	for b.logOff < size {
		n, err := b.log.ReadAt(hdr[:], b.logOff)
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
		var rec *batch
		if n == len(hdr) && b.logOff+8+length <= size {
			buf := make([]byte, 8+length)
			if _, err := b.log.ReadAt(buf, b.logOff); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			if rec, _, err = wal.DecodeRecord(buf); err != nil && !errors.Is(err, wal.ErrTorn) {
				return err
			}
		}
		if rec == nil {
			// We hold the lock, so nobody is writing: this is a write that
			// died before its fsync — unless intact records follow, which
			// makes it damage (checkTornTail): then nothing is cut.
			if err := b.checkTornTail(b.logOff, size); err != nil {
				return err
			}
			if err := b.log.Truncate(b.logOff); err != nil {
				return err
			}
			b.logSize = b.logOff
			return durable.Datasync(b.log)
		}
		b.applyLocked(rec)
		b.logOff += 8 + length
	}
	return nil
}

func (b *fsBackend) applyLocked(rec *batch) {
	b.recs = append(b.recs, rec)
	for _, u := range rec.Updates {
		b.refs[u.Name] = u.New
	}
	for i := range rec.Objects {
		o := &rec.Objects[i]
		if _, ok := b.objs[o.ID]; !ok {
			b.objs[o.ID] = o
		}
	}
}

func (b *fsBackend) refLocked(name string) (hash, error) {
	if h, ok := b.refs[name]; ok {
		return h, nil
	}
	return refs.Read(b.gitDir, name)
}

func (b *fsBackend) readRef(name string) (hash, error) {
	locked, err := b.rlock()
	if err != nil {
		return zeroHash, err
	}
	defer b.runlock(locked)
	return b.refLocked(name)
}

func (b *fsBackend) listRefs(prefix string) (map[string]hash, error) {
	locked, err := b.rlock()
	if err != nil {
		return nil, err
	}
	defer b.runlock(locked)
	refs, err := refs.List(b.gitDir, prefix)
	if err != nil {
		return nil, err
	}
	for name, h := range b.refs {
		if strings.HasPrefix(name, prefix) {
			if h == zeroHash {
				delete(refs, name) // deleted in the log, not yet on disk
			} else {
				refs[name] = h
			}
		}
	}
	return refs, nil
}

// apply commits a batch durably. Callers commit for each other (group
// commit): the first to arrive leads — it takes every batch queued so far,
// appends them with one fsync, and wakes their callers — while the others
// wait; when it is done, the first caller still waiting leads the next
// group. A lone writer thus commits on its own goroutine, with no handoff
// to a committing goroutine and back.
func (b *fsBackend) apply(ctx context.Context, bt *batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.readOnly {
		return fmt.Errorf("%s: %w", b.gitDir, ErrReadOnly)
	}
	r := &applyReq{b: bt, done: make(chan struct{}), promote: make(chan struct{}, 1)}
	b.cmu.Lock()
	if b.stopping {
		b.cmu.Unlock()
		return errors.New("store is closed")
	}
	b.inflight.Add(1)
	defer b.inflight.Done()
	b.queue = append(b.queue, r)
	if b.leading {
		b.cmu.Unlock()
		// Once queued, the batch may be committed; wait for the verdict
		// rather than report a cancellation that did not happen.
		select {
		case <-r.done:
			return r.err
		case <-r.promote:
		}
		b.cmu.Lock()
	} else {
		b.leading = true
	}
	group := b.queue
	b.queue = nil
	b.cmu.Unlock()

	b.commitGroup(group)
	for _, g := range group {
		close(g.done)
	}

	b.cmu.Lock()
	if len(b.queue) > 0 {
		b.queue[0].promote <- struct{}{} // leading stays true: handed on
	} else {
		b.leading = false
	}
	b.cmu.Unlock()
	return r.err
}

func (b *fsBackend) commitGroup(group []*applyReq) {
	if err := b.lock(); err != nil {
		for _, r := range group {
			r.err = err
		}
		return
	}
	defer b.unlock()
	staged := map[string]hash{}
	var buf []byte
	var accepted []*applyReq
	for _, r := range group {
		ok := true
		for _, u := range r.b.Updates {
			cur, seen := staged[u.Name]
			if !seen {
				var err error
				if cur, err = b.refLocked(u.Name); err != nil {
					r.err = err
					ok = false
					break
				}
			}
			if cur != u.Old {
				r.err = errConflict
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		for _, u := range r.b.Updates {
			staged[u.Name] = u.New
		}
		buf = wal.AppendRecord(buf, r.b)
		accepted = append(accepted, r)
	}
	if len(buf) == 0 {
		return
	}
	// Overwriting zeros already in the file needs only the data synced;
	// growing the file makes each fdatasync commit the file system's
	// journal too. So the log is extended ahead of its end, with zeros,
	// logAhead bytes at a time.
	end := b.logOff + int64(len(buf))
	if end > b.logSize {
		grown := end + logAhead
		buf = append(buf, make([]byte, grown-end)...)
		b.logSize = grown
	}
	_, err := b.log.WriteAt(buf, b.logOff)
	buf = buf[:end-b.logOff]
	if err == nil {
		err = durable.Datasync(b.log)
	}
	if err != nil {
		b.log.Truncate(b.logOff)
		b.logSize = b.logOff
		for _, r := range accepted {
			r.err = fmt.Errorf("write log: %w", err)
		}
		return
	}
	for _, r := range accepted {
		b.applyLocked(r.b)
	}
	b.wrote = true
	b.logOff += int64(len(buf))
	if b.logOff >= bigLog {
		select {
		case b.bigLog <- struct{}{}:
		default:
		}
	}
}

func (b *fsBackend) readObject(id hash) (objType, []byte, error) {
	// Only the overlay needs the log lock; the packs have their own, so
	// that reads run in parallel (a session load reads on two goroutines).
	b.mu.Lock()
	_, logged := b.objs[id]
	var t objType
	var data []byte
	var err error
	if logged {
		t, data, err = b.resolveLocked(id, 0)
	}
	b.mu.Unlock()
	if !logged {
		t, data, err = b.gitRead(id)
	}
	if !errors.Is(err, errNotFound) {
		return t, data, err
	}
	// Perhaps another process logged it: catch up and look again.
	locked, err := b.rlock()
	if err != nil {
		return 0, nil, err
	}
	defer b.runlock(locked)
	return b.resolveLocked(id, 0)
}

// resolveLocked reads an object from the overlay, rebuilding it from its
// base when it was logged as an edit, or else from the repository.
func (b *fsBackend) resolveLocked(id hash, depth int) (objType, []byte, error) {
	o, ok := b.objs[id]
	if !ok {
		return b.gitRead(id)
	}
	if o.Base == zeroHash {
		return o.Type, o.Data, nil
	}
	if depth > 100000 {
		return 0, nil, fmt.Errorf("object %s: edit chain too long", id)
	}
	if data, ok := b.rebuilt.get(id); ok {
		return o.Type, data, nil
	}
	_, base, err := b.resolveLocked(o.Base, depth+1)
	if err != nil {
		return 0, nil, fmt.Errorf("object %s: base %s: %w", id, o.Base, err)
	}
	data, err := o.Edit.Apply(base)
	if err == nil && depth == 0 {
		b.rebuilt.put(id, data)
	}
	return o.Type, data, err
}

// rebuiltCache holds recently rebuilt objects, at most about max bytes, in
// two generations: when the newer one fills, the older is dropped. That
// keeps what was used lately without bookkeeping per entry.
type rebuiltCache struct {
	cur, old map[hash][]byte
	curBytes int
}

// rebuiltMax bounds the cache; a folder tree of 10,000 thoughts is about
// 400 KB, so this holds the latest versions of a few dozen busy sessions.
const rebuiltMax = 16 << 20

// rebuiltMin is the size below which rebuilding is cheaper than caching.
const rebuiltMin = 4 << 10

func (c *rebuiltCache) get(id hash) ([]byte, bool) {
	if d, ok := c.cur[id]; ok {
		return d, true
	}
	d, ok := c.old[id]
	if ok {
		c.put(id, d)
	}
	return d, ok
}

func (c *rebuiltCache) put(id hash, data []byte) {
	if len(data) < rebuiltMin || len(data) > rebuiltMax/4 {
		return
	}
	if c.curBytes+len(data) > rebuiltMax/2 {
		c.old, c.cur, c.curBytes = c.cur, nil, 0
	}
	if c.cur == nil {
		c.cur = map[hash][]byte{}
	}
	if _, ok := c.cur[id]; !ok {
		c.cur[id] = data
		c.curBytes += len(data)
	}
}

// gitRead reads an object from the repository: our pack set, then loose
// objects through go-git, then — in case another process packed it — the
// pack set again after a refresh.
func (b *fsBackend) gitRead(id hash) (objType, []byte, error) {
	t, data, err := b.packs.Read(id)
	if !errors.Is(err, errNotFound) {
		return t, data, err
	}
	if t, data, err := b.looseRead(id); !errors.Is(err, errNotFound) {
		return t, data, err
	}
	if err := b.packs.Refresh(); err != nil {
		return 0, nil, err
	}
	t, data, err = b.packs.Read(id)
	if errors.Is(err, errNotFound) {
		return 0, nil, fmt.Errorf("object %s: %w", id, errNotFound)
	}
	return t, data, err
}

func (b *fsBackend) looseRead(id hash) (objType, []byte, error) {
	path := filepath.Join(b.gitDir, "objects", id.String()[:2], id.String()[2:])
	if _, err := os.Stat(path); err != nil {
		return 0, nil, errNotFound
	}
	b.gitMu.Lock()
	defer b.gitMu.Unlock()
	return readEncoded(b.st, id)
}

func (b *fsBackend) gitHas(id hash) bool {
	if b.packs.Has(id) {
		return true
	}
	_, err := os.Stat(filepath.Join(b.gitDir, "objects", id.String()[:2], id.String()[2:]))
	return err == nil
}

// The flusher's pace. A flush costs about the same whatever it carries (a
// pack and its index, the refs and the log, each synced, then perhaps a
// merge), and the log has already made every thought durable, so while
// writers are busy the flusher waits longer and carries more: after a
// flush of at least busyRecords records the wait doubles, up to
// maxStretch times the configured interval; a quiet tick brings it back.
// A log past bigLog bytes is flushed at once, which bounds the overlay
// and what another process replays.
const (
	busyRecords = 32
	maxStretch  = 4
	bigLog      = 8 << 20
)

// nextFlushWait is the flusher's wait after a tick that found pending
// records (0 for none), given the wait before it.
func nextFlushWait(every, prev time.Duration, pending int) time.Duration {
	if pending < busyRecords {
		return every
	}
	return min(max(2*prev, every), maxStretch*every)
}

func (b *fsBackend) flusher(every time.Duration) {
	defer b.wg.Done()
	wait := every
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		case <-b.bigLog:
		}
		b.mu.Lock()
		pending := len(b.recs)
		b.mu.Unlock()
		if pending > 0 {
			if err := b.flushSoon(); err != nil {
				b.logger.Warn("flush failed; the log keeps the data, retrying", "repo", b.gitDir, "err", err)
			}
		}
		wait = nextFlushWait(every, wait, pending)
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(wait)
	}
}

// flush publishes everything logged so far — by this process or another —
// waiting for a flush in progress elsewhere, whose snapshot may predate our
// last batches. The background flusher does not wait (flushSoon).
func (b *fsBackend) flush() error { return b.flushAndClean(true, false) }

func (b *fsBackend) flushSoon() error { return b.flushAndClean(false, false) }

// flushAndClean moves the logged batches into a pack and the refs, then drops
// them from the log. Only one process flushes at a time (flush.lock), so the
// ref .lock files and temporary files it finds on entry with clean set were
// left by a killed flusher and are removed.
//
// With wait, it waits for the flush lock at most lockTimeout; otherwise
// it gives up at once when another process holds the flush lock — or,
// when cleaning (at open), the log lock: that process is alive and will
// publish the log.
func (b *fsBackend) flushAndClean(wait, clean bool) error {
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	fl, err := durable.OpenFile(b.flushPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer fl.Close()
	if wait {
		if err := durable.Lock(context.Background(), fl, durable.RecordIn(fl), b.lockTimeout); err != nil {
			return fmt.Errorf("flush of %s: %w", b.gitDir, err)
		}
	} else if ok, err := durable.TryLock(fl, durable.RecordIn(fl)); err != nil || !ok {
		return err // another process is flushing; the next tick retries
	}
	defer durable.Unlock(fl)
	if clean {
		// Tried without waiting, and first: a stuck process holding the
		// log lock must not keep this one from opening.
		b.mu.Lock()
		ok, err := durable.TryLock(b.log, b.logRec)
		if ok {
			durable.Unlock(b.log)
		}
		b.mu.Unlock()
		if err != nil || !ok {
			return err
		}
		if err := b.removeStaleFiles(); err != nil {
			return err
		}
		if b.looseRefs >= packRefsEvery {
			if err := b.lock(); err != nil {
				return err
			}
			err := refs.Pack(b.gitDir)
			b.unlock()
			if err != nil {
				return fmt.Errorf("pack refs: %w", err)
			}
			b.looseRefs = 0
		}
	}

	if err := b.lock(); err != nil {
		return err
	}
	recs := b.recs
	end := b.logOff
	ino := b.logIno
	b.unlock()
	if len(recs) == 0 {
		return nil
	}

	// Only when recovering can logged objects already be in the repository
	// (packed by a flush that died before trimming the log).
	var has func(hash) bool
	if clean {
		has = b.gitHas
	}
	plan, err := pack.Plan(recs, b.heads, has, func(id hash) ([]byte, error) {
		_, data, err := b.readObject(id)
		return data, err
	})
	if err != nil {
		return err
	}
	objs := plan.Objects
	b.nextLinks, b.nextHeads = plan.Links, plan.Heads
	if len(objs) > 0 {
		name, err := pack.Write(filepath.Join(b.gitDir, "objects", "pack"), objs)
		if err != nil {
			return fmt.Errorf("write pack: %w", err)
		}
		// Only an optimisation for merges: not synced, and harmless if lost.
		pack.WriteLinks(b.linksDir(), "pack-"+name.String(), b.nextLinks)
		if err := b.packs.Refresh(); err != nil {
			return err
		}
	}

	if err := b.publish(recs, end, ino); err != nil {
		return err
	}
	return b.maybeMerge()
}

// publish points the refs at what the flush packed and drops those batches
// from the log. The refs are written without the log lock: until the log is
// trimmed, every reader and every compare-and-swap sees these refs through
// the overlay, which wins over disk, so writers need not wait for the ref
// files' fsyncs. Only the trim — and packing refs, which must look atomic
// to a listing — happens under the lock.
func (b *fsBackend) publish(recs []*batch, end int64, ino uint64) error {
	finals := map[string]hash{}
	for _, r := range recs {
		for _, u := range r.Updates {
			finals[u.Name] = u.New
		}
	}
	// The log already serialised every writer of these refs (compare-and-
	// swap when a batch was logged), so the flusher only publishes values.
	dirs := map[string]bool{}
	for name, h := range finals {
		if h == zeroHash {
			d, err := refs.Delete(b.gitDir, name)
			if err != nil {
				return err
			}
			dirs[d] = true
			continue
		}
		ds, err := refs.Write(b.gitDir, name, h)
		if errors.Is(err, fs.ErrExist) {
			// We hold flush.lock, so no live flusher of ours owns this
			// lock: a flusher in a process that died left it.
			os.Remove(filepath.Join(b.gitDir, filepath.FromSlash(name)) + ".lock")
			ds, err = refs.Write(b.gitDir, name, h)
		}
		if err != nil {
			return err
		}
		for _, d := range ds {
			dirs[d] = true
		}
	}
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}

	if err := b.lock(); err != nil {
		return err
	}
	defer b.unlock()
	if b.logIno != ino || b.logOff < end {
		return fmt.Errorf("log was replaced during a flush")
	}
	b.looseRefs += len(finals)
	if b.looseRefs >= packRefsEvery {
		if err := refs.Pack(b.gitDir); err != nil {
			return fmt.Errorf("pack refs: %w", err)
		}
		b.looseRefs = 0
	}
	if err := b.truncateLogLocked(end); err != nil {
		return err
	}
	b.heads, b.nextHeads = b.nextHeads, nil
	return nil
}

// maybeMerge merges packs when there are too many; the caller holds the
// flush lock, so no other process adds or merges packs meanwhile.
func (b *fsBackend) maybeMerge() error {
	if err := b.packs.Refresh(); err != nil {
		return err
	}
	pick := b.packs.MergeCandidates()
	if len(pick) < 2 {
		return nil
	}
	if err := pack.Merge(filepath.Join(b.gitDir, "objects", "pack"), b.linksDir(), pick, b.packs.Read); err != nil {
		return fmt.Errorf("merge packs: %w", err)
	}
	return b.packs.Refresh()
}

// truncateLogLocked replaces the log with one holding only the records after
// offset end, which arrived while the flush was writing its pack.
func (b *fsBackend) truncateLogLocked(end int64) error {
	rest := make([]byte, b.logOff-end)
	if _, err := b.log.ReadAt(rest, end); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	tmp := b.logPath + ".tmp"
	os.Remove(tmp)
	f, err := durable.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(append([]byte{}, wal.Magic...), rest...))
	if err == nil {
		err = durable.Datasync(f)
	}
	if err == nil {
		// Nobody else has it open yet, so this cannot wait.
		err = durable.Lock(context.Background(), f, b.logRec, b.lockTimeout)
	}
	if err == nil {
		err = durable.Rename(tmp, b.logPath)
	}
	if err == nil {
		err = syncDir(filepath.Dir(b.logPath))
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	fid, err := durable.FileID(f)
	if err != nil {
		return err
	}
	old := b.log
	b.log, b.logIno = f, fid
	durable.Unlock(old)
	old.Close()
	b.resetOverlay()
	return b.syncLocked()
}

func (b *fsBackend) removeStaleFiles() error {
	packDir := filepath.Join(b.gitDir, "objects", "pack")
	entries, _ := os.ReadDir(packDir)
	idx := map[string]bool{}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".idx"); ok {
			idx[name] = true
		}
	}
	for _, e := range entries {
		name := e.Name()
		// A pack is renamed into place before its index, and a merge
		// removes the index before the pack: a pack without an index is
		// what a flusher killed between the two left.
		if strings.HasPrefix(name, "tmp_") || (strings.HasSuffix(name, ".pack") && !idx[strings.TrimSuffix(name, ".pack")]) {
			os.Remove(filepath.Join(packDir, name))
		}
	}
	links, _ := os.ReadDir(b.linksDir())
	for _, e := range links {
		if !idx[e.Name()] {
			os.Remove(filepath.Join(b.linksDir(), e.Name()))
		}
	}
	os.Remove(b.logPath + ".tmp")
	os.Remove(filepath.Join(b.gitDir, "packed-refs.lock")) // only our flusher packs refs
	// refs/heads/main holds only our README commit; nobody else writes it.
	os.Remove(filepath.Join(b.gitDir, "refs", "heads", "main.lock"))
	for _, root := range []string{"refs/heads/sessions", "refs/heads/knowledge", "refs/heads/notebooks"} {
		filepath.WalkDir(filepath.Join(b.gitDir, filepath.FromSlash(root)), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if strings.HasSuffix(p, ".lock") {
					os.Remove(p)
				} else {
					b.looseRefs++
				}
			}
			return nil
		})
	}
	return nil
}

func (b *fsBackend) linksDir() string { return filepath.Join(b.gitDir, "thoughtbox", "links") }

func (b *fsBackend) close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	b.cmu.Lock()
	b.stopping = true
	b.cmu.Unlock()
	b.inflight.Wait()
	close(b.stop)
	b.wg.Wait()
	var err error
	b.mu.Lock()
	wrote := b.wrote
	b.mu.Unlock()
	if wrote {
		// What this process logged is durable; publishing it is a
		// courtesy to plain Git. If a stuck process holds the flush lock
		// past the timeout, the log keeps the batches for the next flush
		// by anyone (every open recovers it), so closing still succeeds.
		if err = b.flush(); errors.Is(err, durable.ErrHeld) {
			err = nil
		}
	}
	b.mu.Lock()
	b.log.Close()
	b.mu.Unlock()
	b.logRec.Close()
	b.packs.Close()
	b.gitMu.Lock()
	if cerr := b.st.Close(); err == nil {
		err = cerr
	}
	b.gitMu.Unlock()
	return err
}

// initBareRepo creates a bare repository the way `git init --bare` lays it
// out, if there is none.
// ErrReadOnly is returned by a write to a ledger whose files this process
// cannot write; reading it works.
var ErrReadOnly = errors.New("the ledger's files are read-only here: commands that read it work, writing needs write access to the data directory")

func initBareRepo(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return nil
	}
	for _, d := range []string{"objects/pack", "objects/info", "refs/heads", "refs/tags", "info"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		"config":      "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n",
		"description": "Thoughtbox reasoning ledger\n",
		"HEAD":        "ref: refs/heads/main\n",
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if n == "HEAD" {
			continue // written last: its presence marks a finished init
		}
		if err := os.WriteFile(filepath.Join(dir, n), []byte(files[n]), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte(files["HEAD"]), 0o644); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error { return durable.SyncDir(dir) }
