package repo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/pack"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/refs"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// Lock order. The disk repository's locks, and the store's above them, are
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
// The group-commit queue's mutex (wal.Group) is a leaf as well: Apply
// takes it to queue or hand on the lead and always lets it go before
// commitGroup takes the log lock. Nothing waits for the flush lock while
// holding the log lock; a reader never waits for another process's log
// lock (rlock), and a writer waits for one at most lockTimeout (or until
// its context ends).

// FS keeps a project in a bare repository on disk.
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
// the log's holder file); a reader never waits for it (see rlock).
type FS struct {
	gitDir    string
	flushPath string

	lockTimeout time.Duration
	logger      *slog.Logger // FSOptions.Logger: the flusher's retries
	// lockedRefRoots are the ref folders only our flusher writes.
	lockedRefRoots []string
	// sharedWithGit is FSOptions.SharedWithGit.
	sharedWithGit bool
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
	heads     map[object.Hash][]byte
	nextHeads map[object.Hash][]byte // from the flush in progress
	nextLinks []pack.Link            // from the flush in progress
	// looseRefs are the refs written as loose files since refs were last
	// packed. What packing saves is a listing of many files, so it counts
	// distinct refs, not writes: a few busy sessions rewrite the same few
	// files flush after flush, and packing those every few flushes only
	// made each next flush create their folders again.
	looseRefs map[string]struct{}

	// mu guards the log and the overlay built from it; the log's file
	// lock extends that to other processes.
	mu   sync.Mutex
	log  *wal.Log
	recs []*wal.Batch
	refs map[string]object.Hash
	objs map[object.Hash]*wal.Object
	// rebuilt keeps the content of large logged objects already rebuilt
	// from their edits: each version of a session's folder tree is an
	// edit of the one before, and a reader (above all a writer catching
	// up with another process's appends) asks for the version after the
	// one it read last, so one edit is applied instead of the whole chain
	// since the last flush. Content-addressed, so it never goes stale.
	rebuilt rebuiltCache

	// recordBuf is the last group's encoded records, kept under mu for
	// the next group to encode into: growing a fresh buffer to a
	// thought's 1.5 kB took eight allocations and 3.5 kB of garbage a
	// thought. Not kept past maxRecordBuf.
	recordBuf []byte

	// group is the group-commit queue (see Apply).
	group   wal.Group
	bigLog  chan struct{} // the log passed bigLog bytes: flush now
	flushMu sync.Mutex
	// mergeOwed is set when a busy flush put off merging packs (see
	// busyMaxPacks); the flusher's next quiet tick merges them.
	mergeOwed atomic.Bool
	stop      chan struct{}
	wg        sync.WaitGroup
	closed    bool

	// stagedMu guards staged: packs a pull received and is still
	// checking, outside objects/ (see Stage). Reads find their objects
	// after the repository's own; nothing counts them as the
	// repository's (gitHas does not look there).
	stagedMu sync.Mutex
	staged   []*pack.Set
}

// Stage makes the objects of a pack set readable through ReadObject
// without making them part of the repository: a pull checks what it
// received before any of it enters objects/. Unstage ends that.
func (b *FS) Stage(set *pack.Set) {
	b.stagedMu.Lock()
	b.staged = append(b.staged, set)
	b.stagedMu.Unlock()
}

// Unstage stops reading from a set Stage added.
func (b *FS) Unstage(set *pack.Set) {
	b.stagedMu.Lock()
	b.staged = slices.DeleteFunc(b.staged, func(s *pack.Set) bool { return s == set })
	b.stagedMu.Unlock()
}

// Indexed is pack.Set.Indexed over the repository's packs and then the
// staged ones: what the indexer found of an object of a pack this process
// indexed.
func (b *FS) Indexed(id object.Hash) (object.Type, int, bool) {
	if t, size, ok := b.packs.Indexed(id); ok {
		return t, size, ok
	}
	b.stagedMu.Lock()
	sets := b.staged
	b.stagedMu.Unlock()
	for _, set := range sets {
		if t, size, ok := set.Indexed(id); ok {
			return t, size, ok
		}
	}
	return 0, 0, false
}

func (b *FS) readStaged(id object.Hash) (object.Type, []byte, error) {
	b.stagedMu.Lock()
	sets := b.staged
	b.stagedMu.Unlock()
	for _, set := range sets {
		if t, data, err := set.Read(id); !errors.Is(err, ErrNotFound) {
			return t, data, err
		}
	}
	return 0, nil, ErrNotFound
}

// PackRefsEvery is how many distinct loose refs trigger packing refs.
const PackRefsEvery = 256

