package refs

// Reading packed-refs: the in-process cache of its parse, and the lookup
// of one ref in a large file that is not parsed yet.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// probeSize is how much of a large packed-refs that is not parsed yet a
// lookup of one ref reads before it parses the whole file instead.
const probeSize = 64 << 10

// probePacked looks name up in the head of a sorted packed-refs that is
// large and not in the cache: opening a ledger of a hundred thousand
// sessions asks for refs/heads/main, which sorts before every session,
// and should not wait for ten megabytes to be read and parsed. ok is
// false when the answer is not in that head (or the file is not marked
// sorted, or anything in it does not parse): the caller parses the file.
func probePacked(gitDir, name string) (h object.Hash, ok bool) {
	path := filepath.Join(gitDir, "packed-refs")
	fi, err := os.Stat(path)
	if err != nil || fi.Size() <= probeSize {
		return object.ZeroHash, false
	}
	packedCache.Lock()
	e, cached := packedCache.m[gitDir]
	packedCache.Unlock()
	if cached && e.matches(fi) {
		h, _, err := e.lookup(name)
		return h, err == nil
	}
	f, err := os.Open(path)
	if err != nil {
		return object.ZeroHash, false
	}
	defer f.Close()
	buf := make([]byte, probeSize)
	n, err := io.ReadFull(f, buf)
	if err != nil {
		return object.ZeroHash, false
	}
	text := string(buf[:n])
	header, text, _ := strings.Cut(text, "\n")
	if !strings.HasPrefix(header, "# pack-refs with:") || !slices.Contains(strings.Fields(header), "sorted") {
		return object.ZeroHash, false
	}
	// Only whole lines: the last may be cut.
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[:i+1]
	} else {
		return object.ZeroHash, false
	}
	for len(text) > 0 {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		line = strings.TrimSuffix(line, "\r")
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		id, ref, found := strings.Cut(line, " ")
		if !found {
			continue
		}
		if ref > name {
			// Past it in a sorted file: h is the last line for name, or
			// zero when there was none.
			return h, true
		}
		if ref == name {
			if h, err = object.ParseHash(id); err != nil {
				return object.ZeroHash, false
			}
		}
	}
	return object.ZeroHash, false
}

// packedCache holds the last parse of each repository's packed-refs,
// reused while the file is unchanged (same inode, size and time, a time
// not racy when it was read: see packedEntry.racy): a
// repository with many sessions has a large packed-refs, and refs are read
// on every compare-and-swap.
var packedCache = struct {
	sync.Mutex
	m map[string]packedEntry
}{m: map[string]packedEntry{}}

type packedEntry struct {
	ino, size int64
	mtime     int64
	// racy is set when the file's time was too recent to tell a later
	// rewrite by (see durable.Racy; writtenPackedEntry for this process's
	// own rewrites): such an entry is never reused, and the file is read
	// again until it is read settled.
	racy bool
	// data is the file; when git wrote it sorted (its header says so), one
	// ref is found by a binary search over these bytes, so that a process
	// reading a ref or two (opening a store) does not parse a packed-refs
	// of a hundred thousand sessions.
	data   []byte
	sorted bool
	// p is the file parsed, made when first needed.
	p *packedParse
}

// newPackedEntry is the key of the packed-refs file fi describes, read
// from disk by a stat taken at now.
func newPackedEntry(fi os.FileInfo, now time.Time) packedEntry {
	return packedEntry{ino: int64(durable.StatID(fi)), size: fi.Size(), mtime: fi.ModTime().UnixNano(),
		racy: durable.Racy(fi.ModTime(), now)}
}

// writtenPackedEntry is the key of the packed-refs file this process has
// just written, stat'ed at now. Its time is always younger than
// durable.RacyTick; but this process wrote what it holds, so only another
// process's rewrites within one clock tick after it, the last on a reused
// inode and of the same size, could pass for it, and treating it as racy
// would have every reader read the file again after each flush. It is
// racy where times are coarse, and where files have no inode to tell them
// apart (Windows: one rewrite of the same size in the tick would do).
func writtenPackedEntry(fi os.FileInfo, now time.Time) packedEntry {
	e := newPackedEntry(fi, now)
	e.racy = e.racy && (e.ino == 0 || durable.Coarse(fi.ModTime()))
	return e
}

// matches reports whether e may stand for the packed-refs file fi
// describes now.
func (e packedEntry) matches(fi os.FileInfo) bool {
	return !e.racy && e.ino == int64(durable.StatID(fi)) && e.size == fi.Size() && e.mtime == fi.ModTime().UnixNano()
}

