package pack

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"strconv"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// indexed is what indexing keeps of each object of a received pack: 40
// bytes, where go-git's Parser kept a record of every object with its
// children and (for a while) its content — about 3 GB for a clone of a
// million thoughts.
type indexed struct {
	off uint64
	id  object.Hash
	crc uint32
	// kind is the object's type and size as the indexer found them
	// (see kindOf); the packs it writes (write.go, merge.go) leave it 0.
	kind uint32
}

// pendingDelta is a delta whose base was not known when the sequential
// pass met it: a REF_DELTA (its base is named by id, which the pass does
// not look up), or an OFS_DELTA whose base is itself pending.
type pendingDelta struct {
	i       int // in the indexer's entries
	baseOff int64
	base    object.Hash
}

const (
	// indexWindow is how much of the pack the sequential pass reads at a
	// time; an entry too large for maxIndexWindow is inflated as a stream.
	indexWindow    = 1 << 20
	maxIndexWindow = 8 << 20
	// streamHashSize is the size above which a whole object is hashed as
	// it inflates instead of being held (it is then no delta's cached
	// base: a delta of it reads it again).
	streamHashSize = 16 << 20
	// maxDeltaChain is as deep as a chain of deltas may go (Set.readAt's
	// bound).
	maxDeltaChain = 10000
)

// indexCacheSize bounds the objects the indexer keeps as delta bases
// (tests set it to nothing, so that every base is read again).
var indexCacheSize = 16 << 20

// indexer indexes a pack file in one sequential pass: each entry's offset
// and CRC-32 are recorded, whole objects hashed as they inflate, and an
// OFS_DELTA resolved at once against its base, which comes earlier in the
// pack and is taken from a bounded cache or read again by offset. REF_DELTAs
// (and deltas of them) wait for the end of the pass, when every id of the
// pack is known; a base that is not in the pack (a thin pack) is refused.
type indexer struct {
	f    *os.File
	end  int64 // where the entries end: the trailer follows
	name string

	entries []indexed // in offset order until the end
	pending []pendingDelta
	// waiting is the offset of every pending delta, which an OFS_DELTA of
	// it must wait for too.
	waiting map[int64]bool
	// refBase is the base's offset of each resolved REF_DELTA: reading
	// it again (as a base) needs it, and the pack names only the id.
	refBase map[int64]int64

	cache *baseCache
	key   *Entry // names this pack in the cache's keys

	win    []byte // the pack from winOff
	winOff int64
	br     bytes.Reader
	zr     io.ReadCloser
}

// indexPack indexes the pack in f (size bytes, trailer included, whose
// header says it holds count objects) and returns its objects sorted by id.
// Every entry is inflated and checked against the size its header
// declares, and every object is hashed whole, deltas applied: an index it
// returns names only objects the store can read.
func indexPack(f *os.File, size int64, count int) ([]indexed, error) {
	ix := &indexer{
		f: f, end: size - 20, name: f.Name(),
		entries: make([]indexed, 0, count),
		waiting: map[int64]bool{},
		refBase: map[int64]int64{},
		cache:   newBaseCache(indexCacheSize),
		key:     &Entry{name: "indexed"},
		win:     make([]byte, 0, indexWindow),
		winOff:  12,
	}
	off := int64(12)
	for n := range count {
		if off >= ix.end {
			return nil, fmt.Errorf("the pack ends after %d of its %d objects", n, count)
		}
		next, err := ix.entry(off)
		if err != nil {
			return nil, fmt.Errorf("object %d of %d, at offset %d: %w", n+1, count, off, err)
		}
		off = next
	}
	if off != ix.end {
		return nil, fmt.Errorf("%d bytes follow the last of its %d objects", ix.end-off, count)
	}
	ix.win = nil
	if err := ix.resolvePending(); err != nil {
		return nil, err
	}
	sortByID(ix.entries)
	return ix.entries, nil
}

