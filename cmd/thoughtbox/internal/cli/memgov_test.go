package cli

import (
	"math"
	"testing"
)

// TestMemGovernor: the soft limit follows the live heap while the
// collector is cheap, is lifted while collecting costs a real share of a
// busy server's work, and comes back only after quiet seconds.
func TestMemGovernor(t *testing.T) {
	var g memGovernor
	var m memSample
	tick := func(live uint64, gc, user float64) int64 {
		m.live = live
		m.gc += gc
		m.user += user
		return g.step(m)
	}
	if got := tick(10<<20, 0, 0); got != memoryFloor {
		t.Fatalf("small heap: limit %d, want the floor %d", got, memoryFloor)
	}
	if got := tick(100<<20, 0.001, 0.01); got != 10<<20*3/2 && got != memoryFloor {
		// The least of the recent samples counts: still the floor.
		t.Fatalf("limit %d after one large sample", got)
	}
	for range 5 {
		tick(100<<20, 0.001, 0.01)
	}
	if got := tick(100<<20, 0.001, 0.01); got != 150<<20 {
		t.Fatalf("steady 100 MiB live heap: limit %d, want %d", got, 150<<20)
	}
	// Busy, and a fifth of the work is collecting: lifted.
	if got := tick(100<<20, 0.2, 0.8); got != math.MaxInt64 {
		t.Fatalf("collector at 20%% of a busy server: limit %d, want none", got)
	}
	// Still busy, the collector now cheap: stays lifted.
	for range 20 {
		if got := tick(100<<20, 0.01, 0.9); got != math.MaxInt64 {
			t.Fatalf("busy server: the limit came back (%d) while it worked", got)
		}
	}
	// Quiet: back after quietSeconds.
	var got int64
	for i := range quietSeconds {
		got = tick(100<<20, 0, 0.001)
		if i < quietSeconds-1 && got != math.MaxInt64 {
			t.Fatalf("limit back after %d quiet seconds, want %d", i+1, quietSeconds)
		}
	}
	if got != 150<<20 {
		t.Fatalf("after the quiet seconds: limit %d, want %d", got, 150<<20)
	}
	// An idle server's rare collection lifts nothing.
	if got := tick(100<<20, 0.005, 0.001); got != 150<<20 {
		t.Fatalf("one small collection on an idle server: limit %d", got)
	}
}
