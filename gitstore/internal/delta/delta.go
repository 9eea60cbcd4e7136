// Package delta computes and applies the edits that turn one version of an
// object into the next, and renders them as Git pack deltas.
//
// The store's large objects (a session folder's tree, its manifest) change
// in one or two places per thought, so an Edit is usually a copy, a short
// insertion and a copy. Edits travel in the write-ahead log; Git deltas go
// into packs, and Patch reads them back.
package delta

import (
	"bytes"
	"fmt"
)

// Edit describes a new version of an object as copies from an older one
// (its base) and inserted bytes. Thoughtbox's large objects — a session
// folder's tree and its manifest — change in one or two places per thought
// (a new entry; the manifest's id or timestamp), so a diff that matches the
// common prefix and suffix and then realigns around an insertion or deletion
// finds nearly the smallest delta in a few linear passes.
type Edit struct {
	Ops []Op
}

// Op copies N bytes of the base from Off, or, when Data is set, inserts Data.
type Op struct {
	Off, N int
	Data   []byte
}

// minAlign is the shortest run worth realigning on.
const minAlign = 24

// Diff computes an edit that turns base into target.
func Diff(base, target []byte) Edit {
	var e Edit
	e.diff(base, 0, target, 4)
	return e
}

func (e *Edit) Copy(off, n int) {
	if n == 0 {
		return
	}
	if k := len(e.Ops); k > 0 && e.Ops[k-1].Data == nil && e.Ops[k-1].Off+e.Ops[k-1].N == off {
		e.Ops[k-1].N += n
		return
	}
	e.Ops = append(e.Ops, Op{Off: off, N: n})
}

func (e *Edit) Insert(p []byte) {
	if len(p) == 0 {
		return
	}
	if k := len(e.Ops); k > 0 && e.Ops[k-1].Data != nil {
		e.Ops[k-1].Data = append(e.Ops[k-1].Data[:len(e.Ops[k-1].Data):len(e.Ops[k-1].Data)], p...)
		return
	}
	e.Ops = append(e.Ops, Op{Data: p})
}

// diff appends ops producing target from base (which starts at baseOff in
// the whole base); depth bounds the realignments.
func (e *Edit) diff(base []byte, baseOff int, target []byte, depth int) {
	p := commonPrefix(base, target)
	s := commonSuffix(base[p:], target[p:])
	e.Copy(baseOff, p)
	bm, tm := base[p:len(base)-s], target[p:len(target)-s]
	switch {
	case len(bm) == 0:
		e.Insert(tm)
	case len(tm) == 0 || depth == 0 || len(bm) < minAlign || len(tm) < minAlign:
		e.Insert(tm)
	default:
		if k := bytes.Index(tm, bm[:minAlign]); k > 0 {
			// bytes were inserted before the rest of the base's middle
			e.Insert(tm[:k])
			e.diff(bm, baseOff+p, tm[k:], depth-1)
		} else if k := bytes.Index(bm, tm[:minAlign]); k > 0 {
			// bytes of the base were dropped
			e.diff(bm[k:], baseOff+p+k, tm, depth-1)
		} else {
			e.Insert(tm)
		}
	}
	e.Copy(baseOff+len(base)-s, s)
}

// commonPrefix compares in blocks first: bytes.Equal is vectorised, and
// the objects compared here are up to hundreds of kilobytes.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+256 <= n && bytes.Equal(a[i:i+256], b[i:i+256]) {
		i += 256
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

func commonSuffix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+256 <= n && bytes.Equal(a[len(a)-i-256:len(a)-i], b[len(b)-i-256:len(b)-i]) {
		i += 256
	}
	for i < n && a[len(a)-1-i] == b[len(b)-1-i] {
		i++
	}
	return i
}

// Apply rebuilds the target from base.
func (e Edit) Apply(base []byte) ([]byte, error) { return e.ApplyInto(nil, base) }

// ApplyInto is apply writing into dst's storage when it is large enough;
// dst must not overlap base.
func (e Edit) ApplyInto(dst, base []byte) ([]byte, error) {
	size := 0
	for _, o := range e.Ops {
		if o.Data != nil {
			size += len(o.Data)
		} else {
			if o.Off < 0 || o.N < 0 || o.Off+o.N > len(base) {
				return nil, fmt.Errorf("edit copies %d bytes at %d from a %d-byte base", o.N, o.Off, len(base))
			}
			size += o.N
		}
	}
	out := dst[:0]
	if cap(out) < size {
		// Headroom, so that a reused buffer still fits the next versions,
		// which grow by an entry each.
		out = make([]byte, 0, size+size/8+1024)
	}
	for _, o := range e.Ops {
		if o.Data != nil {
			out = append(out, o.Data...)
		} else {
			out = append(out, base[o.Off:o.Off+o.N]...)
		}
	}
	return out, nil
}

