package repo

// The flusher moves what the log holds into a pack, publishes the refs,
// trims the log and merges packs; its locks are 3 and 4 of the lock order
// in fs.go.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/pack"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/refs"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

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
	writes, err := b.writeRefFiles(finals)
	if err != nil {
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

// writeRefFiles makes the ref files say what finals says (a zero hash
// deletes the ref) and syncs their folders. It returns the refs written
// as loose files: the caller notes them once it holds the log lock.
func (b *FS) writeRefFiles(finals map[string]object.Hash) ([]string, error) {
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
			return nil, err
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
		return nil, err
	}
	synced := make([]string, 0, len(dirs))
	for d := range dirs {
		synced = append(synced, d)
	}
	if err := parallel(len(synced), func(i int) error { return durable.SyncDir(synced[i]) }); err != nil {
		return nil, err
	}
	return writes, nil
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
