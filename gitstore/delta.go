package gitstore

import "fmt"

// edit describes a new version of an object as a change to an older one:
// keep the first prefix bytes and the last suffix bytes of the base, and put
// mid between them. Thoughtbox's large objects (a session folder's tree, its
// manifest) change in one place per thought, so this is both the cheapest
// delta to find — two memory comparisons — and close to the smallest.
type edit struct {
	prefix, suffix int
	mid            []byte
}

// diffEdit finds the longest common prefix and suffix of base and target.
func diffEdit(base, target []byte) edit {
	n := min(len(base), len(target))
	p := 0
	for p < n && base[p] == target[p] {
		p++
	}
	s := 0
	for s < n-p && base[len(base)-1-s] == target[len(target)-1-s] {
		s++
	}
	return edit{prefix: p, suffix: s, mid: target[p : len(target)-s]}
}

// apply rebuilds the target from base.
func (e edit) apply(base []byte) ([]byte, error) {
	if e.prefix+e.suffix > len(base) {
		return nil, fmt.Errorf("edit does not fit its base (%d+%d > %d)", e.prefix, e.suffix, len(base))
	}
	out := make([]byte, 0, e.prefix+len(e.mid)+e.suffix)
	out = append(out, base[:e.prefix]...)
	out = append(out, e.mid...)
	out = append(out, base[len(base)-e.suffix:]...)
	return out, nil
}

// gitDelta renders the edit as a Git pack delta against a base of baseLen
// bytes.
func (e edit) gitDelta(baseLen int) []byte {
	targetLen := e.prefix + len(e.mid) + e.suffix
	d := make([]byte, 0, 32+len(e.mid)+len(e.mid)/127)
	d = appendVarint(d, uint64(baseLen))
	d = appendVarint(d, uint64(targetLen))
	d = appendCopy(d, 0, e.prefix)
	for rest := e.mid; len(rest) > 0; {
		n := min(len(rest), 127)
		d = append(d, byte(n))
		d = append(d, rest[:n]...)
		rest = rest[n:]
	}
	d = appendCopy(d, baseLen-e.suffix, e.suffix)
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
