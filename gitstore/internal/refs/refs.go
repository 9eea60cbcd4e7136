// Package refs reads and writes Git refs on disk, loose and packed, the
// way git does: a ref moves by creating <ref>.lock exclusively, writing and
// syncing it, and renaming it over the ref; the directories it changed are
// returned for the caller to sync. Refs are read here rather than through
// go-git, because go-git rewrites a ref file in place (a crash leaves it
// empty) and ignores the .lock files git uses.
//
// Locks: a ref's .lock file is its lock, between processes and git itself.
// packed-refs is rewritten under packed-refs.lock; the in-process cache of
// its parsed content (packedCache.mu) is held only while it is read or
// replaced, never across file I/O of another ref.
package refs

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// Refs on disk are read and written here rather than through go-git, because
// go-git rewrites a ref file in place (a crash leaves it empty) and ignores
// the <ref>.lock files that git uses. We write refs the way git does: create
// <ref>.lock exclusively, write, fsync, rename over the ref.

// Read returns a ref's value from a loose ref file or packed-refs;
// object.ZeroHash when the ref does not exist.
func Read(gitDir, name string) (object.Hash, error) {
	data, err := os.ReadFile(filepath.Join(gitDir, filepath.FromSlash(name)))
	switch {
	case err == nil:
		return object.ParseHash(strings.TrimSpace(string(data)))
	case errors.Is(err, fs.ErrNotExist), isNotDir(err):
	default:
		return object.ZeroHash, err
	}
	if h, ok := probePacked(gitDir, name); ok {
		return h, nil
	}
	packed, err := readPackedEntry(gitDir)
	if err != nil {
		return object.ZeroHash, err
	}
	h, _, err := packed.lookup(name)
	return h, err
}

// isNotDir reports a path through a file where a directory was expected:
// a ref a/b looked up while a ref a exists.
func isNotDir(err error) bool {
	return errors.Is(err, syscall.ENOTDIR)
}

// List returns every ref under prefix (e.g. "refs/heads/sessions/"),
// loose refs overriding packed ones.
func List(gitDir, prefix string) (map[string]object.Hash, error) {
	packed, err := readPackedEntry(gitDir)
	if err != nil {
		return nil, err
	}
	refs := map[string]object.Hash{}
	if packed.sorted {
		if err := listSorted(packed.data, prefix, func(name string, h object.Hash) { refs[name] = h }); err != nil {
			return nil, err
		}
	} else {
		names, hashes, err := packed.parsed()
		if err != nil {
			return nil, err
		}
		for i := sort.SearchStrings(names, prefix); i < len(names); i++ {
			if !strings.HasPrefix(names[i], prefix) {
				break
			}
			refs[names[i]] = hashes[i]
		}
	}
	loose, err := ListLoose(gitDir, prefix)
	for name, h := range loose {
		refs[name] = h
	}
	return refs, err
}

// PackedUnder returns the packed refs under prefix, in order, and their
// values: a caller walking many refs in order (the session index) merges
// the few loose ones into them instead of building a map of every ref.
// The slices are shared: callers must not modify them.
func PackedUnder(gitDir, prefix string) ([]string, []object.Hash, error) {
	packed, err := readPackedEntry(gitDir)
	if err != nil {
		return nil, nil, err
	}
	names, hashes, err := packed.parsed()
	if err != nil {
		return nil, nil, err
	}
	start := sort.SearchStrings(names, prefix)
	end := start + sort.Search(len(names)-start, func(i int) bool {
		return !strings.HasPrefix(names[start+i], prefix)
	})
	return names[start:end:end], hashes[start:end:end], nil
}

// ListLoose returns the loose ref files under prefix. An empty or
// damaged ref file is left out here; verify reports it (BadLoose).
func ListLoose(gitDir, prefix string) (map[string]object.Hash, error) {
	refs := map[string]object.Hash{}
	err := walkLooseRefs(gitDir, prefix, func(name, content string) {
		if h, err := object.ParseHash(content); err == nil {
			refs[name] = h
		}
	})
	return refs, err
}

// BadLoose returns the loose ref files under prefix that do not hold
// an object id, with what they hold.
func BadLoose(gitDir, prefix string) (map[string]string, error) {
	bad := map[string]string{}
	err := walkLooseRefs(gitDir, prefix, func(name, content string) {
		if _, err := object.ParseHash(content); err != nil {
			bad[name] = content
		}
	})
	return bad, err
}