// FSOptions configure OpenFS.
type FSOptions struct {
	// FlushEvery is the flusher's interval.
	FlushEvery time.Duration
	// LockTimeout bounds a writer's wait for another process's lock.
	LockTimeout time.Duration
	// Logger receives the flusher's failures (it retries them); nil
	// discards them.
	Logger *slog.Logger
	// LockedRefRoots are the ref folders (as "refs/heads/sessions") whose
	// writers are only our flushers: a <ref>.lock found there at open was
	// left by a killed flusher and is removed.
	LockedRefRoots []string
	// Damage wraps the error a damaged log gives (see wal.Options.Damage).
	Damage func(error) error
	// SharedWithGit says the repository is a code repository that git and
	// its user write too (gc, repack, maintenance, commits in several
	// worktrees). The engine then takes nothing over that git may hold:
	// packed-refs.lock is waited for, never removed; a ref's lock under
	// LockedRefRoots is removed only once it is older than any git
	// command holds one (staleLockAge); temporary and index-less files in
	// the pack folder are left to git's own gc; refs are never packed by
	// us (git gc and maintenance pack them); and only packs this engine
	// wrote are merged (those with a links file, see ownPack).
	SharedWithGit bool
}

// OpenFS opens (creating if needed) the bare repository at gitDir and
// recovers into it what a crashed writer left in its log.
func OpenFS(gitDir string, opt FSOptions) (*FS, error) {
	if err := initBareRepo(gitDir); err != nil {
		return nil, err
	}
	tbDir := filepath.Join(gitDir, "thoughtbox")
	if err := os.MkdirAll(tbDir, 0o755); err != nil {
		return nil, err
	}
	logger := opt.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	st := filesystem.NewStorageWithOptions(osfs.New(gitDir), cache.NewObjectLRU(32*cache.MiByte),
		filesystem.Options{KeepDescriptors: true})
	b := &FS{
		gitDir:    gitDir,
		flushPath: filepath.Join(tbDir, "flush.lock"),
		st:        st,

		lockTimeout:    opt.LockTimeout,
		logger:         logger,
		lockedRefRoots: opt.LockedRefRoots,
		sharedWithGit:  opt.SharedWithGit,
		packs:          pack.NewSet(filepath.Join(gitDir, "objects", "pack")),
		bigLog:         make(chan struct{}, 1),
		stop:           make(chan struct{}),
		looseRefs:      map[string]struct{}{},
	}
	b.resetOverlay()
	log, readOnly, err := wal.Open(filepath.Join(tbDir, "log"), wal.Options{
		Holder:  filepath.Join(tbDir, "log.holder"),
		Timeout: opt.LockTimeout,
		Name:    gitDir,
		Reset:   b.resetOverlay,
		Record:  b.applyLocked,
		Damage:  opt.Damage,
	})
	if err != nil {
		return nil, err
	}
	b.log, b.readOnly = log, readOnly
	if err := b.packs.Refresh(); err != nil {
		log.Close()
		return nil, err
	}
	if b.readOnly {
		return b, nil
	}
	// A crash may have left batches in the log: recover them into the
	// repository before serving, so plain git sees everything acknowledged.
	// When another process holds the flush or log lock, it is alive and
	// publishes the log itself; opening does not wait for it. On a full
	// disk the recovery waits instead: reads are served from the log,
	// which keeps every batch until the flusher can publish it.
	if err := b.flushAndClean(context.Background(), false, true); err != nil {
		if !durable.DiskFull(err) {
			log.Close()
			return nil, fmt.Errorf("recover %s: %w", gitDir, err)
		}
		logger.Warn("the disk is full: the log's batches are read from the log and published once there is room", "repo", gitDir, "err", err)
	}
	b.wg.Add(1)
	go b.flusher(opt.FlushEvery)
	return b, nil
}

// GitDir is the repository's directory.
func (b *FS) GitDir() string { return b.gitDir }

// ReadOnly says whether this process may not write the repository.
func (b *FS) ReadOnly() bool { return b.readOnly }

// LogPath is the write-ahead log's file.
func (b *FS) LogPath() string { return b.log.Path() }

// Packs is the repository's pack set, for readers that look at pack
// entries themselves (verify).
func (b *FS) Packs() *pack.Set { return b.packs }

func (b *FS) resetOverlay() {
	b.recs = nil
	b.refs = map[string]object.Hash{}
	b.objs = map[object.Hash]*wal.Object{}
}

// lock takes the log for this process and, by its file lock, from other
// processes, then catches up with what they appended. It waits for another
// process at most lockTimeout, or until ctx ends: a stuck holder (a
// suspended server) makes a writer fail with a *durable.HeldError naming
// it, not hang.
//
// Lock order: a session's chain lock (Store.lockSession), then the flush
// lock (flushMu, then flush.lock), then the log lock (mu, then the log's
// file lock). Nothing waits for the flush lock while holding the log lock.
func (b *FS) lock(ctx context.Context) error {
	b.mu.Lock()
	if err := b.log.Lock(ctx); err != nil {
		b.mu.Unlock()
		return err
	}
	return nil
}