// Detached returns the edit with its inserted bytes copied, so that it no
// longer refers to the target it was computed from.
func (e Edit) Detached() Edit {
	out := Edit{Ops: make([]Op, len(e.Ops))}
	for i, o := range e.Ops {
		if o.Data != nil {
			o.Data = append([]byte(nil), o.Data...)
		}
		out.Ops[i] = o
	}
	return out
}

// Inserted counts the bytes the edit carries itself.
func (e Edit) Inserted() int {
	n := 0
	for _, o := range e.Ops {
		n += len(o.Data)
	}
	return n
}

func (e Edit) TargetLen() int {
	n := 0
	for _, o := range e.Ops {
		if o.Data != nil {
			n += len(o.Data)
		} else {
			n += o.N
		}
	}
	return n
}

// GitDelta renders the edit as a Git pack delta against a base of baseLen
// bytes.
func (e Edit) GitDelta(baseLen int) []byte {
	d := make([]byte, 0, 32+e.Inserted()+e.Inserted()/127+8*len(e.Ops))
	d = appendVarint(d, uint64(baseLen))
	d = appendVarint(d, uint64(e.TargetLen()))
	for _, o := range e.Ops {
		if o.Data == nil {
			d = appendCopy(d, o.Off, o.N)
			continue
		}
		for rest := o.Data; len(rest) > 0; {
			n := min(len(rest), 127)
			d = append(d, byte(n))
			d = append(d, rest[:n]...)
			rest = rest[n:]
		}
	}
	return d
}

func appendVarint(d []byte, v uint64) []byte {
	for v >= 0x80 {
		d = append(d, byte(v)|0x80)
		v >>= 7
	}
	return append(d, byte(v))
}

// appendCopy emits copy instructions, in 64 KiB pieces, which every Git
// reader accepts.
func appendCopy(d []byte, off, size int) []byte {
	for size > 0 {
		n := min(size, 0x10000)
		cmd := byte(0x80)
		var args []byte
		for i := 0; i < 4; i++ {
			if b := byte(off >> (8 * i)); b != 0 {
				cmd |= 1 << i
				args = append(args, b)
			}
		}
		if n != 0x10000 { // a size of 0 means 0x10000
			for i := 0; i < 3; i++ {
				if b := byte(n >> (8 * i)); b != 0 {
					cmd |= 0x10 << i
					args = append(args, b)
				}
			}
		}
		d = append(d, cmd)
		d = append(d, args...)
		off += n
		size -= n
	}
	return d
}

// Patch applies a Git pack delta, allocating the result once at the
// size the delta declares.
func Patch(base, delta []byte) ([]byte, error) {
	baseLen, n := readVarint(delta)
	if n <= 0 || int(baseLen) != len(base) {
		return nil, fmt.Errorf("delta expects a %d-byte base, got %d", baseLen, len(base))
	}
	delta = delta[n:]
	size, n := readVarint(delta)
	if n <= 0 || size > 1<<32 {
		return nil, fmt.Errorf("delta: bad target size")
	}
	delta = delta[n:]
	// The declared size is only reserved up to what the base and the
	// delta could plausibly make: a delta received from a remote may
	// declare gigabytes in a few bytes. A real delta that repeats its
	// base grows out as it goes.
	out := make([]byte, 0, min(size, uint64(len(base))+uint64(len(delta))))
	for len(delta) > 0 {
		cmd := delta[0]
		delta = delta[1:]
		switch {
		case cmd&0x80 != 0:
			var off, sz int
			for i := 0; i < 4; i++ {
				if cmd&(1<<i) != 0 {
					if len(delta) == 0 {
						return nil, fmt.Errorf("delta: truncated copy")
					}
					off |= int(delta[0]) << (8 * i)
					delta = delta[1:]
				}
			}
			for i := 0; i < 3; i++ {
				if cmd&(0x10<<i) != 0 {
					if len(delta) == 0 {
						return nil, fmt.Errorf("delta: truncated copy")
					}
					sz |= int(delta[0]) << (8 * i)
					delta = delta[1:]
				}
			}
			if sz == 0 {
				sz = 0x10000
			}
			if off+sz > len(base) || len(out)+sz > int(size) {
				return nil, fmt.Errorf("delta: copy out of range")
			}
			out = append(out, base[off:off+sz]...)
		case cmd != 0:
			if int(cmd) > len(delta) || len(out)+int(cmd) > int(size) {
				return nil, fmt.Errorf("delta: truncated insert")
			}
			out = append(out, delta[:cmd]...)
			delta = delta[cmd:]
		default:
			return nil, fmt.Errorf("delta: reserved instruction 0")
		}
	}
	if len(out) != int(size) {
		return nil, fmt.Errorf("delta produced %d bytes, declared %d", len(out), size)
	}
	return out, nil
}

func readVarint(p []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(p) && i < 10; i++ {
		v |= uint64(p[i]&0x7f) << (7 * i)
		if p[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, -1
}
