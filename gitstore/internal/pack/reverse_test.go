package pack

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
)

// TestReverseDelta: the delta derived from an edit and the bytes it
// replaced rebuilds the base from the target, for edits as Diff makes them
// and for edits that copy parts of the base out of order, twice, or not
// at all; and it is refused when the replaced bytes are a quarter of the
// base or more.
func TestReverseDelta(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return b
	}
	var p planner
	made := 0
	for round := 0; round < 3000; round++ {
		base := randBytes(1 + rng.IntN(3000))
		var e delta.Edit
		if round%2 == 0 {
			// as the store logs them: a diff of a lightly changed copy
			target := append([]byte(nil), base...)
			for k := rng.IntN(4); k >= 0; k-- {
				at := rng.IntN(len(target) + 1)
				cut := min(rng.IntN(40), len(target)-at)
				target = append(target[:at:at], append(randBytes(rng.IntN(60)), target[at+cut:]...)...)
			}
			e = delta.Diff(base, target)
		} else {
			// arbitrary copies, in any order, overlapping, with inserts
			for k := rng.IntN(8); k >= 0; k-- {
				if rng.IntN(3) == 0 {
					e.Ops = append(e.Ops, delta.Op{Data: randBytes(1 + rng.IntN(30))})
				} else {
					off := rng.IntN(len(base))
					e.Ops = append(e.Ops, delta.Op{Off: off, N: 1 + rng.IntN(len(base)-off)})
				}
			}
		}
		target, err := e.Apply(base)
		if err != nil {
			t.Fatal(err)
		}
		d := p.reverseDelta(e, base, len(target))
		// what the edit does not copy from the base, counted directly
		covered := make([]bool, len(base))
		for _, o := range e.Ops {
			if o.Data == nil {
				for i := o.Off; i < o.Off+o.N; i++ {
					covered[i] = true
				}
			}
		}
		replaced := 0
		for _, c := range covered {
			if !c {
				replaced++
			}
		}
		if d == nil {
			if len(target) > 0 && 4*replaced < len(base) {
				t.Fatalf("round %d: no delta, though the edit replaced only %d of %d bytes", round, replaced, len(base))
			}
			continue
		}
		if 4*replaced >= len(base) {
			t.Fatalf("round %d: a delta, though the edit replaced %d of %d bytes", round, replaced, len(base))
		}
		made++
		got, err := delta.Patch(target, d)
		if err != nil || !bytes.Equal(got, base) {
			t.Fatalf("round %d: the reverse delta does not rebuild the base: %v", round, err)
		}
	}
	if made < 800 {
		t.Fatalf("only %d of 3000 edits gave a reverse delta", made)
	}
	if d := p.reverseDelta(delta.Edit{Ops: []delta.Op{{Data: []byte("x")}}}, nil, 1); d != nil {
		t.Fatal("a delta rebuilding an empty base")
	}
}
