package verify

import (
	"errors"
	"fmt"
	"sort"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/fsck"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/pack"
)

// A session's folder tree and manifest are rewritten by every thought, so
// the versions of each add up to the square of the session's length (1.8 GB
// at 10,000 thoughts), while a pack stores all but a few of them as small
// deltas. Verify therefore checks a packed delta against its base, already
// checked, without rebuilding the version: the entry's bytes are checked
// against its index's CRC-32 (so its object id is the one the writer
// computed), the delta is checked to be well formed against the base, and
// for a tree the entries it inserts or splices are checked as git fsck
// checks a tree, with their neighbours for order. treeRep is what makes
// that possible: a checked tree held as runs of whole entries of a few
// buffers, without its bytes laid out.

// treeBuf is a buffer of whole tree entries, all checked.
type treeBuf struct {
	data []byte
	// bounds holds the offset of each entry and, last, len(data).
	bounds []int
	fresh  bool // made from a delta's inserted or spliced bytes
}

func newTreeBuf(data []byte, fresh bool) (*treeBuf, bool) {
	b := &treeBuf{data: data, fresh: fresh}
	for pos := 0; pos < len(data); {
		next, ok := entryEnd(data, pos)
		if !ok {
			return nil, false
		}
		b.bounds = append(b.bounds, pos)
		pos = next
	}
	b.bounds = append(b.bounds, len(data))
	return b, true
}

// at returns the index of bound p, or -1.
func (b *treeBuf) at(p int) int {
	i := sort.SearchInts(b.bounds, p)
	if i < len(b.bounds) && b.bounds[i] == p {
		return i
	}
	return -1
}

// piece is a run of whole entries of a buffer: lo and hi are its bounds.
type piece struct {
	buf    *treeBuf
	lo, hi int
	// joined says the pair of entries across this piece's start (the last
	// of the piece before and the first of this one) was checked.
	joined bool
}

func (p piece) first() []byte { return p.buf.data[p.lo:p.buf.bounds[p.buf.at(p.lo)+1]] }
func (p piece) last() []byte  { return p.buf.data[p.buf.bounds[p.buf.at(p.hi)-1]:p.hi] }

// treeRep is a checked tree: its pieces in order, and where each starts.
type treeRep struct {
	pieces []piece
	starts []int
	size   int
}

func wholeTreeRep(data []byte) *treeRep {
	b, ok := newTreeBuf(data, false)
	if !ok {
		return nil
	}
	r := &treeRep{size: len(data)}
	if len(data) > 0 {
		r.pieces = []piece{{buf: b, lo: 0, hi: len(data), joined: true}}
		r.starts = []int{0}
	}
	return r
}

// repBuilder lays out a new version from its delta: runs of the base's
// entries, and pending bytes (from a known entry boundary on) not yet
// known to be whole entries.
type repBuilder struct {
	out     []piece
	size    int
	pending []byte
}

// add appends bytes to the pending run.
func (rb *repBuilder) add(p []byte) {
	rb.pending = append(rb.pending, p...)
	rb.size += len(p)
}

// flushPending turns the pending bytes into a fresh buffer when they are
// whole entries; false when the last one is not yet complete.
func (rb *repBuilder) flushPending() bool {
	if len(rb.pending) == 0 {
		return true
	}
	b, ok := newTreeBuf(rb.pending, true)
	if !ok {
		return false
	}
	rb.out = append(rb.out, piece{buf: b, lo: 0, hi: len(b.data)})
	rb.pending = nil
	return true
}

// run appends entries [lo, hi) of buf; joined says the pair across its
// start is a pair the base already had (checked).
func (rb *repBuilder) run(buf *treeBuf, lo, hi int, joined bool) {
	for lo < hi && !rb.flushPending() {
		// The pending bytes end inside an entry that continues into this
		// run: the run is not aligned there, so its first entry joins the
		// pending bytes (rare: a delta cut inside an entry of the base
		// and spliced it with other bytes).
		next := buf.bounds[buf.at(lo)+1]
		rb.add(buf.data[lo:next])
		lo = next
		joined = false
	}
	if lo >= hi {
		return
	}
	rb.size += hi - lo
	if n := len(rb.out); n > 0 && rb.out[n-1].buf == buf && rb.out[n-1].hi == lo {
		rb.out[n-1].hi = hi
		return
	}
	if len(rb.out) > 0 && rb.out[len(rb.out)-1].buf.fresh {
		joined = true // a fresh buffer is checked with both neighbours
	}
	rb.out = append(rb.out, piece{buf: buf, lo: lo, hi: hi, joined: joined})
}

