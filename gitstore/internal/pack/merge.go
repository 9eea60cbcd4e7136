package pack

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// Each flush adds a pack, so packs are merged to keep their number small:
// after a flush, while there are more than MaxPacks, the newest packs are
// merged geometrically (like `git repack --geometric=2`), so each byte is
// rewritten O(log n) times. A merge copies the compressed entries as they
// are — no object is inflated — re-pointing OFS deltas to their bases' new
// offsets and dropping objects already copied from another pack.
const MaxPacks = 8

// PickMerge chooses the newest packs to merge: starting from the newest,
// take the next older pack while it is less than twice as big as all those
// taken, so the result keeps the sizes geometric.
func PickMerge(newestFirst []*Entry) []*Entry {
	if len(newestFirst) <= MaxPacks {
		return nil
	}
	k := 1
	var sum int64 = newestFirst[0].size
	for k < len(newestFirst) && (newestFirst[k].size < 2*sum || len(newestFirst)-k >= MaxPacks) {
		sum += newestFirst[k].size
		k++
	}
	if k < 2 {
		return nil
	}
	return newestFirst[:k]
}

// rawEntry is one entry of a pack being merged. A merge holds one for
// every object of every pack it merges, all at once, and merges late in a
// ledger's life take in nearly all of it (at 64 sessions × 300 thoughts,
// some 130,000 objects): so it is kept to 48 bytes. The compressed
// payload runs from off+hdr to the next entry's offset (see prep.span);
// merges stream it from file to file rather than hold packs in memory.
type rawEntry struct {
	id  object.Hash
	typ uint8
	hdr uint8 // the header's length: at most 10 size bytes and a 20-byte base
	// baseOff is an OFS_DELTA's base's offset in the old pack, or a
	// REF_DELTA's base's index in the pack's refBases (REF_DELTA is rare:
	// our packs use OFS_DELTA, received ones may not).
	baseOff int64
	off     int64 // in its old pack
	size    int64
}

// readRawEntries lists a pack's entries in file order without inflating
// them, reading only their headers. refBases holds the base ids of its
// REF_DELTA entries.
func readRawEntries(pe *Entry, f *os.File, br *bufio.Reader) (entries []rawEntry, refBases []object.Hash, err error) {
	var hdr [12]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil || string(hdr[:4]) != "PACK" {
		return nil, nil, fmt.Errorf("%s is not a pack", f.Name())
	}
	if err := pe.loadIdx(); err != nil {
		return nil, nil, err
	}
	// A merge rewrites every entry under the id the index gives it, so a
	// damaged index would spread into the merged pack: it is checked whole
	// here, as lookups do not.
	if err := pe.idx.checkSum(); err != nil {
		return nil, nil, err
	}
	// The header's count, bounded by the file's size against a damaged pack.
	entries = make([]rawEntry, 0, min(int64(binary.BigEndian.Uint32(hdr[8:])), pe.size/4, int64(pe.idx.Count())))
	for i := range pe.idx.Count() {
		e, err := pe.idx.Entry(i)
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, rawEntry{id: e.ID, off: e.Offset})
	}
	if int(binary.BigEndian.Uint32(hdr[8:])) != len(entries) {
		return nil, nil, fmt.Errorf("%s: header and index disagree on the object count", f.Name())
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].off < entries[j].off })
	// One sequential, buffered pass over the file: an entry's header
	// follows the previous entry's payload, which is skipped.
	end := pe.size - 20
	br.Reset(io.NewSectionReader(f, 0, end))
	pos := int64(0)
	for i := range entries {
		e := &entries[i]
		next := end
		if i+1 < len(entries) {
			next = entries[i+1].off
		}
		if e.off < pos {
			return nil, nil, fmt.Errorf("%s: overlapping entries at %d", f.Name(), e.off)
		}
		if _, err := br.Discard(int(e.off - pos)); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f.Name(), err)
		}
		pos = e.off
		byteAt := func() (byte, error) {
			if pos >= next {
				return 0, fmt.Errorf("%s: malformed entry at %d", f.Name(), e.off)
			}
			c, err := br.ReadByte()
			if err != nil {
				return 0, fmt.Errorf("%s: malformed entry at %d: %w", f.Name(), e.off, err)
			}
			pos++
			return c, nil
		}
		c, err := byteAt()
		if err != nil {
			return nil, nil, err
		}
		e.typ = (c >> 4) & 7
		e.size = int64(c & 0x0f)
		for shift := 4; c&0x80 != 0; shift += 7 {
			if c, err = byteAt(); err != nil {
				return nil, nil, err
			}
			e.size |= int64(c&0x7f) << shift
		}
		switch e.typ {
		case ofsDeltaType:
			if c, err = byteAt(); err != nil {
				return nil, nil, err
			}
			dist := int64(c & 0x7f)
			for c&0x80 != 0 {
				if c, err = byteAt(); err != nil {
					return nil, nil, err
				}
				dist = ((dist + 1) << 7) | int64(c&0x7f)
			}
			e.baseOff = e.off - dist
		case refDeltaType:
			var b object.Hash
			for j := range b {
				if b[j], err = byteAt(); err != nil {
					return nil, nil, err
				}
			}
			e.baseOff = int64(len(refBases))
			refBases = append(refBases, b)
		}
		if next < pos || pos-e.off > 255 {
			return nil, nil, fmt.Errorf("%s: malformed entry at %d", f.Name(), e.off)
		}
		e.hdr = uint8(pos - e.off)
	}
	return entries, refBases, nil
}