// window returns the pack's bytes from off, at least n of them (fewer only
// where the entries end), reading more of the file when they are not
// already in the window.
func (ix *indexer) window(off int64, n int) ([]byte, error) {
	n = int(min(int64(n), ix.end-off))
	if off >= ix.winOff && off+int64(n) <= ix.winOff+int64(len(ix.win)) {
		return ix.win[off-ix.winOff:], nil
	}
	keep := 0
	if off >= ix.winOff && off < ix.winOff+int64(len(ix.win)) {
		keep = copy(ix.win[:cap(ix.win)], ix.win[off-ix.winOff:])
	}
	if n > cap(ix.win) {
		grown := make([]byte, keep, n)
		copy(grown, ix.win[:keep])
		ix.win = grown
	}
	fill := int(min(int64(cap(ix.win)), ix.end-off))
	ix.win, ix.winOff = ix.win[:fill], off
	if _, err := ix.f.ReadAt(ix.win[keep:], off+int64(keep)); err != nil {
		return nil, err
	}
	return ix.win, nil
}

// entry indexes the entry at off and returns where it ends.
func (ix *indexer) entry(off int64) (int64, error) {
	raw, err := ix.window(off, 64)
	if err != nil {
		return 0, err
	}
	h, err := parseEntryHead(raw, off, ix.end-off)
	if err != nil {
		return 0, err
	}
	i := len(ix.entries)
	// Appended now, so that the bounds of the previous entry (perhaps
	// this one's base) are known.
	ix.entries = append(ix.entries, indexed{off: uint64(off)})
	var data []byte
	var sum object.Hash
	var next int64
	bound := int64(h.n) + zlibBound(h.size)
	if bound <= maxIndexWindow {
		if raw, err = ix.window(off, int(bound)); err != nil {
			return 0, err
		}
		var n int
		data, n, err = ix.inflateWindow(raw[h.n:], h.size)
		if err == nil {
			next = off + int64(h.n+n)
			ix.entries[i].crc = crc32.ChecksumIEEE(raw[:h.n+n])
		} else if off+bound >= ix.end {
			return 0, err
		}
		// Else the stream is longer than zlib makes them: read it as a
		// stream below.
	}
	if next == 0 {
		hashOnly := h.typ >= 1 && h.typ <= 4 && h.size > streamHashSize
		if data, sum, next, err = ix.inflateStream(off, h, hashOnly); err != nil {
			return 0, err
		}
		if ix.entries[i].crc, err = ix.crcOf(off, next); err != nil {
			return 0, err
		}
	}
	switch h.typ {
	case 1, 2, 3, 4:
		t := object.Type(h.typ)
		if data != nil {
			sum = object.HashObject(t, data)
			ix.cache.put(ix.key, off, t, data)
		}
		ix.entries[i].id = sum
		ix.entries[i].kind = kindOf(t, h.size)
	case ofsDeltaType:
		if len(ix.waiting) > 0 && ix.waiting[h.baseOff] {
			ix.wait(i, pendingDelta{i: i, baseOff: h.baseOff})
			break
		}
		if _, ok := ix.find(h.baseOff); !ok {
			return 0, fmt.Errorf("its delta base offset %d is not the start of an object", h.baseOff)
		}
		if ix.entries[i].id, ix.entries[i].kind, err = ix.apply(off, h.baseOff, data); err != nil {
			return 0, err
		}
	case refDeltaType:
		ix.wait(i, pendingDelta{i: i, baseOff: -1, base: h.refBase})
	}
	return next, nil
}

func (ix *indexer) wait(i int, p pendingDelta) {
	ix.pending = append(ix.pending, p)
	ix.waiting[int64(ix.entries[i].off)] = true
}

// apply resolves the delta at off, whose inflated delta is d (nil to read
// it again), against the object at baseOff, caches the result and returns
// its id and kind.
func (ix *indexer) apply(off, baseOff int64, d []byte) (object.Hash, uint32, error) {
	t, base, err := ix.content(baseOff, 1)
	if err != nil {
		return object.ZeroHash, 0, fmt.Errorf("its delta base at %d: %w", baseOff, err)
	}
	if d == nil {
		i, _ := ix.find(off)
		raw, err := ix.raw(i)
		if err != nil {
			return object.ZeroHash, 0, err
		}
		h, err := parseEntryHeader(raw, off)
		if err != nil {
			return object.ZeroHash, 0, err
		}
		if d, err = inflateEntry(raw[h.n:], h.size); err != nil {
			return object.ZeroHash, 0, err
		}
	}
	out, err := delta.Patch(base, d)
	if err != nil {
		return object.ZeroHash, 0, err
	}
	ix.cache.put(ix.key, off, t, out)
	return object.HashObject(t, out), kindOf(t, len(out)), nil
}