func (b *FS) unlock() {
	b.log.Unlock()
	b.mu.Unlock()
}

// rlock is lock for readers, who never wait for another process: when the
// log's file lock is free it is taken as by lock; when another process
// holds it, the overlay catches up from the log without it (wal.Log.RLock).
// Either way b.mu is held; runlock releases what was taken.
func (b *FS) rlock(ctx context.Context) (locked bool, err error) {
	b.mu.Lock()
	locked, err = b.log.RLock(ctx)
	if err != nil {
		b.mu.Unlock()
		return false, err
	}
	return locked, nil
}

func (b *FS) runlock(locked bool) {
	b.log.RUnlock(locked)
	b.mu.Unlock()
}

func (b *FS) applyLocked(rec *wal.Batch) {
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

func (b *FS) refLocked(name string) (object.Hash, error) {
	if h, ok := b.refs[name]; ok {
		return h, nil
	}
	return refs.Read(b.gitDir, name)
}

// ReadRef reads a ref through the overlay; ZeroHash when it does not exist.
func (b *FS) ReadRef(ctx context.Context, name string) (object.Hash, error) {
	locked, err := b.rlock(ctx)
	if err != nil {
		return object.ZeroHash, err
	}
	defer b.runlock(locked)
	return b.refLocked(name)
}

// ListRefs lists the refs under prefix, logged moves laid over the disk.
func (b *FS) ListRefs(ctx context.Context, prefix string) (map[string]object.Hash, error) {
	locked, err := b.rlock(ctx)
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
			if h == object.ZeroHash {
				delete(refs, name) // deleted in the log, not yet on disk
			} else {
				refs[name] = h
			}
		}
	}
	return refs, nil
}

// Apply commits a batch durably. Callers commit for each other (group
// commit, see wal.Group): one append and one fsync for every batch queued
// meanwhile.
//
// ctx is honoured until the batch is queued; once queued it may be
// committed by another caller's group, so the verdict is awaited.
func (b *FS) Apply(ctx context.Context, bt *wal.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.readOnly {
		return fmt.Errorf("%s: %w", b.gitDir, ErrReadOnly)
	}
	return b.group.Commit(ctx, bt, b.commitGroup)
}

