package verify

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/fsck"
)

// testTreeEntry renders one tree entry as git stores it.
func testTreeEntry(mode, name string, id byte) []byte {
	b := append([]byte(mode+" "+name), 0)
	var h hash
	h[0], h[19] = id, 1
	return append(b, h[:]...)
}

// TestChangedRegionAgreesWithWholeCheck: against a valid reference tree,
// checking only the changed region finds a problem exactly when checking
// the whole tree does, wherever the change is (start, middle, end, several
// entries, a bad mode, an entry out of order, a duplicate), and the entry
// offsets it returns are the tree's.
func TestChangedRegionAgreesWithWholeCheck(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 3000; round++ {
		n := r.IntN(40)
		type ent struct {
			mode, name string
			id         byte
		}
		var ents []ent
		for i := 0; i < n; i++ {
			ents = append(ents, ent{"100644", fmt.Sprintf("%05d.json", i*10), byte(r.IntN(256))})
		}
		ents = append(ents, ent{"100644", "manifest.json", byte(r.IntN(256))})
		render := func(es []ent) []byte {
			var b []byte
			for _, e := range es {
				b = append(b, testTreeEntry(e.mode, e.name, e.id)...)
			}
			return b
		}
		refData := render(ents)
		if err := fsck.Tree(refData); err != nil {
			t.Fatalf("reference tree invalid: %v", err)
		}
		ref := &checkedTree{data: refData, bounds: treeBounds(refData)}

		next := slices.Clone(ents)
		for k := 1 + r.IntN(3); k > 0; k-- {
			pos := r.IntN(len(next) + 1)
			switch r.IntN(6) {
			case 0: // a valid new entry in order
				name := fmt.Sprintf("%05d.json", pos*10-5)
				if pos == len(next) {
					name = "zz"
				}
				next = slices.Insert(next, pos, ent{"100644", name, 7})
			case 1: // an entry out of order
				next = slices.Insert(next, pos, ent{"100644", "00000-late", 9})
			case 2: // a bad mode
				next = slices.Insert(next, pos, ent{"100640", fmt.Sprintf("%05d.json", pos*10-5), 3})
			case 3: // a changed id
				if pos < len(next) {
					next[pos].id++
				}
			case 4: // a removed entry
				if pos < len(next) {
					next = slices.Delete(next, pos, pos+1)
				}
			case 5: // a duplicate
				if pos < len(next) {
					next = slices.Insert(next, pos, next[pos])
				}
			}
		}
		data := render(next)
		from, to, bounds, ok := ref.changedRegion(data)
		if !ok {
			t.Fatalf("round %d: the new tree did not parse", round)
		}
		whole := fsck.Tree(data) != nil
		part := fsck.Tree(data[from:to]) != nil
		if whole != part {
			t.Fatalf("round %d: whole tree problem %v, region [%d:%d] of %d problem %v\nref %q\nnew %q",
				round, whole, from, to, len(data), part, refData, data)
		}
		if want := treeBounds(data); !slices.Equal(bounds, want) {
			t.Fatalf("round %d: bounds %v, want %v", round, bounds, want)
		}
	}
}