// content returns the object at off, from the cache or read again from
// the pack (whose entries before the one being indexed are all known).
func (ix *indexer) content(off int64, depth int) (object.Type, []byte, error) {
	if t, data, ok := ix.cache.get(ix.key, off); ok {
		return t, data, nil
	}
	if depth > maxDeltaChain {
		return 0, nil, errors.New("delta chain too deep")
	}
	i, ok := ix.find(off)
	if !ok {
		return 0, nil, fmt.Errorf("no object at offset %d", off)
	}
	raw, err := ix.raw(i)
	if err != nil {
		return 0, nil, err
	}
	h, err := parseEntryHeader(raw, off)
	if err != nil {
		return 0, nil, err
	}
	data, err := inflateEntry(raw[h.n:], h.size)
	if err != nil {
		return 0, nil, err
	}
	var t object.Type
	switch h.typ {
	case 1, 2, 3, 4:
		t = object.Type(h.typ)
	default:
		baseOff, ok := h.baseOff, h.typ == ofsDeltaType
		if !ok {
			baseOff, ok = ix.refBase[off]
		}
		if !ok {
			return 0, nil, fmt.Errorf("the delta at %d is not resolved", off)
		}
		var base []byte
		if t, base, err = ix.content(baseOff, depth+1); err != nil {
			return 0, nil, err
		}
		if data, err = delta.Patch(base, data); err != nil {
			return 0, nil, err
		}
	}
	ix.cache.put(ix.key, off, t, data)
	return t, data, nil
}

// find returns the position of the entry at off among those indexed so
// far (still in offset order).
func (ix *indexer) find(off int64) (int, bool) {
	return slices.BinarySearchFunc(ix.entries, uint64(off), func(e indexed, o uint64) int { return cmp.Compare(e.off, o) })
}

// raw reads the i-th entry whole, header and compressed payload.
func (ix *indexer) raw(i int) ([]byte, error) {
	off, end := int64(ix.entries[i].off), ix.end
	if i+1 < len(ix.entries) {
		end = int64(ix.entries[i+1].off)
	}
	raw := make([]byte, end-off)
	if _, err := ix.f.ReadAt(raw, off); err != nil {
		return nil, err
	}
	return raw, nil
}

// inflateEntry inflates an entry's payload z (exactly the entry's, which
// the sequential pass checked) of size bytes.
func inflateEntry(z []byte, size int) ([]byte, error) {
	if data, ok := StoredPayload(z, size); ok {
		return bytes.Clone(data), nil
	}
	return inflateRaw(z, size)
}

// zlibReader returns the indexer's inflater, reading r.
func (ix *indexer) zlibReader(r io.Reader) (io.Reader, error) {
	if ix.zr == nil {
		zr, err := zlib.NewReader(r)
		if err != nil {
			return nil, err
		}
		ix.zr = zr
		return zr, nil
	}
	return ix.zr, ix.zr.(zlib.Resetter).Reset(r, nil)
}

// inflateWindow inflates the zlib stream at the start of z, which must
// hold size bytes and end there, and returns them and the stream's
// length.
func (ix *indexer) inflateWindow(z []byte, size int) ([]byte, int, error) {
	if data, ok := StoredPayload(z, size); ok {
		n := 2 + 5 + size + 4
		if z[2] == 0 {
			n += 5 // the empty final block Go's compress/flate adds
		}
		// Copied out of the window, which the next entries reuse.
		return bytes.Clone(data), n, nil
	}
	ix.br.Reset(z)
	zr, err := ix.zlibReader(&ix.br)
	if err != nil {
		return nil, 0, fmt.Errorf("inflate: %w", err)
	}
	out := make([]byte, size)
	if err := readExactly(zr, out); err != nil {
		return nil, 0, err
	}
	return out, len(z) - ix.br.Len(), nil
}