// walkLooseRefs calls fn with the name and trimmed content of every loose
// ref file under prefix (lock files and refs removed meanwhile skipped).
func walkLooseRefs(gitDir, prefix string, fn func(name, content string)) error {
	root := filepath.Join(gitDir, filepath.FromSlash(prefix))
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasSuffix(path, ".lock") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(gitDir, path)
		fn(filepath.ToSlash(rel), strings.TrimSpace(string(data)))
		return nil
	})
}

// Write points a loose ref at id, git's way. It returns the
// directories whose entries changed, which the caller must fsync.
func Write(gitDir, name string, id object.Hash) ([]string, error) {
	return WriteWith(gitDir, name, id, LockPolicy{})
}

// LockPolicy lets a caller decide what an existing <ref>.lock means and
// check the ref's value once the lock is held (compare-and-swap).
type LockPolicy struct {
	// busy runs when the lock file exists; returning nil tries again.
	// Without it, an existing lock is an error.
	Busy func(lock string) error
	// check runs with the lock held, before the ref moves.
	Check func() error
}

// WriteWith is Write with a lock policy.
func WriteWith(gitDir, name string, id object.Hash, pol LockPolicy) ([]string, error) {
	path := filepath.Join(gitDir, filepath.FromSlash(name))
	dir := filepath.Dir(path)
	var created []string
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		// remember which levels are new: their parents must be synced too
		for d := dir; ; d = filepath.Dir(d) {
			if _, err := os.Stat(d); err == nil {
				created = append(created, d)
				break
			}
			created = append(created, d)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	for err != nil && errors.Is(err, fs.ErrExist) && pol.Busy != nil {
		if err = pol.Busy(lock); err != nil {
			return nil, err
		}
		f, err = os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("lock ref %s: %w", name, err)
	}
	if pol.Check != nil {
		if err := pol.Check(); err != nil {
			f.Close()
			os.Remove(lock)
			return nil, err
		}
	}
	_, err = f.WriteString(id.String() + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = durable.Rename(lock, path)
	}
	if err != nil {
		os.Remove(lock)
		return nil, fmt.Errorf("write ref %s: %w", name, err)
	}
	return append(created, dir), nil
}

// Pack moves every loose ref under refs/ into packed-refs and removes
// the loose files, as `git pack-refs --all --prune` does: a repository with
// thousands of sessions then lists its refs from one file. The caller holds
// the flush lock and the log lock, so no writer of ours races it; a ref
// whose .lock is held (by the git CLI) is left loose.
// Delete removes a ref the way git does: under <ref>.lock, first
// from packed-refs (rewritten under packed-refs.lock), then its loose file,
// so that no reader meets an older packed value once the loose file is
// gone. Deleting a ref that is not there is not an error (a flush that
// died half way is redone from the log). It returns the directory to sync.
// The caller holds flush.lock: a <ref>.lock or packed-refs.lock found is a
// dead flusher's.
func Delete(gitDir, name string) (string, error) {
	return DeleteWith(gitDir, name, LockPolicy{})
}

// DeleteWith is Delete with a lock policy: pol.Busy decides what an
// existing <ref>.lock or packed-refs.lock means (nil: a dead flusher's,
// removed once), and pol.Check runs with the ref's lock held, before
// anything changes (compare-and-swap).
func DeleteWith(gitDir, name string, pol LockPolicy) (string, error) {
	path := filepath.Join(gitDir, filepath.FromSlash(name))
	lock := path + ".lock"
	f, err := takeLock(lock, pol.Busy)
	if errors.Is(err, fs.ErrNotExist) {
		// No directory for it: not loose; it may still be packed.
		if pol.Check != nil {
			if err := pol.Check(); err != nil {
				return "", err
			}
		}
		return gitDir, removePackedRef(gitDir, name, pol.Busy)
	}
	if err != nil {
		return "", fmt.Errorf("lock ref %s: %w", name, err)
	}
	f.Close()
	defer os.Remove(lock)
	if pol.Check != nil {
		if err := pol.Check(); err != nil {
			return "", err
		}
	}
	if err := removePackedRef(gitDir, name, pol.Busy); err != nil {
		return "", err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	return filepath.Dir(path), nil
}

// takeLock creates lock exclusively. When it exists, busy decides (nil
// returns to try again); without busy it is a dead holder's, removed once.
func takeLock(lock string, busy func(string) error) (*os.File, error) {
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if busy == nil {
		if errors.Is(err, fs.ErrExist) {
			os.Remove(lock)
			f, err = os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		}
		return f, err
	}
	for err != nil && errors.Is(err, fs.ErrExist) {
		if err = busy(lock); err != nil {
			return nil, err
		}
		f, err = os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	}
	return f, err
}

// removePackedRef rewrites packed-refs without name, if it is there,
// keeping every other line as it was (a peeled line stays with its ref:
// a remote may hold annotated tags pushed by git users).
func removePackedRef(gitDir, name string, busy func(string) error) error {
	packed, err := ReadPacked(gitDir)
	if err != nil {
		return err
	}
	if _, ok := packed[name]; !ok {
		return nil
	}
	lock, err := lockPacked(gitDir, busy)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(gitDir, "packed-refs"))
	if err != nil {
		abandonPacked(gitDir, lock)
		return err
	}
	var out bytes.Buffer
	skipPeeled := false
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "^") {
			if !skipPeeled {
				out.WriteString(line)
			}
			continue
		}
		_, n, _ := strings.Cut(strings.TrimRight(line, "\r\n"), " ")
		skipPeeled = n == name
		if !skipPeeled {
			out.WriteString(line)
		}
	}
	return commitPacked(gitDir, lock, out.Bytes())
}