// maxLinkedDepth bounds the delta chains that merges build by linking
// versions across packs (git's own aggressive repack allows 250; reading an
// old version applies at most this many small edits).
const maxLinkedDepth = 1000

// outEntry is one entry of the merged pack, 48 bytes for the reason
// rawEntry is small. Its payload is streamed from entry at of source pack
// src, or, when src is -1, re-encoded (the merge's redone map, by the
// entry's index in the merged pack).
type outEntry struct {
	id    object.Hash
	depth int32    // of its delta chain
	pos   int64    // in the merged pack
	head  [2]int32 // its header: where it is in the merge's header bytes
	src   int32
	at    int32
}

// packStream reads the source packs front to back: a merge copies each
// pack's entries in offset order, one pack after another, so payloads
// stream through one buffer instead of one read each.
type packStream struct {
	r     *bufio.Reader
	files []*os.File
	src   int // the pack r reads; -1 before the first
	pos   int64
}

func (s *packStream) copyTo(w io.Writer, src int, off, n int64) error {
	if src != s.src {
		s.r.Reset(s.files[src])
		s.src, s.pos = src, 0
	}
	if off < s.pos {
		return fmt.Errorf("merge: entry at %d read out of order (at %d)", off, s.pos)
	}
	if _, err := s.r.Discard(int(off - s.pos)); err != nil {
		return err
	}
	// Straight from the reader's buffer: io.CopyN allocated a buffer of
	// the entry's size for every entry.
	s.pos = off + n
	for n > 0 {
		k := int(min(n, int64(s.r.Size())))
		b, err := s.r.Peek(k)
		if len(b) > 0 {
			if _, werr := w.Write(b); werr != nil {
				return werr
			}
			s.r.Discard(len(b))
			n -= int64(len(b))
		}
		if err != nil && n > 0 {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// Merge writes one pack holding every object of packs, durably, and
// removes the merged packs. The newest pack comes first and a duplicate
// keeps its newest copy, so every delta's base precedes it. A whole object
// that a newer pack's first version of the same path replaced (see links)
// becomes a delta of that version, read back through read.
func Merge(packDir, linksDir string, newestFirst []*Entry, read func(object.Hash) (object.Type, []byte, error)) error {
	files := make([]*os.File, len(newestFirst))
	defer func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}()
	pb := getPackBuffers(io.Discard)
	defer putPackBuffers(pb)
	br := pb.reader()
	preps, olderOf, total, err := readMergeSources(packDir, linksDir, newestFirst, files, br)
	if err != nil {
		return err
	}
	plan, err := planMerge(newestFirst, preps, olderOf, total, files, read, pb)
	if err != nil {
		return err
	}
	// What only the planning needed goes before the index is built, so
	// that the merge's peak is the larger of the two phases, not their sum.
	for pi := range preps {
		p := &preps[pi]
		p.base, p.depth, p.root, p.maxBelow = nil, nil, nil, nil
	}

	tmp, err := os.CreateTemp(packDir, "tmp_pack_")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	pb.bw.Reset(tmp)
	bw := pb.bw
	cw := &countingWriter{w: bw, sum: sha1.New()}
	idx, err := writeMerged(cw, plan, preps, files, br)
	if err != nil {
		return err
	}
	keep := plan.keep
	// Only the index is needed from here on.
	plan, preps = nil, nil
	name, err := finishPack(packDir, tmp, bw, cw, idx)
	if err != nil {
		return err
	}
	WriteLinks(linksDir, "pack-"+name.String(), keep)
	for _, pe := range newestFirst {
		base := filepath.Join(packDir, pe.name)
		os.Remove(base + ".idx") // the index first: without it git ignores the pack
		os.Remove(base + ".pack")
		os.Remove(filepath.Join(linksDir, pe.name))
	}
	return durable.SyncDir(packDir)
}

// mergeSource is one pack of a merge, its entries indexed in offset
// order: an entry's delta base, its depth below the whole object its
// chain starts from, that root, and (for a root) the depth of its deepest
// delta.
type mergeSource struct {
	entries  []rawEntry
	refBases []object.Hash
	end      int64 // where the last entry's payload ends
	base     []int32
	depth    []int32
	root     []int32
	maxBelow []int32
}

// span is where entry i's compressed payload lies in its pack.
func (p *mergeSource) span(i int32) (off, n int64) {
	e := &p.entries[i]
	next := p.end
	if int(i)+1 < len(p.entries) {
		next = p.entries[i+1].off
	}
	return e.off + int64(e.hdr), next - e.off - int64(e.hdr)
}

// readMergeSources opens each pack of the merge into files (the caller
// closes them) and reads its entries' layout, and the links recorded for
// it: olderOf maps an older version to the Link to the newer version that
// replaced it, the newest pack's link winning. total counts the entries
// of every pack, duplicates included.
func readMergeSources(packDir, linksDir string, newestFirst []*Entry, files []*os.File, br *bufio.Reader) (preps []mergeSource, olderOf map[object.Hash]Link, total int, err error) {
	preps = make([]mergeSource, len(newestFirst))
	olderOf = map[object.Hash]Link{}
	for pi, pe := range newestFirst {
		f, err := os.Open(filepath.Join(packDir, pe.name+".pack"))
		if err != nil {
			return nil, nil, 0, err
		}
		files[pi] = f
		entries, refBases, err := readRawEntries(pe, f, br)
		if err != nil {
			return nil, nil, 0, err
		}
		n := len(entries)
		total += n
		ints := make([]int32, 4*n)
		p := mergeSource{entries: entries, refBases: refBases, end: pe.size - 20,
			base: ints[:n], depth: ints[n : 2*n], root: ints[2*n : 3*n], maxBelow: ints[3*n:]}
		for i, e := range entries {
			p.base[i], p.root[i] = -1, int32(i)
			if e.typ == ofsDeltaType {
				// bases precede their deltas; entries are in offset order
				if b, ok := slices.BinarySearchFunc(entries[:i], e.baseOff, func(x rawEntry, off int64) int { return cmp.Compare(x.off, off) }); ok {
					p.base[i] = int32(b)
					p.depth[i] = p.depth[b] + 1
					p.root[i] = p.root[b]
				}
			}
			if r := p.root[i]; p.depth[i] > p.maxBelow[r] {
				p.maxBelow[r] = p.depth[i]
			}
		}
		preps[pi] = p
		for _, l := range ReadLinks(linksDir, pe.name) {
			if _, seen := olderOf[l.Older]; !seen {
				olderOf[l.Older] = l
			}
		}
	}
	return preps, olderOf, total, nil
}

// mergePlan is the merged pack before it is written: its entries in
// order, their headers, the payloads re-encoded as deltas, and the links
// to carry over.
type mergePlan struct {
	out    []outEntry
	redone map[int32][]byte // re-encoded payloads, by index in out
	heads  []byte           // every entry's header, out[i].head indexes it
	keep   []Link           // links whose older version is outside this merge
}

// planMerge lays out the merged pack: each object once, from the newest
// pack that holds it, OFS deltas re-pointed at their bases' new offsets,
// and a whole older version re-encoded as a delta of its newer one when
// the chain stays within maxLinkedDepth. The maps that find an object's
// place are dropped on return, before the pack is written.
func planMerge(newestFirst []*Entry, preps []mergeSource, olderOf map[object.Hash]Link, total int, files []*os.File, read func(object.Hash) (object.Type, []byte, error), pb *packBuffers) (*mergePlan, error) {
	// where maps every object of the merge to its entry in out; placed
	// maps each source entry (by pack, then index) to the same.
	where := make(map[object.Hash]int32, total)
	placed := make([][]int32, len(preps))
	plan := &mergePlan{out: make([]outEntry, 0, total), redone: map[int32][]byte{}}
	pos := int64(12)
	var zbuf bytes.Buffer
	for pi := range preps {
		p := &preps[pi]
		placed[pi] = make([]int32, len(p.entries))
		for i := range p.entries {
			e := &p.entries[i]
			if at, dup := where[e.id]; dup {
				placed[pi][i] = at
				continue
			}
			h0 := len(plan.heads)
			plan.heads = appendEntryHeader(plan.heads, int(e.typ), int(e.size))
			var data []byte
			depth := int32(0)
			switch {
			case e.typ == ofsDeltaType:
				if p.base[i] < 0 {
					return nil, fmt.Errorf("pack %s: delta at %d has no base at %d", newestFirst[pi].name, e.off, e.baseOff)
				}
				b := &plan.out[placed[pi][p.base[i]]]
				plan.heads = appendOfsOffset(plan.heads, pos-b.pos)
				depth = b.depth + 1
			case e.typ == refDeltaType:
				plan.heads = append(plan.heads, p.refBases[e.baseOff][:]...)
			default:
				l, linked := olderOf[e.id]
				at, newerPlaced := where[l.Newer]
				if linked && newerPlaced {
					n := &plan.out[at]
					if n.depth+1+p.maxBelow[i] <= maxLinkedDepth {
						off, size := p.span(int32(i))
						if h, d, ok := relink(int(e.size), files[pi], off, size, l, pos-n.pos, read, pb, &zbuf); ok {
							plan.heads = append(plan.heads[:h0], h...)
							data = d
							depth = n.depth + 1
						}
					}
				}
			}
			at := int32(len(plan.out))
			placed[pi][i] = at
			where[e.id] = at
			oe := outEntry{id: e.id, pos: pos, depth: depth, head: [2]int32{int32(h0), int32(len(plan.heads))}, src: int32(pi), at: int32(i)}
			size := int64(len(data))
			if data != nil {
				oe.src = -1
				plan.redone[at] = data
			} else {
				_, size = p.span(int32(i))
			}
			plan.out = append(plan.out, oe)
			pos += int64(len(plan.heads)-h0) + size
		}
	}
	// The links to keep are found now, while where still exists.
	for older, l := range olderOf {
		if _, in := where[older]; !in {
			plan.keep = append(plan.keep, l)
		}
	}
	return plan, nil
}

// writeMerged writes the planned pack's header and entries to cw, copying
// each payload that was not re-encoded straight from its source pack, and
// returns the index of what it wrote.
func writeMerged(cw *countingWriter, plan *mergePlan, preps []mergeSource, files []*os.File, br *bufio.Reader) ([]indexed, error) {
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(plan.out)))
	cw.Write(hdr[:])
	idx := make([]indexed, 0, len(plan.out))
	stream := &packStream{r: br, files: files, src: -1}
	w := &crcWriter{w: cw}
	for i, o := range plan.out {
		off := cw.n
		w.crc = 0
		if _, err := w.Write(plan.heads[o.head[0]:o.head[1]]); err != nil {
			return nil, err
		}
		if o.src < 0 {
			if _, err := w.Write(plan.redone[int32(i)]); err != nil {
				return nil, err
			}
		} else {
			from, n := preps[o.src].span(o.at)
			if err := stream.copyTo(w, int(o.src), from, n); err != nil {
				return nil, err
			}
		}
		idx = append(idx, indexed{off: uint64(off), id: o.id, crc: w.crc})
	}
	return idx, nil
}