type packedParse struct {
	once sync.Once
	err  error
	// names are the refs in order, hashes their values, so that one ref,
	// or the refs under a prefix (one session's), are found by a binary
	// search, not a scan of every ref.
	names  []string
	hashes []object.Hash
	// m is the refs as a map, made for the callers that want one.
	m packedMap
}

type packedMap struct {
	once sync.Once
	refs map[string]object.Hash
}

// parsed returns the file's refs in order.
func (e packedEntry) parsed() ([]string, []object.Hash, error) {
	if e.p == nil {
		return nil, nil, nil
	}
	e.p.once.Do(func() {
		e.p.names, e.p.hashes, e.p.err = parsePackedRefs(e.data)
	})
	return e.p.names, e.p.hashes, e.p.err
}

// lookup returns a packed ref's value.
func (e packedEntry) lookup(name string) (object.Hash, bool, error) {
	if e.sorted {
		return lookupSorted(e.data, name)
	}
	names, hashes, err := e.parsed()
	if err != nil {
		return object.ZeroHash, false, err
	}
	i := sort.SearchStrings(names, name)
	if i < len(names) && names[i] == name {
		return hashes[i], true, nil
	}
	return object.ZeroHash, false, nil
}

// isSorted reports whether a packed-refs file declares its lines sorted
// ("# pack-refs with: ... sorted"), and where its first ref line starts.
func isSorted(data []byte) (bool, int) {
	const head = "# pack-refs with:"
	if !bytes.HasPrefix(data, []byte(head)) {
		return false, 0
	}
	end := bytes.IndexByte(data, '\n')
	if end < 0 {
		return false, 0
	}
	for _, t := range strings.Fields(string(data[len(head):end])) {
		if t == "sorted" {
			return true, end + 1
		}
	}
	return false, 0
}

// lookupSorted finds name in a sorted packed-refs file by bisecting its
// bytes: each probe backs up to the start of its line, and over the "^"
// lines that follow a peeled tag to the tag's own line.
func lookupSorted(data []byte, name string) (object.Hash, bool, error) {
	_, start := isSorted(data)
	lineStart := func(lo, at int) int { return packedLineStart(data, lo, at) }
	lineEnd := func(at int) int { return packedLineEnd(data, at) }
	nextRef := func(at int) int { return packedNextRef(data, at) }
	lo, hi := nextRef(start), len(data)
	for lo < hi {
		ls := lineStart(lo, lo+(hi-lo)/2)
		for ls > lo && data[ls] == '^' {
			ls = lineStart(lo, ls-1)
		}
		le := lineEnd(ls)
		line := bytes.TrimSuffix(data[ls:le], []byte("\r"))
		id, ref, ok := bytes.Cut(line, []byte(" "))
		if !ok {
			return object.ZeroHash, false, fmt.Errorf("packed-refs: line %q is not <id> <name>", line)
		}
		switch c := strings.Compare(string(ref), name); {
		case c == 0:
			h, err := object.ParseHash(string(id))
			if err != nil {
				return object.ZeroHash, false, fmt.Errorf("packed-refs: %w", err)
			}
			return h, true, nil
		case c < 0:
			lo = nextRef(le + 1)
		default:
			hi = ls
		}
	}
	return object.ZeroHash, false, nil
}

// ReadPacked parses the packed-refs file, if any. The map returned is
// shared: callers must not modify it.
func ReadPacked(gitDir string) (map[string]object.Hash, error) {
	e, err := readPackedEntry(gitDir)
	if err != nil || e.p == nil {
		return map[string]object.Hash{}, err
	}
	names, hashes, err := e.parsed()
	if err != nil {
		return nil, err
	}
	e.p.m.once.Do(func() {
		e.p.m.refs = make(map[string]object.Hash, len(names))
		for i, n := range names {
			e.p.m.refs[n] = hashes[i]
		}
	})
	return e.p.m.refs, nil
}

// readPackedEntry reads packed-refs, or returns the copy read before
// while the file is unchanged.
func readPackedEntry(gitDir string) (packedEntry, error) {
	path := filepath.Join(gitDir, "packed-refs")
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return packedEntry{}, nil
	}
	if err != nil {
		return packedEntry{}, err
	}
	packedCache.Lock()
	if e, ok := packedCache.m[gitDir]; ok && e.matches(fi) {
		packedCache.Unlock()
		return e, nil
	}
	packedCache.Unlock()
	key := newPackedEntry(fi, time.Now())
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return packedEntry{}, nil
	}
	if err != nil {
		return packedEntry{}, err
	}
	return key.keep(gitDir, data), nil
}

