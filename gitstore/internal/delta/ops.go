package delta

import "fmt"

// Walk checks a Git pack delta against a base of baseLen bytes without
// applying it, and calls copyFn for each copy (a range of the base) and
// insertFn for each insert (bytes of the delta), in order. It returns the
// target's length. The checks are Patch's: the declared base length,
// every copy inside the base, the output reaching exactly the declared
// size. Verify uses it to follow a version of a large object through its
// delta without rebuilding the version.
func Walk(d []byte, baseLen int, copyFn func(off, n int), insertFn func(p []byte)) (int, error) {
	bl, n := readVarint(d)
	if n <= 0 || int(bl) != baseLen {
		return 0, fmt.Errorf("delta expects a %d-byte base, got %d", bl, baseLen)
	}
	d = d[n:]
	size, n := readVarint(d)
	if n <= 0 || size > 1<<32 {
		return 0, fmt.Errorf("delta: bad target size")
	}
	d = d[n:]
	out := 0
	for len(d) > 0 {
		cmd := d[0]
		d = d[1:]
		switch {
		case cmd&0x80 != 0:
			var off, sz int
			for i := 0; i < 4; i++ {
				if cmd&(1<<i) != 0 {
					if len(d) == 0 {
						return 0, fmt.Errorf("delta: truncated copy")
					}
					off |= int(d[0]) << (8 * i)
					d = d[1:]
				}
			}
			for i := 0; i < 3; i++ {
				if cmd&(0x10<<i) != 0 {
					if len(d) == 0 {
						return 0, fmt.Errorf("delta: truncated copy")
					}
					sz |= int(d[0]) << (8 * i)
					d = d[1:]
				}
			}
			if sz == 0 {
				sz = 0x10000
			}
			if off+sz > baseLen || out+sz > int(size) {
				return 0, fmt.Errorf("delta: copy out of range")
			}
			if copyFn != nil {
				copyFn(off, sz)
			}
			out += sz
		case cmd != 0:
			if int(cmd) > len(d) || out+int(cmd) > int(size) {
				return 0, fmt.Errorf("delta: truncated insert")
			}
			if insertFn != nil {
				insertFn(d[:cmd])
			}
			out += int(cmd)
			d = d[cmd:]
		default:
			return 0, fmt.Errorf("delta: reserved instruction 0")
		}
	}
	if out != int(size) {
		return 0, fmt.Errorf("delta produced %d bytes, declared %d", out, size)
	}
	return out, nil
}