// readExactly fills out from the zlib stream zr and checks that the stream
// ends there, its checksum included: an entry must inflate to exactly the
// size its header declares.
func readExactly(zr io.Reader, out []byte) error {
	if _, err := io.ReadFull(zr, out); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return fmt.Errorf("it inflates to less than the %d bytes its header declares", len(out))
		}
		return fmt.Errorf("inflate: %w", err)
	}
	return endOfStream(zr, len(out))
}

func endOfStream(zr io.Reader, size int) error {
	var one [1]byte
	switch _, err := io.ReadFull(zr, one[:]); err {
	case io.EOF:
		return nil
	case nil:
		return fmt.Errorf("it inflates to more than the %d bytes its header declares", size)
	default:
		return fmt.Errorf("inflate: %w", err)
	}
}

// inflateStream inflates the entry at off straight from the file, for an
// entry too large for the window; with hashOnly (a large whole object) it
// returns the object's id instead of its content.
func (ix *indexer) inflateStream(off int64, h entryHead, hashOnly bool) ([]byte, object.Hash, int64, error) {
	start := off + int64(h.n)
	sr := io.NewSectionReader(ix.f, start, ix.end-start)
	br := bufio.NewReaderSize(sr, 64<<10)
	zr, err := ix.zlibReader(br)
	if err != nil {
		return nil, object.ZeroHash, 0, fmt.Errorf("inflate: %w", err)
	}
	var data []byte
	var sum object.Hash
	if hashOnly {
		var oh hash.Hash = sha1.New()
		oh.Write([]byte(object.Type(h.typ).String() + " " + strconv.Itoa(h.size) + "\x00"))
		if n, err := io.CopyN(oh, zr, int64(h.size)); err != nil {
			if err == io.EOF {
				return nil, sum, 0, fmt.Errorf("it inflates to %d bytes, less than the %d its header declares", n, h.size)
			}
			return nil, sum, 0, fmt.Errorf("inflate: %w", err)
		}
		if err := endOfStream(zr, h.size); err != nil {
			return nil, sum, 0, err
		}
		copy(sum[:], oh.Sum(nil))
	} else {
		data = make([]byte, h.size)
		if err := readExactly(zr, data); err != nil {
			return nil, sum, 0, err
		}
	}
	pos, _ := sr.Seek(0, io.SeekCurrent)
	return data, sum, start + pos - int64(br.Buffered()), nil
}

// crcOf is the CRC-32 of the pack's bytes from off to end.
func (ix *indexer) crcOf(off, end int64) (uint32, error) {
	c := crc32.NewIEEE()
	if _, err := io.Copy(c, io.NewSectionReader(ix.f, off, end-off)); err != nil {
		return 0, err
	}
	return c.Sum32(), nil
}

