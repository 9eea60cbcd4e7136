package pack

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// Set reads objects from the repository's packs. go-git's storage can
// only forget all its pack indexes and reload every one (with unbuffered
// reads) when a pack appears, and its pack reader seeks and re-hashes every
// object it reads; the flusher adds a pack every fraction of a second and a
// session load reads thousands of objects, so this set loads each new index
// once and reads an entry with a single pread.
type Set struct {
	dir string
	// mu guards packs, order and their open files: readers hold it shared
	// for a whole read (so loads read in parallel), refresh holds it
	// exclusively to change the set and close the files of removed packs.
	mu    sync.RWMutex
	packs map[string]*Entry
	order []*Entry // newest first: recent objects are read most
	// cacheMu guards bases.
	cacheMu sync.Mutex
	bases   *baseCache
	// last is the pack that answered the last read: a session's objects
	// sit together, so it is tried first.
	last atomic.Pointer[Entry]
}

// MergeCandidates is what PickMerge picks from the packs as they are now,
// among those mergeable accepts (nil: all).
func (ps *Set) MergeCandidates(mergeable func(name string) bool) []*Entry {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	if mergeable == nil {
		return PickMerge(ps.order)
	}
	var own []*Entry
	for _, pe := range ps.order {
		if mergeable(pe.name) {
			own = append(own, pe)
		}
	}
	return PickMerge(own)
}

// Packs returns the packs of the set, newest first.
func (ps *Set) Packs() []*Entry {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return append([]*Entry(nil), ps.order...)
}

// Index is the pack's index, opened now if no lookup has opened it yet.
func (e *Entry) Index() (*Index, error) {
	if err := e.loadIdx(); err != nil {
		return nil, err
	}
	return e.idx, nil
}

var zlibReaders sync.Pool

type Entry struct {
	name string
	idx  *Index
	f    *os.File
	size int64
	// mtime is the pack file's: packs are written once and renamed into
	// place, so it tells their age across processes.
	mtime time.Time
	// idxFile is the pack's index, open but not yet read: it is opened
	// (its fanout read, the file mapped) at the first lookup, so that
	// opening a large repository — a server's start, a listing answered
	// from the session index — touches no index. Held open, it stays
	// readable if a merge removes the pack meanwhile.
	idxFile *os.File
	idxOnce sync.Once
	idxErr  error
	// kinds is what the indexer found of each object, in the index's
	// order, for a pack this process indexed (see kinds.go); else nil.
	kinds []uint32
}

// loadIdx opens the pack's index the first time it is needed.
func (pe *Entry) loadIdx() error {
	pe.idxOnce.Do(func() {
		if pe.idxFile == nil {
			return // built in memory (by a test)
		}
		pe.idx, pe.idxErr = openIndex(pe.idxFile)
		pe.idxFile = nil
	})
	return pe.idxErr
}

// entryEnd is where the entry at off ends: where the next entry begins,
// or the pack's trailing checksum.
func (pe *Entry) entryEnd(off int64) (int64, error) {
	offs, err := pe.idx.sortedOffsets()
	if err != nil {
		return 0, err
	}
	i := sort.Search(len(offs), func(i int) bool { return offs[i] > off })
	end := pe.size - 20
	if i < len(offs) {
		end = offs[i]
	}
	if end <= off || off < 12 {
		return 0, fmt.Errorf("bad entry offset %d", off)
	}
	return end, nil
}

// closeFiles closes the pack and its index (a mapped index is unmapped
// once nothing can reach it: a merge may still be reading it).
func (pe *Entry) closeFiles() {
	pe.f.Close()
	pe.idxOnce.Do(func() {
		if pe.idxFile != nil {
			pe.idxFile.Close()
		}
		pe.idxErr = fmt.Errorf("pack %s is closed", pe.name)
	})
	if pe.idx != nil {
		pe.idx.close()
	}
}

func NewSet(dir string) *Set {
	return &Set{dir: dir, packs: map[string]*Entry{}, bases: newBaseCache(8 << 20)}
}

// refreshListed, when set (by tests), runs after Refresh lists the pack
// directory and before it opens the packs it found.
var refreshListed func()

// maxRelists bounds how often Refresh lists the directory again because a
// merge removed a listed pack before it was opened.
const maxRelists = 100

