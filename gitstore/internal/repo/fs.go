package repo

import (
	"context"
	"errors"
	"fmt"
	"io"
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
