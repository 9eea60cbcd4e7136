package verify

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/fsck"
)

// testGitDelta encodes target as a Git delta of base: the common prefix and
// suffix copied, each copy cut in two at a random byte (so copies end
// inside entries, as deltas made by other tools do), the middle inserted.
func testGitDelta(r *rand.Rand, base, target []byte) []byte {
	varint := func(d []byte, v int) []byte {
		for v >= 0x80 {
			d = append(d, byte(v)|0x80)
			v >>= 7
		}
		return append(d, byte(v))
	}
	copyOp := func(d []byte, off, n int) []byte {
		cmd := byte(0x80)
		var args []byte
		for i := 0; i < 4; i++ {
			if b := byte(off >> (8 * i)); b != 0 {
				cmd |= 1 << i
				args = append(args, b)
			}
		}
		for i := 0; i < 3; i++ {
			if b := byte(n >> (8 * i)); b != 0 {
				cmd |= 0x10 << i
				args = append(args, b)
			}
		}
		return append(append(d, cmd), args...)
	}
	copySplit := func(d []byte, off, n int) []byte {
		if n == 0 {
			return d
		}
		k := r.IntN(n + 1)
		if k > 0 {
			d = copyOp(d, off, k)
		}
		if n-k > 0 {
			d = copyOp(d, off+k, n-k)
		}
		return d
	}
	p := 0
	for p < len(base) && p < len(target) && base[p] == target[p] {
		p++
	}
	s := 0
	for s < len(base)-p && s < len(target)-p && base[len(base)-1-s] == target[len(target)-1-s] {
		s++
	}
	d := varint(varint(nil, len(base)), len(target))
	d = copySplit(d, 0, p)
	for mid := target[p : len(target)-s]; len(mid) > 0; {
		n := min(len(mid), 1+r.IntN(127))
		d = append(append(d, byte(n)), mid[:n]...)
		mid = mid[n:]
	}
	return copySplit(d, len(base)-s, s)
}

// TestDeltaTreeRepAgreesWithWholeCheck follows chains of tree versions,
// each a Git delta of the one before, as verify does: the layout built from
// the delta holds the new version's bytes, its checks find a problem
// exactly when git fsck's checks of the whole version do, and every entry
// of the version was checked either now or in an earlier version.
func TestDeltaTreeRepAgreesWithWholeCheck(t *testing.T) {
	type ent struct {
		mode, name string
		id         byte
	}
	render := func(es []ent) []byte {
		var b []byte
		for _, e := range es {
			b = append(b, testTreeEntry(e.mode, e.name, e.id)...)
		}
		return b
	}
	r := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 300; round++ {
		var ents []ent
		for i := 0; i < r.IntN(30); i++ {
			ents = append(ents, ent{"100644", fmt.Sprintf("%05d.json", i*10), byte(r.IntN(256))})
		}
		ents = append(ents, ent{"100644", "manifest.json", byte(r.IntN(256))})
		prev := render(ents)
		rep := wholeTreeRep(prev)
		if rep == nil || fsck.Tree(prev) != nil {
			t.Fatalf("round %d: the first version is not valid", round)
		}
		seen := map[string]bool{}
		for _, e := range ents {
			seen[string(testTreeEntry(e.mode, e.name, e.id))] = true
		}
		for step := 0; step < 40; step++ {
			next := slices.Clone(ents)
			for k := 1 + r.IntN(2); k > 0; k-- {
				pos := r.IntN(len(next) + 1)
				switch r.IntN(12) {
				case 0: // an entry out of order
					next = slices.Insert(next, pos, ent{"100644", "00000-late", 9})
				case 1: // a bad mode
					next = slices.Insert(next, pos, ent{"100640", fmt.Sprintf("%05d.json", pos*10-5), 3})
				case 2: // a duplicate
					if pos < len(next) {
						next = slices.Insert(next, pos, next[pos])
					}
				case 3, 4, 5: // a removed entry
					if pos < len(next)-1 {
						next = slices.Delete(next, pos, pos+1)
					}
				case 6, 7: // a changed id
					if pos < len(next) {
						next[pos].id++
					}
				default: // a valid new entry in order
					name := fmt.Sprintf("%05d.json", pos*10-5)
					if pos > 0 && next[pos-1].name >= name || pos < len(next) && next[pos].name <= name {
						continue
					}
					next = slices.Insert(next, pos, ent{"100644", name, byte(r.IntN(256))})
				}
			}
			data := render(next)
			got, err := deltaTreeRep(rep, testGitDelta(r, prev, data))
			if err != nil {
				t.Fatalf("round %d step %d: %v", round, step, err)
			}
			var laid []byte
			for i, p := range got.pieces {
				if got.starts[i] != len(laid) {
					t.Fatalf("round %d step %d: piece %d starts at %d, want %d", round, step, i, got.starts[i], len(laid))
				}
				laid = append(laid, p.buf.data[p.lo:p.hi]...)
			}
			if !bytes.Equal(laid, data) || got.size != len(data) {
				t.Fatalf("round %d step %d: the layout does not hold the version", round, step)
			}
			scanned := map[string]bool{}
			ok := got.checkRegions(func(region []byte) bool { return fsck.Tree(region) == nil }, func(entries []byte) bool {
				b, _ := newTreeBuf(entries, false)
				for i := 0; i+1 < len(b.bounds); i++ {
					scanned[string(entries[b.bounds[i]:b.bounds[i+1]])] = true
				}
				return true
			})
			if whole := fsck.Tree(data) == nil; ok != whole {
				t.Fatalf("round %d step %d: delta check %v, whole check %v\nprev %q\nnext %q", round, step, ok, whole, prev, data)
			}
			if !ok {
				break // verify builds nothing on a tree that failed
			}
			for _, e := range next {
				k := string(testTreeEntry(e.mode, e.name, e.id))
				if !seen[k] && !scanned[k] {
					t.Fatalf("round %d step %d: entry %q was never checked", round, step, e.name)
				}
				seen[k] = true
			}
			ents, prev, rep = next, data, got
		}
	}
}