// Refresh picks up packs added (by us or another process) and drops removed
// ones.
//
// A merge in another process writes its merged pack and then removes the
// packs it merged. A listing taken just before the merged pack appeared
// names packs that may be gone by the time they are opened: skipping them
// would leave their objects in neither the set nor the listing, and a
// reader would call present objects missing. So when a listed pack has
// vanished the directory is listed again; the merged pack is in that
// listing, since it was written before anything was removed.
func (ps *Set) Refresh() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var seen map[string]bool
	var listed, before []string
	// Packs found by this listing are put in order by age below: the
	// directory lists them by name, which says nothing of age, and the
	// merge policy reads the order as newest first.
	var fresh []*Entry
	for attempt := 0; ; attempt++ {
		entries, err := os.ReadDir(ps.dir)
		if err != nil {
			return err
		}
		if refreshListed != nil {
			refreshListed()
		}
		seen = map[string]bool{}
		before, listed = listed, nil
		vanished := false
		for _, e := range entries {
			name, ok := strings.CutSuffix(e.Name(), ".idx")
			if !ok || !strings.HasPrefix(name, "pack-") {
				continue
			}
			seen[name] = true
			listed = append(listed, name)
			if ps.packs[name] != nil {
				continue
			}
			pe, err := openPackEntry(ps.dir, name)
			if errors.Is(err, os.ErrNotExist) {
				delete(seen, name) // removed by a merge meanwhile
				vanished = true
				continue
			}
			if err != nil {
				return err
			}
			ps.packs[name] = pe
			fresh = append(fresh, pe)
		}
		// An unchanged listing means no merge is under way: the pack is
		// missing for good (an .idx left without its pack).
		if !vanished || slices.Equal(listed, before) || attempt == maxRelists {
			break
		}
	}
	// Newest first, as a process that saw each pack appear would have put
	// them: on a fresh open, name order would put a ledger's large old
	// pack among the "newest", and the next merge would rewrite it whole.
	slices.SortStableFunc(fresh, func(a, b *Entry) int {
		if c := b.mtime.Compare(a.mtime); c != 0 {
			return c
		}
		return strings.Compare(b.name, a.name)
	})
	ps.order = append(fresh, ps.order...)
	kept := make([]*Entry, 0, len(ps.order))
	for _, pe := range ps.order {
		if seen[pe.name] {
			kept = append(kept, pe)
		} else {
			pe.closeFiles()
			delete(ps.packs, pe.name)
		}
	}
	ps.order = kept
	ps.cacheMu.Lock()
	ps.bases.reset()
	ps.cacheMu.Unlock()
	return nil
}

func openPackEntry(dir, name string) (*Entry, error) {
	xf, err := os.Open(filepath.Join(dir, name+".idx"))
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(dir, name+".pack"))
	if err != nil {
		xf.Close()
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		xf.Close()
		return nil, err
	}
	return &Entry{name: name, idxFile: xf, f: f, size: fi.Size(), mtime: fi.ModTime(), kinds: takeKinds(kindsPath(dir, name))}, nil
}

// Read returns an object from the packs, or object.ErrNotFound.
func (ps *Set) Read(id object.Hash) (object.Type, []byte, error) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return ps.readShared(id)
}

// readShared is read for a caller that holds mu shared.
func (ps *Set) readShared(id object.Hash) (object.Type, []byte, error) {
	last := ps.last.Load()
	if last != nil && ps.packs[last.name] != last {
		last = nil // merged away since
	}
	for i := -1; i < len(ps.order); i++ {
		var pe *Entry
		if i < 0 {
			if pe = last; pe == nil {
				continue
			}
		} else if pe = ps.order[i]; pe == last {
			continue
		}
		if err := pe.loadIdx(); err != nil {
			return 0, nil, err
		}
		i, ok, err := pe.idx.find(id)
		if err != nil {
			return 0, nil, err
		}
		if !ok {
			continue
		}
		off, err := pe.idx.offsetAt(i)
		if err != nil {
			return 0, nil, fmt.Errorf("object %s in %s: %w", id, pe.name, err)
		}
		if pe != last {
			ps.last.Store(pe)
		}
		t, data, err := ps.readAt(pe, off, 0)
		if err != nil {
			return 0, nil, fmt.Errorf("object %s in %s: %w", id, pe.name, err)
		}
		return t, data, nil
	}
	return 0, nil, object.ErrNotFound
}

// readAt reads the entry at off, resolving deltas.
func (ps *Set) readAt(pe *Entry, off int64, depth int) (object.Type, []byte, error) {
	ps.cacheMu.Lock()
	t, data, ok := ps.bases.get(pe, off)
	ps.cacheMu.Unlock()
	if ok {
		return t, data, nil
	}
	if depth > 10000 {
		return 0, nil, fmt.Errorf("delta chain too deep")
	}
	h, data, err := ps.payload(pe, off, false)
	if err != nil {
		return 0, nil, err
	}
	typ := h.typ
	switch typ {
	case ofsDeltaType, refDeltaType:
		var bt object.Type
		var base []byte
		if typ == ofsDeltaType {
			bt, base, err = ps.readAt(pe, h.baseOff, depth+1)
		} else {
			bt, base, err = ps.readShared(h.refBase)
		}
		if err != nil {
			return 0, nil, fmt.Errorf("delta base: %w", err)
		}
		out, err := delta.Patch(base, data)
		if err != nil {
			return 0, nil, err
		}
		if depth > 0 {
			ps.cacheMu.Lock()
			ps.bases.put(pe, off, bt, out)
			ps.cacheMu.Unlock()
		}
		return bt, out, nil
	case 1, 2, 3, 4:
		if depth > 0 {
			ps.cacheMu.Lock()
			ps.bases.put(pe, off, object.Type(typ), data)
			ps.cacheMu.Unlock()
		}
		return object.Type(typ), data, nil
	}
	return 0, nil, fmt.Errorf("unknown entry type %d", typ)
}