// relink re-encodes a whole entry as a delta of the newer version that
// replaced it, dist bytes back in the merged pack: with the delta the
// flusher recorded, or else one computed from both versions.
func relink(size int, src *os.File, dataOff, dataLen int64, l Link, dist int64, read func(object.Hash) (object.Type, []byte, error), pb *packBuffers, zbuf *bytes.Buffer) ([]byte, []byte, bool) {
	if len(l.Delta) > 0 {
		return deltaEntry(l.Delta, dist, pb, zbuf)
	}
	zr, err := zlib.NewReader(io.NewSectionReader(src, dataOff, dataLen))
	if err != nil {
		return nil, nil, false
	}
	content := make([]byte, size)
	_, err = io.ReadFull(zr, content)
	zr.Close()
	if err != nil {
		return nil, nil, false
	}
	_, base, err := read(l.Newer)
	if err != nil || len(base) == 0 || len(content) == 0 {
		return nil, nil, false
	}
	ed := delta.Diff(base, content)
	if 4*ed.Inserted() >= len(content) {
		return nil, nil, false
	}
	return deltaEntry(ed.GitDelta(len(base)), dist, pb, zbuf)
}

func deltaEntry(delta []byte, dist int64, pb *packBuffers, zbuf *bytes.Buffer) ([]byte, []byte, bool) {
	zbuf.Reset()
	zw := pb.compressor(zbuf)
	zw.Write(delta)
	if zw.Close() != nil {
		return nil, nil, false
	}
	head := appendOfsOffset(entryHeader(ofsDeltaType, len(delta)), dist)
	return head, append([]byte(nil), zbuf.Bytes()...), true
}