// keep makes e, with data as its file's content, the cached packed-refs
// of gitDir, and returns it.
func (e packedEntry) keep(gitDir string, data []byte) packedEntry {
	e.data = data
	e.sorted, _ = isSorted(data)
	e.p = &packedParse{}
	packedCache.Lock()
	packedCache.m[gitDir] = e
	packedCache.Unlock()
	return e
}

// parsePackedRefs reads packed-refs into names, in order, and their
// values. Git writes the file sorted; the names are parts of one string,
// so a hundred thousand refs cost one allocation, not one each.
func parsePackedRefs(data []byte) ([]string, []object.Hash, error) {
	text := string(data)
	n := strings.Count(text, "\n") + 1
	names, hashes := make([]string, 0, n), make([]object.Hash, 0, n)
	for len(text) > 0 {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		line = strings.TrimSuffix(line, "\r")
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		id, name, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		h, err := object.ParseHash(id)
		if err != nil {
			return nil, nil, fmt.Errorf("packed-refs: %w", err)
		}
		names, hashes = append(names, name), append(hashes, h)
	}
	if !sort.StringsAreSorted(names) {
		idx := make([]int, len(names))
		for i := range idx {
			idx[i] = i
		}
		// Stable: of two lines for one ref, the later wins, as it did
		// in a map.
		sort.SliceStable(idx, func(a, b int) bool { return names[idx[a]] < names[idx[b]] })
		sn, sh := make([]string, len(names)), make([]object.Hash, len(names))
		for i, k := range idx {
			sn[i], sh[i] = names[k], hashes[k]
		}
		names, hashes = sn, sh
	}
	// One line per ref: the last of repeated ones.
	out := 0
	for i := range names {
		if i+1 < len(names) && names[i+1] == names[i] {
			continue
		}
		names[out], hashes[out] = names[i], hashes[i]
		out++
	}
	return names[:out], hashes[:out], nil
}

// listSorted calls fn for each ref under prefix of a sorted packed-refs
// file, in order: a bisection to the first, then the lines that follow,
// so that listing one session's refs does not parse every session's.
func listSorted(data []byte, prefix string, fn func(name string, h object.Hash)) error {
	_, start := isSorted(data)
	lineStart := func(lo, at int) int { return packedLineStart(data, lo, at) }
	lineEnd := func(at int) int { return packedLineEnd(data, at) }
	nextRef := func(at int) int { return packedNextRef(data, at) }
	// Bisect, as lookupSorted does, to the first ref not below prefix:
	// refs before lo are below it, refs from hi on are not.
	lo, hi := nextRef(start), len(data)
	for lo < hi {
		ls := lineStart(lo, lo+(hi-lo)/2)
		for ls > lo && data[ls] == '^' {
			ls = lineStart(lo, ls-1)
		}
		le := lineEnd(ls)
		_, ref, ok := bytes.Cut(bytes.TrimSuffix(data[ls:le], []byte("\r")), []byte(" "))
		if !ok {
			return fmt.Errorf("packed-refs: line %q is not <id> <name>", data[ls:le])
		}
		if string(ref) < prefix {
			lo = nextRef(le + 1)
		} else {
			hi = ls
		}
	}
	for at := lo; at < len(data); {
		le := lineEnd(at)
		line := bytes.TrimSuffix(data[at:le], []byte("\r"))
		at = le + 1
		if len(line) == 0 || line[0] == '^' {
			continue
		}
		id, ref, ok := bytes.Cut(line, []byte(" "))
		if !ok {
			return fmt.Errorf("packed-refs: line %q is not <id> <name>", line)
		}
		if !bytes.HasPrefix(ref, []byte(prefix)) {
			return nil
		}
		h, err := object.ParseHash(string(id))
		if err != nil {
			return fmt.Errorf("packed-refs: %w", err)
		}
		fn(string(ref), h)
	}
	return nil
}

// packedLineStart is the start of the line holding at, searching back no
// further than lo.
func packedLineStart(data []byte, lo, at int) int {
	if i := bytes.LastIndexByte(data[lo:at], '\n'); i >= 0 {
		return lo + i + 1
	}
	return lo
}

// packedLineEnd is the end (the newline, or the end of data) of the line
// starting at at.
func packedLineEnd(data []byte, at int) int {
	if i := bytes.IndexByte(data[at:], '\n'); i >= 0 {
		return at + i
	}
	return len(data)
}

// packedNextRef skips the peel lines ("^...") from the line start at.
func packedNextRef(data []byte, at int) int {
	for at < len(data) && data[at] == '^' {
		at = packedLineEnd(data, at) + 1
	}
	return min(at, len(data))
}