// entryWindow is how much of a pack a read takes in its one pread when it
// does not know where the entry ends (that needs every offset of the
// index, sorted): nearly every object of a ledger — thought files, trees,
// commits, the deltas between versions — fits in it, and a larger one
// costs a second pread once its header says how large it is.
const entryWindow = 2048

// zlibBound is the most that zlib (or Go's compress/flate) writes for n
// bytes, with room for the framing of a stored block; a stream that is
// longer still is read again within the entry's exact bounds.
func zlibBound(n int) int64 { return int64(n) + int64(n)>>3 + int64(n)>>6 + 64 }

// windows holds the buffers of entryWindow bytes that reads take their
// first pread into: a read of a million-thought ledger reads millions of
// entries, and a fresh window each (zeroed, then collected) cost more than
// the lookups saved.
var windows = sync.Pool{New: func() any { return new([entryWindow]byte) }}

// readEntry reads the entry at off. With exact, raw is exactly the entry
// (its end found from the sorted offsets); otherwise raw is the entry's
// header and at most zlibBound of its payload, perhaps followed by the
// next entries' bytes. When win is not nil, raw lies in it, and the
// caller must copy what it keeps and then put win back in windows.
func (pe *Entry) readEntry(off int64, exact bool) (raw []byte, h entryHead, cut bool, win *[entryWindow]byte, err error) {
	if exact {
		end, err := pe.entryEnd(off)
		if err != nil {
			return nil, h, false, nil, err
		}
		raw = make([]byte, end-off)
		if _, err := pe.f.ReadAt(raw, off); err != nil {
			return nil, h, false, nil, err
		}
		h, err = parseEntryHeader(raw, off)
		return raw, h, false, nil, err
	}
	room := pe.size - 20 - off
	if off < 12 || room <= 0 {
		return nil, h, false, nil, fmt.Errorf("bad entry offset %d", off)
	}
	win = windows.Get().(*[entryWindow]byte)
	raw = win[:min(room, entryWindow)]
	if _, err := pe.f.ReadAt(raw, off); err != nil {
		windows.Put(win)
		return nil, h, false, nil, err
	}
	if h, err = parseEntryHead(raw, off, room); err != nil {
		windows.Put(win)
		return nil, h, false, nil, err
	}
	need := min(int64(h.n)+zlibBound(h.size), room)
	if need > int64(len(raw)) {
		more := make([]byte, need)
		copy(more, raw)
		windows.Put(win)
		win = nil
		if _, err := pe.f.ReadAt(more[len(raw):], off+int64(len(raw))); err != nil {
			return nil, h, false, nil, err
		}
		raw = more
	}
	return raw, h, int64(len(raw)) < room, win, nil
}

// payload reads the entry at off and inflates its payload (the object, or
// its delta).
func (ps *Set) payload(pe *Entry, off int64, exact bool) (entryHead, []byte, error) {
	raw, h, cut, win, err := pe.readEntry(off, exact)
	if err != nil {
		return h, nil, err
	}
	if win != nil {
		defer windows.Put(win)
	}
	data, stored := StoredPayload(raw[h.n:], h.size)
	if stored {
		if win != nil || cap(raw)-len(data) > 64 {
			// Not to keep a window of the pack alive behind a small
			// object (the base cache counts only the object).
			data = bytes.Clone(data)
		}
		return h, data, nil
	}
	if data, err = ps.inflate(raw[h.n:], h.size); err != nil {
		if cut {
			// A stream longer than zlib writes: read it within the
			// entry's exact bounds.
			return ps.payload(pe, off, true)
		}
		return h, nil, err
	}
	return h, data, nil
}