// errPackedBusy marks a packed-refs.lock that could not be taken.
var errPackedBusy = errors.New("packed-refs is locked")

// rewritePacked writes packed-refs anew under packed-refs.lock with the
// refs update returns, given those packed now (read again under the lock:
// the file may have changed meanwhile); a nil map from update leaves the
// file as it is. The caller holds flush.lock and only our flusher packs
// refs, so a packed-refs.lock found is a dead flusher's and is removed
// once; a lock that cannot be taken after that is an error wrapping
// errPackedBusy.
func rewritePacked(gitDir string, update func(packed map[string]object.Hash) (map[string]object.Hash, error)) error {
	lock, err := lockPacked(gitDir, nil)
	if err != nil {
		return err
	}
	// Read afresh, not through the cache (see WritePacked): the whole
	// file is written anew anyway.
	cur, err := readPackedFile(gitDir)
	var names []string
	var hashes []object.Hash
	if err == nil {
		names, hashes, err = parsePackedRefs(cur)
	}
	if err != nil {
		abandonPacked(gitDir, lock)
		return err
	}
	packed := make(map[string]object.Hash, len(names))
	for i, n := range names {
		packed[n] = hashes[i]
	}
	refs, err := update(packed)
	if err != nil || refs == nil {
		abandonPacked(gitDir, lock)
		return err
	}
	out := slices.Sorted(maps.Keys(refs))
	return commitPacked(gitDir, lock, formatPacked(out, func(_ int, n string) object.Hash { return refs[n] }))
}

// ErrPackedBusy is what WritePacked returns when packed-refs.lock is held
// by someone else (git packing or deleting refs), or packed-refs holds
// peeled tags that its rewrite would drop, or does not parse: the caller
// writes the refs as loose files instead.
var ErrPackedBusy = errPackedBusy

// WritePacked points each ref in vals at its value by rewriting
// packed-refs under packed-refs.lock, git's way: written, synced, renamed,
// the directory synced. One file and two syncs stand for any number of
// refs, where loose files cost a created file, a sync and a rename each
// (some 0.3 ms of processor time and 0.5 ms of the disk's on this
// machine). A loose file of a ref shadows its packed value, so the caller
// writes this way only refs that have none. A held packed-refs.lock is
// never taken over: that is ErrPackedBusy.
func WritePacked(gitDir string, vals map[string]object.Hash) error {
	lock, err := lockPacked(gitDir, func(string) error { return errPackedBusy })
	if err != nil {
		return err
	}
	// Read afresh under the lock, not through the cache: another process
	// rewrites this file every flush of its own, to the same size, and on
	// a file system with coarse times a reused inode could pass for the
	// version cached here; rewriting from that would put back refs it
	// had moved.
	cur, err := readPackedFile(gitDir)
	if err != nil {
		abandonPacked(gitDir, lock)
		return err
	}
	if bytes.Contains(cur, []byte("\n^")) {
		abandonPacked(gitDir, lock)
		return errPackedBusy
	}
	names, hashes, err := parsePackedRefs(cur)
	if err != nil {
		// Loose files still work beside a file that does not parse;
		// rewriting it would lose what it holds.
		abandonPacked(gitDir, lock)
		return fmt.Errorf("%w: %w", errPackedBusy, err)
	}
	return commitPacked(gitDir, lock, mergePacked(names, hashes, vals))
}

