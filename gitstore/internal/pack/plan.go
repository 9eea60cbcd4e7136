package pack

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
)

// maxDeltaDepth bounds how many deltas a reader applies to reach an object.
const maxDeltaDepth = 250

// Layout is what Plan decided: the entries of one pack, in the order to
// write them; the links a later merge uses to turn older whole versions
// into deltas; and the newest whole versions, for the next flush's Plan.
type Layout struct {
	Objects []Object
	Links   []Link
	Heads   map[object.Hash][]byte
}

// Plan lays out the logged objects of recs as pack entries. A large object
// usually has a newer version in the same flush (the next thought's tree or
// manifest); it is stored as a delta from that newer version, so the newest
// version — the one readers want — is whole, as git does. Every
// maxDeltaDepth-th version is whole too, to bound delta chains.
//
// heads holds the content of the newest versions the previous flush wrote
// (its Layout.Heads): the first edits of this flush apply to them. has,
// when not nil, reports objects already in the repository, which are left
// out: only a replay after a crash needs it (a flush that died before
// trimming the log packed them); otherwise a rare duplicate in two packs
// is harmless to Git and cheaper than the lookups. read fetches the
// content of a base that is neither logged here nor in heads.
//
// Versions are rebuilt one line of edits at a time (a session's folder
// tree, its manifest), each in a scratch buffer that the next version of
// the line reuses, and the delta that rebuilds an older version from its
// successor is derived from the logged edit and the bytes it replaced
// (reverseDelta) rather than by comparing the two. So what a flush holds
// beyond the newest versions and the deltas is a few buffers the size of
// its largest object, however many sessions and thoughts it carries; it
// once kept one whole version per line at a time in a pool of buffers
// that every line's growth outran (49 of an 88 MB heap, with 64 agents).
func Plan(recs []*wal.Batch, heads map[object.Hash][]byte, has func(object.Hash) bool, read func(object.Hash) ([]byte, error)) (*Layout, error) {
	n := 0
	for _, r := range recs {
		n += len(r.Objects)
	}
	p := &planner{heads: heads, read: read}
	// A flush carries hundreds of records of a few objects each: the map
	// and the versions are sized once, not grown. One map, looked up once
	// per version: the rest goes by index (maps were two fifths of
	// planning's processor time).
	at := make(map[object.Hash]int32, n)
	p.vers = make([]ver, 0, n)
	for _, r := range recs {
		for i := range r.Objects {
			o := &r.Objects[i]
			if _, dup := at[o.ID]; dup {
				continue
			}
			if has != nil && has(o.ID) {
				continue
			}
			at[o.ID] = int32(len(p.vers))
			p.vers = append(p.vers, ver{o: o, base: -1, kid: -1, next: -1, child: -1})
		}
	}
	// Each version's successors in the flush, as a list in log order
	// (built backwards, so each is prepended).
	for i := len(p.vers) - 1; i >= 0; i-- {
		v := &p.vers[i]
		if v.o.Base == object.ZeroHash {
			continue
		}
		if b, ok := at[v.o.Base]; ok {
			v.base = b
			v.next = p.vers[b].kid
			p.vers[b].kid = int32(i)
		}
	}
	// Each line starts at a whole object or at an edit of a base from
	// before this flush.
	for i := range p.vers {
		if v := &p.vers[i]; !v.done && v.base < 0 {
			if err := p.start(int32(i)); err != nil {
				return nil, err
			}
		}
	}
	// What is left are edits of each other in a circle (a version logged
	// again as an edit of its own successor): each is rebuilt from a base
	// outside the flush.
	for i := range p.vers {
		if !p.vers[i].done {
			if err := p.start(int32(i)); err != nil {
				return nil, err
			}
		}
	}

	// A chain that continues from the previous flush starts with an object
	// whose base is in an older pack; a later merge uses these links to
	// turn that older whole version into a delta, so long sessions keep
	// one whole copy of their folder tree, not one per flush. Where the
	// delta would not pay (a small tree whose one entry changed) there is
	// no link: the merge would only read both versions back to find that
	// out again, inflating a whole entry to do it.
	var links []Link
	nh := 0
	for i := range p.vers {
		v := &p.vers[i]
		if v.o.Base != object.ZeroHash && v.base < 0 && v.link != nil {
			links = append(links, Link{Newer: v.o.ID, Older: v.o.Base, Delta: v.link})
		}
		if v.head() {
			nh++
		}
	}
	newHeads := make(map[object.Hash][]byte, nh)
	out := make([]Object, len(p.vers))
	last := len(p.vers) - 1
	// The entries go in the reverse of log order, so that a delta's base
	// (its successor) precedes it.
	for i := range p.vers {
		v := &p.vers[i]
		if v.head() {
			newHeads[v.o.ID] = v.data
		}
		po := Object{ID: v.o.ID, Type: v.o.Type, Base: -1}
		if v.delta != nil {
			po.Base = last - int(v.child)
			po.Delta = v.delta
		} else {
			po.Data = v.data
		}
		out[last-i] = po
	}
	return &Layout{Objects: out, Links: links, Heads: newHeads}, nil
}