// copyFrom appends base bytes [off, off+n).
func (rb *repBuilder) copyFrom(base *treeRep, off, n int) {
	end := off + n
	i := sort.Search(len(base.starts), func(i int) bool { return base.starts[i] > off }) - 1
	prevWhole := false // the previous piece of this copy was taken whole
	for ; i < len(base.pieces) && base.starts[i] < end; i++ {
		p := base.pieces[i]
		a := p.lo + max(off-base.starts[i], 0)
		b := p.lo + min(end-base.starts[i], p.hi-p.lo)
		whole := a == p.lo && b == p.hi
		// The bounds of p.buf inside [a, b]: b1 the first, b2 the last.
		bs := p.buf.bounds
		j := sort.SearchInts(bs, a)
		k := sort.SearchInts(bs, b+1) - 1
		if j >= len(bs) || k < 0 || bs[j] >= bs[k] {
			rb.add(p.buf.data[a:b])
			prevWhole = false
			continue
		}
		b1, b2 := bs[j], bs[k]
		rb.add(p.buf.data[a:b1])
		rb.run(p.buf, b1, b2, whole && prevWhole && p.joined && len(rb.pending) == 0)
		rb.add(p.buf.data[b2:b])
		prevWhole = whole
	}
}

// deltaTreeRep lays out the tree a delta makes of base. It returns nil when
// the delta is malformed against the base or the result is not a sequence
// of whole entries; the caller then checks the tree the thorough way.
func deltaTreeRep(base *treeRep, d []byte) (*treeRep, error) {
	rb := &repBuilder{}
	size, err := delta.Walk(d, base.size,
		func(off, n int) { rb.copyFrom(base, off, n) },
		func(p []byte) { rb.add(p) })
	if err != nil {
		return nil, err
	}
	if !rb.flushPending() {
		return nil, fmt.Errorf("the tree's last entry is truncated")
	}
	if rb.size != size {
		return nil, fmt.Errorf("delta laid out %d bytes, declared %d", rb.size, size)
	}
	r := &treeRep{pieces: rb.out, size: size, starts: make([]int, len(rb.out))}
	at := 0
	for i, p := range rb.out {
		r.starts[i] = at
		at += p.hi - p.lo
	}
	return r, nil
}

// checkRegions calls check for each part of r not yet checked: each fresh
// buffer with the entry before and after it (for order), and each new
// pair of entries where two runs meet. scan is called with each fresh
// buffer, whose entries' objects the walk has still to read. It then marks
// everything checked, so the versions made from r check only what they
// change.
func (r *treeRep) checkRegions(check func(region []byte) bool, scan func(entries []byte) bool) bool {
	ok := true
	var region []byte
	for i, p := range r.pieces {
		switch {
		case p.buf.fresh:
			region = region[:0]
			if i > 0 {
				region = append(region, r.pieces[i-1].last()...)
			}
			region = append(region, p.buf.data...)
			if i+1 < len(r.pieces) {
				region = append(region, r.pieces[i+1].first()...)
			}
			ok = check(region) && scan(p.buf.data) && ok
		case i > 0 && !p.joined && !r.pieces[i-1].buf.fresh:
			region = append(append(region[:0], r.pieces[i-1].last()...), p.first()...)
			ok = check(region) && ok
		}
	}
	if !ok {
		return false
	}
	for i := range r.pieces {
		r.pieces[i].joined = true
		r.pieces[i].buf.fresh = false
	}
	return true
}

// packKey names a pack entry, as an OFS delta names its base.
type packKey struct {
	pack *pack.Entry
	off  int64
}

// packedInfo is what the check found of a pack entry it took as whole.
type packedInfo struct {
	typ  objType
	size int
}

// maxReps bounds the tree layouts kept: a delta's base is nearly always
// the version of the same tree checked just before.
const maxReps = 64