func (b *FS) commitGroup(group []*wal.Request) {
	// The group carries other callers' batches, so no one caller's
	// context may abandon it; the lock wait is bounded by lockTimeout.
	if err := b.lock(context.Background()); err != nil {
		for _, r := range group {
			r.Err = err
		}
		return
	}
	defer b.unlock()
	staged := map[string]object.Hash{}
	buf := b.recordBuf[:0]
	defer func() {
		if cap(buf) <= maxRecordBuf {
			b.recordBuf = buf[:0]
		}
	}()
	var accepted []*wal.Request
	for _, r := range group {
		ok := true
		for _, u := range r.Batch.Updates {
			cur, seen := staged[u.Name]
			if !seen {
				var err error
				if cur, err = b.refLocked(u.Name); err != nil {
					r.Err = err
					ok = false
					break
				}
			}
			if cur != u.Old {
				r.Err = ErrConflict
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		for _, u := range r.Batch.Updates {
			staged[u.Name] = u.New
		}
		buf = wal.AppendRecord(buf, r.Batch)
		accepted = append(accepted, r)
	}
	if len(buf) == 0 {
		return
	}
	// One write and one fsync for the whole group.
	if err := b.log.Append(buf); err != nil {
		for _, r := range accepted {
			r.Err = fmt.Errorf("write log: %w", err)
		}
		return
	}
	for _, r := range accepted {
		b.applyLocked(r.Batch)
	}
	b.wrote = true
	if b.log.End() >= bigLog {
		select {
		case b.bigLog <- struct{}{}:
		default:
		}
	}
}

// maxRecordBuf bounds the record buffer kept between groups: a group of
// 64 agents' thoughts, not one carrying a large import.
const maxRecordBuf = 256 << 10

// ReadObject reads an object from the overlay, the packs or loose files.
func (b *FS) ReadObject(ctx context.Context, id object.Hash) (object.Type, []byte, error) {
	// Only the overlay needs the log lock; the packs have their own, so
	// that reads run in parallel (a session load reads on two goroutines).
	b.mu.Lock()
	_, logged := b.objs[id]
	var t object.Type
	var data []byte
	var err error
	if logged {
		t, data, err = b.resolveLocked(id, 0)
	}
	b.mu.Unlock()
	if !logged {
		t, data, err = b.gitRead(id)
	}
	if !errors.Is(err, ErrNotFound) {
		return t, data, err
	}
	// Perhaps another process logged it: catch up and look again.
	locked, err := b.rlock(ctx)
	if err != nil {
		return 0, nil, err
	}
	defer b.runlock(locked)
	return b.resolveLocked(id, 0)
}

// resolveLocked reads an object from the overlay, rebuilding it from its
// base when it was logged as an edit, or else from the repository.
func (b *FS) resolveLocked(id object.Hash, depth int) (object.Type, []byte, error) {
	o, ok := b.objs[id]
	if !ok {
		return b.gitRead(id)
	}
	if o.Base == object.ZeroHash {
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

// gitRead reads an object from the repository: our pack set, then loose
// objects through go-git, then — in case another process packed it — the
// pack set again after a refresh.
func (b *FS) gitRead(id object.Hash) (object.Type, []byte, error) {
	t, data, err := b.packs.Read(id)
	if !errors.Is(err, ErrNotFound) {
		return t, data, err
	}
	if t, data, err := b.readStaged(id); !errors.Is(err, ErrNotFound) {
		return t, data, err
	}
	if t, data, err := b.looseRead(id); !errors.Is(err, ErrNotFound) {
		return t, data, err
	}
	if err := b.packs.Refresh(); err != nil {
		return 0, nil, err
	}
	t, data, err = b.packs.Read(id)
	if errors.Is(err, ErrNotFound) {
		return 0, nil, fmt.Errorf("object %s: %w", id, ErrNotFound)
	}
	return t, data, err
}

func (b *FS) looseRead(id object.Hash) (object.Type, []byte, error) {
	path := filepath.Join(b.gitDir, "objects", id.String()[:2], id.String()[2:])
	if _, err := os.Stat(path); err != nil {
		return 0, nil, ErrNotFound
	}
	b.gitMu.Lock()
	defer b.gitMu.Unlock()
	return readEncoded(b.st, id)
}

// Has says whether the repository holds an object: logged, packed or
// loose; never one only staged.
func (b *FS) Has(id object.Hash) bool {
	b.mu.Lock()
	_, logged := b.objs[id]
	b.mu.Unlock()
	return logged || b.gitHas(id)
}

func (b *FS) gitHas(id object.Hash) bool {
	if b.packs.Has(id) {
		return true
	}
	_, err := os.Stat(filepath.Join(b.gitDir, "objects", id.String()[:2], id.String()[2:]))
	return err == nil
}

// The flusher's pace. Much of a flush's cost does not depend on how much
// it carries (a pack and its index, one synced file per ref moved, the
// log rewritten and synced, then perhaps a merge), and the log has
// already made every thought durable, so while writers are busy the
// flusher waits longer and carries more: after a flush of at least
// busyRecords records the wait doubles, up to maxStretch times the
// configured interval (a second at the default 100 ms); a quiet tick
// brings it back. With 64 agents writing, a short stretch left the
// flusher a large share of the server's processor time; but the overlay
// holds every batch logged since the last flush, and with a stretch of 10
// that was a second of 64 agents' thoughts, the largest part of the
// server's live heap after the session graphs. Since busy flushes put
// merges off (busyMaxPacks) a flush costs less, and a stretch of 5 (half a
// second) kept the server's processor time a thought where 10 had it while
// its memory under load fell (BENCHMARKS.md, "Tuning: what each trick was
// measured to buy"). A log past bigLog bytes is flushed at once, which
// bounds the log, the overlay and what another process replays, however
// busy the writers.
const (
	busyRecords = 32
	maxStretch  = 5
	bigLog      = 8 << 20
)

// busyMaxPacks is how many packs a busy flush lets accumulate before it
// merges them anyway. A merge reads every entry of the packs it merges
// and keeps some 160 bytes an object while it plans (64 agents × 300
// thoughts: ~130,000 objects, 19 MB; the geometric merges take in nearly
// the whole ledger now and then), on top of the writers' own live heap,
// and its work competes with theirs. So while writers keep the flusher
// busy, merges wait for a quiet tick, up to this many packs: lookups try
// the pack that answered last first, and writers read packs little.
const busyMaxPacks = 3 * pack.MaxPacks

// nextFlushWait is the flusher's wait after a tick that found pending
// records (0 for none), given the wait before it and how long the flush
// took. While busy the flusher also waits at least as long as its flush
// took, so that on a loaded machine, where a flush stretches out, it
// still works at most half the time instead of flushing back to back.
func nextFlushWait(every, prev, took time.Duration, pending int) time.Duration {
	if pending < busyRecords {
		return every
	}
	return max(min(max(2*prev, every), maxStretch*every), took)
}

func (b *FS) flusher(every time.Duration) {
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
		var took time.Duration
		if pending > 0 || b.mergeOwed.Load() {
			start := time.Now()
			if err := b.flushSoon(); err != nil {
				b.logger.Warn("flush failed; the log keeps the data, retrying", "repo", b.gitDir, "err", err)
			}
			took = time.Since(start)
		} else {
			pack.ReleaseIdle()
		}
		wait = nextFlushWait(every, wait, took, pending)
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(wait)
	}
}

// Flush publishes everything logged so far — by this process or another —
// waiting for a flush in progress elsewhere, whose snapshot may predate our
// last batches. The background flusher does not wait (flushSoon).
func (b *FS) Flush(ctx context.Context) error { return b.flushAndClean(ctx, true, false) }

func (b *FS) flushSoon() error { return b.flushAndClean(context.Background(), false, false) }

// flushAndClean moves the logged batches into a pack and the refs, then drops
// them from the log. Only one process flushes at a time (flush.lock), so the
// ref .lock files and temporary files it finds on entry with clean set were
// left by a killed flusher and are removed.
//
// With wait, it waits for the flush lock at most lockTimeout; otherwise
// it gives up at once when another process holds the flush lock — or,
// when cleaning (at open), the log lock: that process is alive and will
// publish the log.
func (b *FS) flushAndClean(ctx context.Context, wait, clean bool) error {
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	fl, err := durable.OpenFile(b.flushPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer fl.Close()
	if wait {
		if err := durable.Lock(ctx, fl, durable.RecordIn(fl), b.lockTimeout); err != nil {
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
		ok, err := b.log.TryLock()
		if ok {
			b.log.Unlock()
		}
		b.mu.Unlock()
		if err != nil || !ok {
			return err
		}
		if err := b.removeStaleFiles(!b.sharedWithGit); err != nil {
			return err
		}
		if len(b.looseRefs) >= PackRefsEvery && !b.sharedWithGit {
			if err := b.lock(ctx); err != nil {
				return err
			}
			err := refs.Pack(b.gitDir)
			b.unlock()
			if err != nil {
				return fmt.Errorf("pack refs: %w", err)
			}
			clear(b.looseRefs)
		}
	}

	if err := b.lock(ctx); err != nil {
		return err
	}
	recs := b.recs
	end := b.log.End()
	ino := b.log.ID()
	b.unlock()
	if len(recs) == 0 {
		if b.mergeOwed.Load() {
			return b.maybeMerge(false)
		}
		return nil
	}
	if clean && b.sharedWithGit {
		b.removeStaleRefLocks()
	}

	// Only when recovering can logged objects already be in the repository
	// (packed by a flush that died before trimming the log).
	var has func(object.Hash) bool
	if clean {
		has = b.gitHas
	}
	plan, err := pack.Plan(recs, b.heads, has, func(id object.Hash) ([]byte, error) {
		_, data, err := b.ReadObject(ctx, id)
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

	if err := b.publish(ctx, recs, end, ino); err != nil {
		return err
	}
	// Only the background flusher puts merges off, and only when busy: an
	// explicit Flush (close, a command) leaves the packs merged.
	return b.maybeMerge(!wait && len(recs) >= busyRecords)
}

// publish points the refs at what the flush packed and drops those batches
// from the log. The refs are written without the log lock: until the log is
// trimmed, every reader and every compare-and-swap sees these refs through
// the overlay, which wins over disk, so writers need not wait for the ref
// files' fsyncs. Only the trim — and packing refs, which must look atomic
// to a listing — happens under the lock.
func (b *FS) publish(ctx context.Context, recs []*wal.Batch, end int64, ino uint64) error {
	finals := map[string]object.Hash{}
	for _, r := range recs {
		for _, u := range r.Updates {
			finals[u.Name] = u.New
		}
	}
	// The log already serialised every writer of these refs (compare-and-
	// swap when a batch was logged), so the flusher only publishes values.
	// Deletions rewrite packed-refs, one at a time; each write is a file
	// of its own, synced before its rename, and with many sessions those
	// syncs were most of a flush's length (and the longer a flush, the
	// more the log trim after it copies), so a flush of hundreds of refs
	// runs them side by side; a smaller one, one at a time, so that the
	// log's syncs do not queue behind them (publishersFor).
	dirs := map[string]bool{}
	var writes []string
	for name, h := range finals {
		if h != object.ZeroHash {
			writes = append(writes, name)
			continue
		}
		d, err := refs.DeleteWith(b.gitDir, name, b.refLockPolicy())
		if err != nil {
			return err
		}
		dirs[d] = true
	}
	writes = b.publishPacked(writes, finals)
	var mu sync.Mutex
	err := parallel(len(writes), func(i int) error {
		name := writes[i]
		ds, err := refs.WriteWith(b.gitDir, name, finals[name], b.refLockPolicy())
		if errors.Is(err, fs.ErrExist) && !b.sharedWithGit {
			// We hold flush.lock, so no live flusher of ours owns this
			// lock: a flusher in a process that died left it.
			os.Remove(filepath.Join(b.gitDir, filepath.FromSlash(name)) + ".lock")
			ds, err = refs.Write(b.gitDir, name, finals[name])
		}
		if err != nil {
			return err
		}
		mu.Lock()
		for _, d := range ds {
			dirs[d] = true
		}
		mu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	synced := make([]string, 0, len(dirs))
	for d := range dirs {
		synced = append(synced, d)
	}
	if err := parallel(len(synced), func(i int) error { return durable.SyncDir(synced[i]) }); err != nil {
		return err
	}

	// The new log is written before the lock is taken, with what was
	// logged so far after end; only what is logged meanwhile is copied
	// under it (see wal.Log.BeginTrim). If that fails, the trim is done
	// under the lock.
	b.mu.Lock()
	tr := b.log.BeginTrim(end)
	b.mu.Unlock()
	if tr.Fill() != nil {
		tr = nil
	}
	if err := b.lock(ctx); err != nil {
		if tr != nil {
			tr.Abort()
		}
		return err
	}
	defer b.unlock()
	if b.log.ID() != ino || b.log.End() < end {
		if tr != nil {
			tr.Abort()
		}
		return fmt.Errorf("log was replaced during a flush")
	}
	for name, h := range finals {
		if h == object.ZeroHash {
			delete(b.looseRefs, name)
		}
	}
	for _, name := range writes {
		b.looseRefs[name] = struct{}{}
	}
	if len(b.looseRefs) >= PackRefsEvery && !b.sharedWithGit {
		if err := refs.Pack(b.gitDir); err != nil {
			if tr != nil {
				tr.Abort()
			}
			return fmt.Errorf("pack refs: %w", err)
		}
		clear(b.looseRefs)
	}
	if err := b.trimLog(ctx, recs, end, tr); err != nil {
		return err
	}
	b.heads, b.nextHeads = b.nextHeads, nil
	return nil
}

// packedPublishMin is the fewest refs a flush publishes by rewriting
// packed-refs rather than as loose files, and packedPublishBytes how
// large packed-refs may be for each of them: a rewrite costs what the
// file holds, loose files what the flush moves. 64 agents' flush wrote
// 64 loose refs in some 30 ms of the disk's time and 20 ms of processor
// time, most of it creating the files; one packed-refs of a few hundred
// refs takes about a millisecond.
const (
	packedPublishMin   = 8
	packedPublishBytes = 8 << 10
)

// writePacked is refs.WritePacked; tests make it fail.
var writePacked = refs.WritePacked

// publishPacked publishes, through one rewrite of packed-refs, those of
// writes that have no loose file (one would shadow the packed value),
// when they are many and packed-refs small (see packedPublishMin). It
// returns the refs left to write as loose files: all of them when the
// rewrite could not be made.
func (b *FS) publishPacked(writes []string, finals map[string]object.Hash) []string {
	if len(writes) < packedPublishMin {
		return writes
	}
	if fi, err := os.Stat(filepath.Join(b.gitDir, "packed-refs")); err == nil && fi.Size() > int64(len(writes))*packedPublishBytes {
		return writes
	}
	var loose []string
	vals := make(map[string]object.Hash, len(writes))
	for _, name := range writes {
		_, err := os.Lstat(filepath.Join(b.gitDir, filepath.FromSlash(name)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			vals[name] = finals[name]
		default:
			loose = append(loose, name)
		}
	}
	if len(vals) < packedPublishMin {
		return writes
	}
	if err := writePacked(b.gitDir, vals); err != nil {
		// Loose files publish them as before, whatever went wrong: one
		// written beside a packed-refs that did take the new values
		// holds the same value. A flush must not keep failing on a
		// packed-refs it could do without (a rename Windows refuses
		// while a reader holds the file, one that cannot be read).
		if !errors.Is(err, refs.ErrPackedBusy) {
			b.logger.Warn("publishing refs through packed-refs failed; writing them as loose files", "repo", b.gitDir, "err", err)
		}
		return writes
	}
	return loose
}

// trimLog drops the published batches recs (the log up to end) from the
// log and the overlay, finishing tr (a trim at end filled ahead of the
// lock; nil: none) or trimming anew. The overlay's batches are the log's,
// in its order (each applied as it was appended or replayed, and reset
// only when the file is replaced, which a flush in progress rules out),
// so those after recs are kept as they are instead of replayed from the
// new file; if that order cannot be vouched for, the log is replayed.
func (b *FS) trimLog(ctx context.Context, recs []*wal.Batch, end int64, tr *wal.Trimming) error {
	if n := len(recs); n == 0 || len(b.recs) < n || b.recs[n-1] != recs[n-1] || b.recs[0] != recs[0] {
		if tr != nil {
			tr.Abort()
		}
		return b.log.Trim(ctx, end)
	}
	rest := slices.Clone(b.recs[len(recs):])
	var err error
	if tr != nil {
		err = b.log.FinishTrim(ctx, tr)
	} else {
		err = b.log.TrimKept(ctx, end)
	}
	if err != nil {
		return err
	}
	b.resetOverlay()
	for _, r := range rest {
		b.applyLocked(r)
	}
	return nil
}

// publishersFor is how many of a flush's n ref files (or directories) are
// written and synced at once. Each sync ends in a flush of the disk's
// write cache, and the log's fdatasync, which every writer waits for,
// queues behind the syncs in flight. With eight at once, the flushes of
// 64 agents' thoughts (64 refs and their 64 directories) held a group
// commit up several times a run, and each such stall delays every agent's
// call at once; one at a time, such stalls were under half as many
// (BENCHMARKS.md, "Tuning: what each trick was measured to buy"). The
// flush takes longer, but it is off the writers' path. Only a flush of
// hundreds of refs (a pull, an import), whose length the syncs would
// make, runs them side by side.
func publishersFor(n int) int { return min(maxPublishers, 1+n/256) }

const maxPublishers = 8

// parallel runs fn(0..n-1) on up to publishersFor(n) goroutines and
// returns the first error; after one, no new call starts.
func parallel(n int, fn func(i int) error) error {
	if n <= 1 {
		if n == 1 {
			return fn(0)
		}
		return nil
	}
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for range min(n, publishersFor(n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next == n || first != nil {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// maybeMerge merges packs when there are too many; the caller holds the
// flush lock, so no other process adds or merges packs meanwhile. When
// busy, it merges only past busyMaxPacks and otherwise leaves the merge
// owed.
func (b *FS) maybeMerge(busy bool) error {
	if err := b.packs.Refresh(); err != nil {
		return err
	}
	pick := b.packs.MergeCandidates(b.ownPack)
	if len(pick) < 2 {
		b.mergeOwed.Store(false)
		return nil
	}
	if busy && len(b.packs.Packs()) <= busyMaxPacks {
		b.mergeOwed.Store(true)
		return nil
	}
	b.mergeOwed.Store(false)
	if err := pack.Merge(filepath.Join(b.gitDir, "objects", "pack"), b.linksDir(), pick, b.packs.Read); err != nil {
		return fmt.Errorf("merge packs: %w", err)
	}
	return b.packs.Refresh()
}

// removeStaleFiles removes what a killed flusher left; walkRefs also
// walks the ref folders (removeStaleRefLocks). Shared with git, the
// caller walks them only once the log turns out to hold batches: a
// flusher holds ref locks only while publishing batches it has not yet
// trimmed from the log, so over an empty log no lock there is a dead
// flusher's, and a flush that meets an old lock removes it anyway
// (refLockPolicy). Git leaves those refs loose until its own gc, so the
// walk opens a folder per session, on every open of every command.
func (b *FS) removeStaleFiles(walkRefs bool) error {
	packDir := filepath.Join(b.gitDir, "objects", "pack")
	entries, _ := os.ReadDir(packDir)
	idx := map[string]bool{}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".idx"); ok {
			idx[name] = true
		}
	}
	for _, e := range entries {
		if b.sharedWithGit {
			break // git's own gc removes what a killed writer left here
		}
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
	os.Remove(b.log.Path() + ".tmp")
	if !b.sharedWithGit {
		os.Remove(filepath.Join(b.gitDir, "packed-refs.lock")) // only our flusher packs refs
		// refs/heads/main holds only our README commit; nobody else writes it.
		os.Remove(filepath.Join(b.gitDir, "refs", "heads", "main.lock"))
	}
	if walkRefs {
		b.removeStaleRefLocks()
	}
	return nil
}

// removeStaleRefLocks removes the ref locks a killed flusher left in the
// ref folders only our flushers write (shared with git, only old ones: a
// young one may be git's), and counts the loose refs there.
func (b *FS) removeStaleRefLocks() {
	for _, root := range b.lockedRefRoots {
		filepath.WalkDir(filepath.Join(b.gitDir, filepath.FromSlash(root)), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if strings.HasSuffix(p, ".lock") {
					if !b.sharedWithGit || lockIsStale(p) {
						os.Remove(p)
					}
				} else if rel, err := filepath.Rel(b.gitDir, p); err == nil {
					b.looseRefs[filepath.ToSlash(rel)] = struct{}{}
				}
			}
			return nil
		})
	}
}

func (b *FS) linksDir() string { return filepath.Join(b.gitDir, "thoughtbox", "links") }

// ownPack says whether this engine may merge the pack: in a standalone
// repository every pack is ours; in one shared with git, only a pack with
// a links file (written for every pack we write or merge) is. A lost
// links file only means that pack is left to git's gc.
func (b *FS) ownPack(name string) bool {
	if !b.sharedWithGit {
		return true
	}
	_, err := os.Stat(filepath.Join(b.linksDir(), name))
	return err == nil
}

// staleLockAge is how old a ref's lock under our own ref folders must be
// before an engine shared with git takes it for a dead flusher's: git
// holds a ref's lock (pack-refs pruning it, gc) for milliseconds.
const staleLockAge = 10 * time.Second

func lockIsStale(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && time.Since(fi.ModTime()) > staleLockAge
}

// busyWait bounds how long a flush waits for a lock git holds before it
// gives up (the log keeps the data; the next flush tries again); git's
// own core.packedRefsTimeout defaults to the same second.
const busyWait = time.Second

// refLockPolicy is what an existing lock means when a flush moves a ref.
// Standalone, a lock we find is a dead flusher's (the zero policy removes
// it once). Shared with git, packed-refs.lock or a ref's lock may be a
// live git command's: it is waited for, and only a ref's lock older than
// staleLockAge is removed.
func (b *FS) refLockPolicy() refs.LockPolicy {
	if !b.sharedWithGit {
		return refs.LockPolicy{}
	}
	deadline := time.Now().Add(busyWait)
	return refs.LockPolicy{Busy: func(lock string) error {
		if !strings.HasSuffix(lock, "packed-refs.lock") && lockIsStale(lock) {
			os.Remove(lock)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is held by another process: %w", lock, fs.ErrExist)
		}
		time.Sleep(5 * time.Millisecond)
		return nil
	}}
}

// Close stops the flusher, publishes what this process logged, and
// releases the repository.
func (b *FS) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	b.group.Close()
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
		// A full disk is the same: the log, which reads serve from until
		// then, is kept, and the next open or flush with room publishes it.
		err = b.Flush(context.Background())
		if durable.DiskFull(err) {
			b.logger.Warn("the disk is full: the log keeps the batches for the next flush", "repo", b.gitDir, "err", err)
		}
		if errors.Is(err, durable.ErrHeld) || durable.DiskFull(err) {
			err = nil
		}
	}
	b.mu.Lock()
	b.log.Close()
	b.mu.Unlock()
	b.packs.Close()
	b.gitMu.Lock()
	if cerr := b.st.Close(); err == nil {
		err = cerr
	}
	b.gitMu.Unlock()
	return err
}

// IngestPack stores a pack received from a remote: written whole to a
// temporary file in tmpDir, indexed, synced, and renamed into objects/pack
// (index last), so that the refs pointing into it — moved afterwards —
// never point at objects a crash could lose.
func (b *FS) IngestPack(ctx context.Context, tmpDir string, r io.Reader) (objects int, bytes int64, err error) {
	count, n, err := pack.Install(tmpDir, filepath.Join(b.gitDir, "objects", "pack"), r)
	if err != nil || n == 0 {
		return count, n, err
	}
	return count, n, b.packs.Refresh()
}

// SortedRefs returns every ref under prefix, in order. It walks the packed
// refs, already in order, and lays the few loose and logged ones over
// them, instead of building maps of every ref.
func (b *FS) SortedRefs(ctx context.Context, prefix string) ([]string, []object.Hash, error) {
	locked, err := b.rlock(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer b.runlock(locked)
	pnames, phashes, err := refs.PackedUnder(b.gitDir, prefix)
	if err != nil {
		return nil, nil, err
	}
	over, err := refs.ListLoose(b.gitDir, prefix)
	if err != nil {
		return nil, nil, err
	}
	for name, h := range b.refs {
		if strings.HasPrefix(name, prefix) {
			over[name] = h // ZeroHash: deleted in the log
		}
	}
	extra := make([]string, 0, len(over))
	for n := range over {
		extra = append(extra, n)
	}
	slices.Sort(extra)
	end := len(pnames)
	names := make([]string, 0, end+len(extra))
	hashes := make([]object.Hash, 0, end+len(extra))
	i, j := 0, 0
	for i < end || j < len(extra) {
		var n string
		var h object.Hash
		switch {
		case j == len(extra) || i < end && pnames[i] < extra[j]:
			n, h = pnames[i], phashes[i]
			i++
		case i == end || extra[j] < pnames[i]:
			n, h = extra[j], over[extra[j]]
			j++
		default: // both: the loose or logged value wins
			n, h = extra[j], over[extra[j]]
			i++
			j++
		}
		if h != object.ZeroHash {
			names, hashes = append(names, n), append(hashes, h)
		}
	}
	return names, hashes, nil
}