// StoredPayload returns the payload of a zlib stream made of one stored
// (uncompressed) block — how small entries are written — without inflating
// or copying it; ok is false for any other stream. The Adler-32 checksum is
// still verified.
func StoredPayload(z []byte, size int) ([]byte, bool) {
	// zlib header (2), a stored block header (1) + LEN, NLEN (4), the data,
	// then either the Adler-32 (the block was final) or an empty final
	// stored block (5) and the Adler-32 — Go's compress/flate writes the
	// latter.
	if size > 0xffff || len(z) < 2+5+size+4 || z[0]&0x0f != 8 || (uint16(z[0])<<8|uint16(z[1]))%31 != 0 || z[1]&0x20 != 0 {
		return nil, false
	}
	final := z[2] == 1
	if z[2] != 0 && !final {
		return nil, false
	}
	n := int(z[3]) | int(z[4])<<8
	if n != size || uint16(n)^0xffff != uint16(z[5])|uint16(z[6])<<8 {
		return nil, false
	}
	data := z[7 : 7+n : 7+n]
	rest := z[7+n:]
	if !final {
		if len(rest) < 5+4 || rest[0] != 1 || rest[1] != 0 || rest[2] != 0 || rest[3] != 0xff || rest[4] != 0xff {
			return nil, false
		}
		rest = rest[5:]
	}
	if len(rest) < 4 || adler32.Checksum(data) != uint32(rest[0])<<24|uint32(rest[1])<<16|uint32(rest[2])<<8|uint32(rest[3]) {
		return nil, false
	}
	return data, true
}

func (ps *Set) inflate(z []byte, size int) ([]byte, error) {
	var zr io.ReadCloser
	var err error
	if r, ok := zlibReaders.Get().(io.ReadCloser); ok {
		zr = r
		err = zr.(zlib.Resetter).Reset(bytes.NewReader(z), nil)
	} else {
		zr, err = zlib.NewReader(bytes.NewReader(z))
	}
	if err != nil {
		return nil, err
	}
	defer zlibReaders.Put(zr)
	out := make([]byte, size)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	return out, nil
}

func (ps *Set) Has(id object.Hash) bool {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	for _, pe := range ps.order {
		if pe.loadIdx() != nil {
			continue
		}
		if _, ok, _ := pe.idx.find(id); ok {
			return true
		}
	}
	return false
}

// CheckIndexes compares every pack's index with its trailing checksum,
// once per pack and process. Lookups trust the index, as git's do, so that
// a read does not hash a file of hundreds of MB; verify asks here, and a
// merge checks each index it rewrites.
func (ps *Set) CheckIndexes() error {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	for _, pe := range ps.order {
		if err := pe.loadIdx(); err != nil {
			return err
		}
		if err := pe.idx.checkSum(); err != nil {
			return err
		}
	}
	return nil
}

func (ps *Set) Close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, pe := range ps.order {
		pe.closeFiles()
	}
	ps.order, ps.packs = nil, map[string]*Entry{}
	ps.cacheMu.Lock()
	ps.bases.reset()
	ps.cacheMu.Unlock()
}

// baseCache keeps recently resolved delta bases, so reading a run of
// versions of the same object applies one delta each.
type baseCache struct {
	max, used int
	m         map[baseKey]*baseItem
	// lru is the sentinel of a ring of the items, most recently used
	// first: eviction takes the oldest in constant time. (A scan for the
	// oldest made every put cost the whole cache once it was full, and a
	// push that reads millions of objects spent most of its time there.)
	lru baseItem
}

type baseKey struct {
	pe  *Entry
	off int64
}

type baseItem struct {
	key        baseKey
	t          object.Type
	data       []byte
	prev, next *baseItem
}

func newBaseCache(max int) *baseCache {
	c := &baseCache{max: max}
	c.reset()
	return c
}

func (c *baseCache) reset() {
	c.m, c.used = map[baseKey]*baseItem{}, 0
	c.lru.prev, c.lru.next = &c.lru, &c.lru
}

func (c *baseCache) unlink(it *baseItem) {
	it.prev.next, it.next.prev = it.next, it.prev
}

func (c *baseCache) pushFront(it *baseItem) {
	it.prev, it.next = &c.lru, c.lru.next
	c.lru.next.prev = it
	c.lru.next = it
}

func (c *baseCache) get(pe *Entry, off int64) (object.Type, []byte, bool) {
	it, ok := c.m[baseKey{pe, off}]
	if !ok {
		return 0, nil, false
	}
	c.unlink(it)
	c.pushFront(it)
	return it.t, it.data, true
}

func (c *baseCache) put(pe *Entry, off int64, t object.Type, data []byte) {
	if len(data) > c.max/4 {
		return
	}
	k := baseKey{pe, off}
	if _, ok := c.m[k]; ok {
		return
	}
	for c.used+len(data) > c.max && c.lru.prev != &c.lru {
		old := c.lru.prev
		c.unlink(old)
		delete(c.m, old.key)
		c.used -= len(old.data)
	}
	it := &baseItem{key: k, t: t, data: data}
	c.pushFront(it)
	c.m[k] = it
	c.used += len(data)
}