// How viaPack went.
const (
	packNot   = iota // not a packed object, or verify --full: the thorough way
	packDone         // checked (or reported) through its pack entry
	packWhole        // a whole entry, checked and hashed: data is the object
	packBase         // a delta whose base was not checked: the thorough way, then noted
)

// viaPack checks an object the walk reached through its pack entry when
// it can (see the comment at the top of this file). For a tree it also
// checks the entries its delta brings and queues their objects with push.
func (v *Check) viaPack(it walkItem, push func(parent walkItem, name []byte, dir bool, id hash)) (data []byte, key packKey, how int) {
	if v.full {
		return nil, key, packNot
	}
	raw, err := v.src.ReadRaw(it.id)
	if errors.Is(err, errNotFound) {
		return nil, key, packNot
	}
	corrupt := func(problem string) {
		v.status[it.id] = problem
		v.Fail("corrupt object %s: %s; %s", it.id, it.what(), problem)
	}
	if err != nil {
		corrupt(fmt.Sprintf("its pack entry is damaged: %v", err))
		return nil, key, packDone
	}
	key = packKey{raw.Pack, raw.Off}
	if raw.Type != 0 {
		switch {
		case raw.Type != it.typ:
			corrupt(fmt.Sprintf("it is a %s, not a %s", raw.Type, it.typ))
			return nil, key, packDone
		case object.HashObject(raw.Type, raw.Data) != it.id:
			corrupt(fmt.Sprintf("its content hashes to %s", object.HashObject(raw.Type, raw.Data)))
			return nil, key, packDone
		}
		v.status[it.id] = ""
		v.notePacked(key, raw.Type, len(raw.Data), nil)
		return raw.Data, key, packWhole
	}
	base, ok := v.packed[packKey{raw.Pack, raw.BaseOff}]
	if raw.RefDelta || !ok || it.typ == typeCommit {
		return nil, key, packBase
	}
	if base.typ != it.typ {
		corrupt(fmt.Sprintf("it is a %s, not a %s", base.typ, it.typ))
		return nil, key, packDone
	}
	if it.typ != typeTree {
		size, err := delta.Walk(raw.Data, base.size, nil, nil)
		if err != nil {
			corrupt(fmt.Sprintf("its delta does not apply: %v", err))
			return nil, key, packDone
		}
		v.status[it.id] = ""
		v.notePacked(key, it.typ, size, nil)
		if it.typ == typeBlob {
			v.sized(it.id, size)
		}
		return nil, key, packDone
	}
	baseRep := v.reps[packKey{raw.Pack, raw.BaseOff}]
	if baseRep == nil {
		return nil, key, packBase
	}
	rep, err := deltaTreeRep(baseRep, raw.Data)
	if err != nil {
		// Malformed against its base, or not whole entries: the thorough
		// way names the problem.
		return nil, key, packBase
	}
	v.status[it.id] = ""
	good := rep.checkRegions(func(region []byte) bool {
		if err := fsck.Tree(region); err != nil {
			v.Fail("tree %s (%s) fails git fsck --strict: %v", it.id, it.what(), err)
			return false
		}
		return true
	}, func(entries []byte) bool {
		err := scanTree(entries, func(name []byte, dir bool, id hash) { push(it, name, dir, id) })
		if err != nil {
			v.Fail("malformed tree %s (%s): %v", it.id, it.what(), err)
			return false
		}
		return true
	})
	if good { // a tree that failed is no base for the next version
		v.notePacked(key, typeTree, rep.size, rep)
	}
	return nil, key, packDone
}

// notePacked records a checked pack entry, and a tree's layout (nil when
// the tree failed a check, so that no later version builds on it).
func (v *Check) notePacked(key packKey, t objType, size int, rep *treeRep) {
	if v.packed == nil {
		v.packed, v.reps = map[packKey]packedInfo{}, map[packKey]*treeRep{}
	}
	v.packed[key] = packedInfo{typ: t, size: size}
	if rep == nil {
		return
	}
	if len(v.repOrder) >= maxReps {
		delete(v.reps, v.repOrder[0])
		v.repOrder = v.repOrder[1:]
	}
	v.reps[key] = rep
	v.repOrder = append(v.repOrder, key)
}
