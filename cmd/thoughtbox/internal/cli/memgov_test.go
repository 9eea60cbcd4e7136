package cli

import (
	"math"
	"testing"
	"time"
)

// TestMemGovernor: the soft limit follows the live heap while the server
// is quiet, is lifted at the first tick of a busy spell (judged by the
// allocation rate, not by what the collector already cost), stays lifted
// while the work goes on, and comes back, with a release of memory, only
// after quietPeriod.
func TestMemGovernor(t *testing.T) {
	var g memGovernor
	var m memSample
	// tick advances one memTick during which the server allocated rate
	// bytes a second.
	tick := func(live uint64, rate float64) (int64, bool) {
		m.at += memTick
		m.live = live
		m.allocs += uint64(rate * memTick.Seconds())
		return g.step(m)
	}
	if got, _ := tick(10<<20, 0); got != memoryFloor {
		t.Fatalf("small heap: limit %d, want the floor %d", got, memoryFloor)
	}
	if got, _ := tick(100<<20, 1<<20); got != memoryFloor {
		// The least of the recent samples counts: still the floor.
		t.Fatalf("limit %d after one large sample", got)
	}
	for range liveWindow {
		tick(100<<20, 1<<20)
	}
	if got, _ := tick(100<<20, 1<<20); got != 150<<20 {
		t.Fatalf("steady 100 MiB live heap, a slow writer: limit %d, want %d", got, 150<<20)
	}
	// Busy: lifted at once.
	if got, release := tick(100<<20, 64<<20); got != math.MaxInt64 || release {
		t.Fatalf("allocating 64 MiB/s: limit %d (release %v), want none", got, release)
	}
	// A short lull inside the busy spell does not bring it back.
	for range 10 {
		tick(100<<20, 0)
	}
	for range 50 {
		if got, _ := tick(100<<20, 32<<20); got != math.MaxInt64 {
			t.Fatalf("busy server: the limit came back (%d) while it worked", got)
		}
	}
	// Quiet: back after quietPeriod, with one release.
	quietTicks := int(quietPeriod / memTick)
	for i := range quietTicks {
		got, release := tick(40<<20, 0)
		if i < quietTicks-1 && (got != math.MaxInt64 || release) {
			t.Fatalf("limit back (%d, release %v) after %v of quiet, want %v", got, release, time.Duration(i+1)*memTick, quietPeriod)
		}
		if i == quietTicks-1 && !release {
			t.Fatalf("no release after %v of quiet", quietPeriod)
		}
	}
	// What the release's collection measured is what the limit follows.
	if got := g.restart(40 << 20); got != 60<<20 {
		t.Fatalf("after the release: limit %d, want %d", got, 60<<20)
	}
	if got, release := tick(40<<20, 0); got != 60<<20 || release {
		t.Fatalf("quiet after the release: limit %d (release %v)", got, release)
	}
	// A rare small allocation on an idle server lifts nothing.
	if got, _ := tick(40<<20, busyAllocRate/2); got != 60<<20 {
		t.Fatalf("a small allocation on an idle server: limit %d", got)
	}
}