// resolvePending resolves the deltas the sequential pass left waiting,
// as git's index-pack does all of them: from each resolved object, the
// deltas of it, then theirs. A REF_DELTA's base is found by id among the
// objects resolved by the pass, or among those resolved here.
func (ix *indexer) resolvePending() error {
	if len(ix.pending) == 0 {
		return nil
	}
	var byID, byOff []pendingDelta
	for _, p := range ix.pending {
		if p.baseOff < 0 {
			byID = append(byID, p)
		} else {
			byOff = append(byOff, p)
		}
	}
	slices.SortFunc(byID, func(a, b pendingDelta) int { return bytes.Compare(a.base[:], b.base[:]) })
	slices.SortFunc(byOff, func(a, b pendingDelta) int { return cmp.Compare(a.baseOff, b.baseOff) })
	// The objects the pass resolved, by id, to find REF_DELTAs' bases.
	known := make([]int32, 0, len(ix.entries)-len(ix.pending))
	for i, e := range ix.entries {
		if !ix.waiting[int64(e.off)] {
			known = append(known, int32(i))
		}
	}
	slices.SortFunc(known, func(a, b int32) int { return bytes.Compare(ix.entries[a].id[:], ix.entries[b].id[:]) })
	var queue []int
	for j := 0; j < len(byID); {
		id := byID[j].base
		if k, ok := slices.BinarySearchFunc(known, id, func(i int32, id object.Hash) int { return bytes.Compare(ix.entries[i].id[:], id[:]) }); ok {
			queue = append(queue, int(known[k]))
		}
		for j < len(byID) && byID[j].base == id {
			j++
		}
	}
	known = nil
	for len(queue) > 0 {
		b := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		base := ix.entries[b]
		var children []pendingDelta
		j, _ := slices.BinarySearchFunc(byID, base.id, func(p pendingDelta, id object.Hash) int { return bytes.Compare(p.base[:], id[:]) })
		for ; j < len(byID) && byID[j].base == base.id; j++ {
			children = append(children, byID[j])
		}
		j, _ = slices.BinarySearchFunc(byOff, int64(base.off), func(p pendingDelta, o int64) int { return cmp.Compare(p.baseOff, o) })
		for ; j < len(byOff) && byOff[j].baseOff == int64(base.off); j++ {
			children = append(children, byOff[j])
		}
		for _, c := range children {
			off := int64(ix.entries[c.i].off)
			if !ix.waiting[off] {
				continue // a REF_DELTA whose base id is in the pack twice
			}
			if c.baseOff < 0 {
				ix.refBase[off] = int64(base.off)
			}
			id, kind, err := ix.apply(off, int64(base.off), nil)
			if err != nil {
				return fmt.Errorf("object at offset %d: %w", off, err)
			}
			ix.entries[c.i].id, ix.entries[c.i].kind = id, kind
			delete(ix.waiting, off)
			queue = append(queue, c.i)
		}
	}
	if len(ix.waiting) == 0 {
		return nil
	}
	// Report the first in the pack.
	for _, p := range ix.pending {
		off := int64(ix.entries[p.i].off)
		if !ix.waiting[off] {
			continue
		}
		if p.baseOff < 0 {
			return fmt.Errorf("the delta at offset %d has base %s, which is not among the objects of the pack (a thin pack, which the store does not take, or deltas in a cycle)", off, p.base)
		}
	}
	for _, p := range ix.pending {
		if off := int64(ix.entries[p.i].off); ix.waiting[off] {
			return fmt.Errorf("the delta at offset %d cannot be resolved: its bases form a cycle", off)
		}
	}
	return nil
}

// writeIndexV2 writes the index (version 2) of a pack whose checksum is
// packSum and whose objects, sorted by id, are entries. Offsets above
// off32 go to the table of 64-bit offsets (git's default is 2^31-1; its
// index-pack --index-version=2,<off32> lowers it, which tests use).
func writeIndexV2(w io.Writer, entries []indexed, packSum object.Hash, off32 uint64) error {
	sum := sha1.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, sum), 64<<10)
	bw.Write(idxMagic)
	var fanout [256]uint32
	for _, e := range entries {
		fanout[e.id[0]]++
	}
	var b [8]byte
	var total uint32
	for _, n := range fanout {
		total += n
		binary.BigEndian.PutUint32(b[:4], total)
		bw.Write(b[:4])
	}
	for _, e := range entries {
		bw.Write(e.id[:])
	}
	for _, e := range entries {
		binary.BigEndian.PutUint32(b[:4], e.crc)
		bw.Write(b[:4])
	}
	var large []uint64
	for _, e := range entries {
		o := uint32(e.off)
		if e.off > off32 || e.off >= 1<<31 {
			o = 0x80000000 | uint32(len(large))
			large = append(large, e.off)
		}
		binary.BigEndian.PutUint32(b[:4], o)
		bw.Write(b[:4])
	}
	for _, o := range large {
		binary.BigEndian.PutUint64(b[:], o)
		bw.Write(b[:])
	}
	bw.Write(packSum[:])
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(sum.Sum(nil))
	return err
}

// trailHasher hashes all that is written to it but the last 20 bytes,
// which it keeps: a pack's checksum covers everything before its trailer.
type trailHasher struct {
	h    hash.Hash
	tail [20]byte
	n    int
}

func (t *trailHasher) Write(p []byte) (int, error) {
	if t.n+len(p) <= len(t.tail) {
		t.n += copy(t.tail[t.n:], p)
		return len(p), nil
	}
	over := t.n + len(p) - len(t.tail) // bytes that leave the tail
	fromTail := min(over, t.n)
	t.h.Write(t.tail[:fromTail])
	kept := copy(t.tail[:], t.tail[fromTail:t.n])
	over -= fromTail
	t.h.Write(p[:over])
	t.n = kept + copy(t.tail[kept:], p[over:])
	return len(p), nil
}