// ver is one logged version in a Plan; versions are named by their index
// in log order.
type ver struct {
	o     *wal.Object
	base  int32 // the version this one is an edit of, if logged here; else -1
	kid   int32 // its first successor logged here (an edit of it); -1 for none
	next  int32 // the next successor of the same base
	child int32 // the successor delta is computed from
	pos   int32 // its place in a line of deltas
	done  bool
	succ  bool   // the line goes on after it: a successor is logged after it
	delta []byte // the Git delta from child, when stored as one
	data  []byte // the content, when stored whole
	link  []byte // for the first edit of a base from an older pack: the delta rebuilding that base
}

// head reports whether v's content is kept for the next flush: the
// newest version of an edited object.
func (v *ver) head() bool {
	return !v.succ && (v.o.Base != object.ZeroHash || v.pos > 0)
}

type planner struct {
	vers  []ver
	heads map[object.Hash][]byte
	read  func(object.Hash) ([]byte, error)
	// free holds scratch buffers no version needs any more; a line
	// rebuilds each version in the one its predecessor before last used.
	free  [][]byte
	spans []span
	ops   []delta.Op
}

// maxFree bounds the scratch buffers a Plan keeps for reuse: a line needs
// two, a version with two successors a third.
const maxFree = 4

// start rebuilds the line beginning at version i: from its own data when
// logged whole, else from its base outside the flush (heads, or read).
func (p *planner) start(i int32) error {
	v := &p.vers[i]
	v.done = true
	if v.o.Base == object.ZeroHash {
		return p.walk(i, v.o.Data, false)
	}
	base, ok := p.heads[v.o.Base]
	if !ok {
		var err error
		if base, err = p.read(v.o.Base); err != nil {
			return fmt.Errorf("object %s: %w", v.o.ID, err)
		}
	}
	c, scratch, err := p.apply(v, base)
	if err != nil {
		return err
	}
	v.link = p.reverseDelta(v.o.Edit, base, len(c))
	return p.walk(i, c, scratch)
}

// walk rebuilds the successors of version i, whose content is c (a
// scratch buffer when scratch is set, which walk releases), and theirs,
// down the line. Only a version with more than one successor recurses.
func (p *planner) walk(i int32, c []byte, scratch bool) error {
	for {
		v := &p.vers[i]
		pend, pendScratch := int32(-1), false
		var pendC []byte
		for k := v.kid; k >= 0; k = p.vers[k].next {
			kv := &p.vers[k]
			if kv.done {
				continue
			}
			kv.done = true
			cc, ccScratch, err := p.apply(kv, c)
			if err != nil {
				return err
			}
			// Only a version logged before its edit becomes a delta of
			// it: the entries are written in the reverse of log order,
			// and a delta's base must precede it. Sessions with the same
			// content log the same ids, so a base packed by an earlier
			// flush can be logged again, whole, after an edit of it;
			// that copy stays whole.
			if k > i {
				v.succ = true
				kv.pos = v.pos + 1
				if v.child < 0 && v.pos%maxDeltaDepth != maxDeltaDepth-1 {
					if d := p.reverseDelta(kv.o.Edit, c, len(cc)); d != nil {
						v.child, v.delta = k, d
					}
				}
			}
			if pend >= 0 {
				if err := p.walk(pend, pendC, pendScratch); err != nil {
					return err
				}
			}
			pend, pendC, pendScratch = k, cc, ccScratch
		}
		if v.delta == nil {
			v.data = c
			if scratch {
				v.data = append([]byte(nil), c...)
			}
		}
		if scratch {
			p.release(c)
		}
		if pend < 0 {
			return nil
		}
		i, c, scratch = pend, pendC, pendScratch
	}
}

