package pack

import (
	"fmt"

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
func Plan(recs []*wal.Batch, heads map[object.Hash][]byte, has func(object.Hash) bool, read func(object.Hash) ([]byte, error)) (*Layout, error) {
	type ver struct {
		o        *wal.Object
		length   int
		pos      int
		child    object.Hash
		delta    []byte // the Git delta from child, rendered at once
		hasChild bool
		keepFull bool
		owned    bool   // content was built here, so it may be reused
		first    []byte // content, for a chain start whose base is older
		at       int    // its place in order
	}
	// A flush carries hundreds of records of a few objects each: the maps
	// and the versions are sized once, not grown (growing them was a
	// third of what planning cost).
	n := 0
	for _, r := range recs {
		n += len(r.Objects)
	}
	vers := make(map[object.Hash]*ver, n)
	slab := make([]ver, 0, n)
	order := make([]object.Hash, 0, n)
	for _, r := range recs {
		for i := range r.Objects {
			o := &r.Objects[i]
			if _, dup := vers[o.ID]; dup {
				continue
			}
			if has != nil && has(o.ID) {
				continue
			}
			slab = append(slab, ver{o: o, at: len(order)})
			vers[o.ID] = &slab[len(slab)-1]
			order = append(order, o.ID)
		}
	}
	kept := make(map[object.Hash][]byte, len(order))
	// free holds buffers of versions already turned into deltas: the next
	// version is built in one of them rather than in a new allocation.
	var free [][]byte
	var content func(id object.Hash) ([]byte, error)
	content = func(id object.Hash) ([]byte, error) {
		if c, ok := kept[id]; ok {
			return c, nil
		}
		if c, ok := heads[id]; ok {
			return c, nil
		}
		v, ok := vers[id]
		if !ok {
			return read(id)
		}
		if v.o.Base == object.ZeroHash {
			return v.o.Data, nil
		}
		base, err := content(v.o.Base)
		if err != nil {
			return nil, err
		}
		return v.o.Edit.Apply(base)
	}
	for _, id := range order {
		v := vers[id]
		var c []byte
		if v.o.Base == object.ZeroHash {
			c = v.o.Data
		} else {
			base, err := content(v.o.Base)
			if err != nil {
				return nil, fmt.Errorf("object %s: %w", id, err)
			}
			// Best fit: a one-entry tree must not take (and keep) the
			// buffer a folder tree needs.
			var dst []byte
			if need := v.o.Edit.TargetLen(); need >= 4096 {
				best := -1
				for i, fb := range free {
					if cap(fb) >= need && (best < 0 || cap(fb) < cap(free[best])) {
						best = i
					}
				}
				if best >= 0 {
					dst = free[best]
					free[best] = free[len(free)-1]
					free = free[:len(free)-1]
				}
			}
			if c, err = v.o.Edit.ApplyInto(dst, base); err != nil {
				return nil, err
			}
			v.owned = true
			// Only a base logged before the edit becomes its delta: the
			// entries are written in the reverse of order, and a delta's
			// base must precede it. Sessions with the same content log
			// the same ids, so a base packed by an earlier flush can be
			// logged again, whole, after an edit of it; that copy stays
			// whole.
			if bv, ok := vers[v.o.Base]; ok && bv.at < v.at && !bv.hasChild {
				rev := delta.Diff(c, base)
				if len(base) > 0 && len(c) > 0 && 4*rev.Inserted() < len(base) {
					bv.hasChild, bv.child = true, id
					bv.delta = rev.GitDelta(len(c)) // rev points into base: render it now
					if !bv.keepFull {
						if bv.owned && bv.first == nil {
							free = append(free, base[:0])
						}
						delete(kept, v.o.Base)
					}
				}
				v.pos = bv.pos + 1
			}
		}
		v.length = len(c)
		if _, inFlush := vers[v.o.Base]; v.o.Base != object.ZeroHash && !inFlush {
			v.first = c
		}
		v.keepFull = v.pos%maxDeltaDepth == maxDeltaDepth-1
		kept[id] = c
	}
	// A chain that continues from the previous flush starts with an object
	// whose base is in an older pack; a later merge uses these links to
	// turn that older whole version into a delta, so long sessions keep
	// one whole copy of their folder tree, not one per flush.
	var links []Link
	for _, id := range order {
		if v := vers[id]; v.o.Base != object.ZeroHash {
			if _, inFlush := vers[v.o.Base]; !inFlush {
				l := Link{Newer: id, Older: v.o.Base}
				if old, ok := heads[v.o.Base]; ok && len(old) > 0 && len(v.first) > 0 {
					if ed := delta.Diff(v.first, old); 4*ed.Inserted() < len(old) {
						l.Delta = ed.GitDelta(len(v.first))
					}
				}
				links = append(links, l)
			}
		}
	}
	newHeads := map[object.Hash][]byte{}
	for _, id := range order {
		if v := vers[id]; !v.hasChild && (v.o.Base != object.ZeroHash || v.pos > 0) {
			c := kept[id]
			if cap(c) > len(c)+len(c)/4+4096 {
				// built in a reused buffer sized for another version: it
				// is kept until the next flush, so keep only what it needs
				c = append([]byte(nil), c...)
			}
			newHeads[id] = c
		}
	}
	out := make([]Object, 0, len(order))
	index := make(map[object.Hash]int, len(order))
	for i := len(order) - 1; i >= 0; i-- {
		id := order[i]
		v := vers[id]
		po := Object{ID: id, Type: v.o.Type, Base: -1}
		if v.hasChild && !v.keepFull {
			b, ok := index[v.child]
			if !ok { // a missing index would read as entry 0: a wrong base
				return nil, fmt.Errorf("object %s: its delta base %s is not laid out before it", id, v.child)
			}
			po.Base = b
			po.Delta = v.delta
		} else {
			po.Data = kept[id]
		}
		index[id] = len(out)
		out = append(out, po)
	}
	return &Layout{Objects: out, Links: links, Heads: newHeads}, nil
}
