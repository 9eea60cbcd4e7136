package delta

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestWalkAgreesWithPatch: the copies and inserts Walk reports, applied to
// the base, are Patch's result, and Walk refuses what Patch refuses.
func TestWalkAgreesWithPatch(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := 0; round < 2000; round++ {
		base := make([]byte, r.IntN(300))
		for i := range base {
			base[i] = byte('a' + r.IntN(4))
		}
		target := append([]byte(nil), base...)
		for k := r.IntN(4); k > 0; k-- {
			p := r.IntN(len(target) + 1)
			target = append(target[:p], append([]byte("xyz"[:r.IntN(4)]), target[p:]...)...)
		}
		d := Diff(base, target).GitDelta(len(base))
		if round%3 == 0 && len(d) > 0 {
			d = bytes.Clone(d)
			d[r.IntN(len(d))] ^= byte(1 + r.IntN(255))
		}
		want, perr := Patch(base, d)
		var got []byte
		n, werr := Walk(d, len(base), func(off, n int) { got = append(got, base[off:off+n]...) },
			func(p []byte) { got = append(got, p...) })
		if (perr == nil) != (werr == nil) {
			t.Fatalf("round %d: Patch error %v, Walk error %v", round, perr, werr)
		}
		if perr == nil && (!bytes.Equal(got, want) || n != len(want)) {
			t.Fatalf("round %d: Walk laid out %q (%d), Patch %q", round, got, n, want)
		}
	}
}