// apply rebuilds version v from its base's content: a version with
// successors in a scratch buffer, the newest of its line in a buffer of
// its own size, which the pack and the next flush keep.
func (p *planner) apply(v *ver, base []byte) ([]byte, bool, error) {
	need := v.o.Edit.TargetLen()
	var dst []byte
	scratch := v.kid >= 0
	if scratch {
		dst = p.take(need)
	} else {
		dst = make([]byte, 0, need)
	}
	c, err := v.o.Edit.ApplyInto(dst, base)
	if err != nil {
		return nil, false, fmt.Errorf("object %s: %w", v.o.ID, err)
	}
	return c, scratch, nil
}

// take returns the smallest free scratch buffer that holds need bytes, or
// nil (ApplyInto then allocates one, with room to grow).
func (p *planner) take(need int) []byte {
	best := -1
	for i, b := range p.free {
		if cap(b) >= need && (best < 0 || cap(b) < cap(p.free[best])) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := p.free[best]
	p.free[best] = p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	return b
}

// release returns a scratch buffer; past maxFree the smallest is dropped,
// since lines grow and a small buffer fits fewer of them.
func (p *planner) release(b []byte) {
	p.free = append(p.free, b[:0])
	if len(p.free) > maxFree {
		small := 0
		for i, f := range p.free {
			if cap(f) < cap(p.free[small]) {
				small = i
			}
		}
		p.free[small] = p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
	}
}

// span is a copy of an edit: n bytes of the base at off, landing in the
// target at t.
type span struct{ off, n, t int }

// reverseDelta renders the Git delta that rebuilds base from target, the
// result of e applied to base (targetLen bytes): what e copied from the
// base is copied back from where it landed in the target, and only the
// bytes of the base that e dropped or replaced are carried. It returns
// nil when those are a quarter of the base or more (the base is then
// better stored whole), or when either side is empty.
func (p *planner) reverseDelta(e delta.Edit, base []byte, targetLen int) []byte {
	if len(base) == 0 || targetLen == 0 {
		return nil
	}
	spans := p.spans[:0]
	t := 0
	sorted := true
	for _, o := range e.Ops {
		if o.Data != nil {
			t += len(o.Data)
			continue
		}
		if k := len(spans); k > 0 && o.Off < spans[k-1].off {
			sorted = false
		}
		spans = append(spans, span{o.Off, o.N, t})
		t += o.N
	}
	if !sorted {
		// An edit may copy parts of its base out of order (a moved
		// entry); the base is rebuilt front to back.
		slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.off, b.off) })
	}
	p.spans = spans
	rev := delta.Edit{Ops: p.ops[:0]}
	pos, inserted := 0, 0
	for _, s := range spans {
		if s.off+s.n <= pos {
			continue
		}
		if s.off > pos {
			rev.Insert(base[pos:s.off])
			inserted += s.off - pos
			pos = s.off
		}
		skip := pos - s.off
		rev.Copy(s.t+skip, s.n-skip)
		pos = s.off + s.n
	}
	if pos < len(base) {
		rev.Insert(base[pos:])
		inserted += len(base) - pos
	}
	p.ops = rev.Ops[:0]
	if 4*inserted >= len(base) {
		return nil
	}
	return rev.GitDelta(targetLen)
}