// readPackedFile reads packed-refs as it is on disk now (nil when there
// is none), for a writer holding packed-refs.lock.
func readPackedFile(gitDir string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(gitDir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// mergePacked writes packed-refs' content: names (sorted, as
// parsePackedRefs returns them, with hashes) as they are but where vals
// gives a new value, and the names of vals not among them, all sorted, as
// git writes the file.
func mergePacked(names []string, hashes []object.Hash, vals map[string]object.Hash) []byte {
	var added []string
	for n := range vals {
		if _, found := slices.BinarySearch(names, n); !found {
			added = append(added, n)
		}
	}
	slices.Sort(added)
	all := make([]string, 0, len(names)+len(added))
	from := make([]int, 0, len(names)+len(added)) // index in names, or -1
	i, j := 0, 0
	for i < len(names) || j < len(added) {
		if j == len(added) || (i < len(names) && names[i] < added[j]) {
			all, from = append(all, names[i]), append(from, i)
			i++
		} else {
			all, from = append(all, added[j]), append(from, -1)
			j++
		}
	}
	return formatPacked(all, func(k int, n string) object.Hash {
		if h, ok := vals[n]; ok {
			return h
		}
		return hashes[from[k]]
	})
}

// formatPacked writes packed-refs' content, git's header and a line for
// each of names (in order) with its value val(k, names[k]).
func formatPacked(names []string, val func(k int, name string) object.Hash) []byte {
	var b bytes.Buffer
	b.Grow(len(packedHeader) + len(names)*(2*len(object.Hash{})+2+48))
	b.WriteString(packedHeader)
	var buf [2 * len(object.Hash{})]byte
	for k, n := range names {
		h := val(k, n)
		hex.Encode(buf[:], h[:])
		b.Write(buf[:])
		b.WriteByte(' ')
		b.WriteString(n)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

const packedHeader = "# pack-refs with: peeled fully-peeled sorted \n"

// lockPacked takes packed-refs.lock (see takeLock for busy).
func lockPacked(gitDir string, busy func(string) error) (*os.File, error) {
	lock, err := takeLock(filepath.Join(gitDir, "packed-refs.lock"), busy)
	if err != nil {
		return nil, fmt.Errorf("lock packed-refs: %w: %w", errPackedBusy, err)
	}
	return lock, nil
}

// abandonPacked releases packed-refs.lock without changing packed-refs.
func abandonPacked(gitDir string, lock *os.File) {
	lock.Close()
	os.Remove(filepath.Join(gitDir, "packed-refs.lock"))
}

// commitPacked writes data as the new packed-refs through its lock:
// written, synced, renamed into place, the directory synced. This
// process's cache then holds data (writtenPackedEntry), under the
// identity the file had before the rename, so that it names this file
// and no later one: the readers after a rewrite do not read it again,
// and a rewrite that happened to get the old file's inode, size and time
// back is not read as the old one.
func commitPacked(gitDir string, lock *os.File, data []byte) error {
	_, err := lock.Write(data)
	if err == nil {
		err = lock.Sync()
	}
	var fi os.FileInfo
	var statAt time.Time
	if err == nil {
		fi, err = lock.Stat()
		statAt = time.Now()
	}
	if err != nil {
		abandonPacked(gitDir, lock)
		return err
	}
	lockPath := filepath.Join(gitDir, "packed-refs.lock")
	if err := lock.Close(); err != nil {
		os.Remove(lockPath)
		return err
	}
	if err := durable.Rename(lockPath, filepath.Join(gitDir, "packed-refs")); err != nil {
		os.Remove(lockPath)
		return err
	}
	if err := durable.SyncDir(gitDir); err != nil {
		return err
	}
	writtenPackedEntry(fi, statAt).keep(gitDir, data)
	return nil
}

func Pack(gitDir string) error {
	var loose map[string]object.Hash
	err := rewritePacked(gitDir, func(packed map[string]object.Hash) (map[string]object.Hash, error) {
		var err error
		if loose, err = ListLoose(gitDir, "refs/"); err != nil || len(loose) == 0 {
			return nil, err
		}
		for n, h := range loose {
			packed[n] = h
		}
		return packed, nil
	})
	if errors.Is(err, errPackedBusy) {
		return nil // the git CLI is packing refs; try another time
	}
	if err != nil {
		return err
	}
	// Prune: a loose ref still holding the packed value can go; its
	// emptied directories go too.
	for n, h := range loose {
		p := filepath.Join(gitDir, filepath.FromSlash(n))
		l, err := os.OpenFile(p+".lock", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			continue
		}
		if cur, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(cur)) == h.String() {
			os.Remove(p)
		}
		l.Close()
		os.Remove(p + ".lock")
		for d := filepath.Dir(p); d != filepath.Join(gitDir, "refs", "heads") && d != filepath.Join(gitDir, "refs"); d = filepath.Dir(d) {
			if os.Remove(d) != nil {
				break // not empty
			}
		}
	}
	return nil
}
