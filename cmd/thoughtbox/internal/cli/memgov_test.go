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
	// Busy: loosened at once, to what busyGCPercent lets a steady heap
	// reach.
	loose := int64(300 << 20)
	if got, release := tick(100<<20, 64<<20); got != loose || release {
		t.Fatalf("allocating 64 MiB/s: limit %d (release %v), want %d", got, release, loose)
	}
	// A short lull inside the busy spell does not bring it back.
	for range 10 {
		tick(100<<20, 0)
	}
	for range 50 {
		if got, _ := tick(100<<20, 32<<20); got != loose {
			t.Fatalf("busy server: the limit came back (%d) while it worked", got)
		}
	}
	// Quiet: back after quietPeriod, with one release.
	quietTicks := int(quietPeriod / memTick)
	for i := range quietTicks {
		got, release := tick(40<<20, 0)
		if want := int64(max(busyFloor, 120<<20, 125<<20)); i > 0 && i < quietTicks-1 && (got != want || release) {
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

// TestMemGovernorBusyLimit: under load the limit is the floor while the
// live heap is small; it stays a quarter above the largest live heap of
// the recent samples, such as one taken in the middle of a flush, so that
// the collector does not run against it, and comes down once such samples
// are older than the window; a larger steady heap raises it to what
// busyGCPercent lets that heap reach.
func TestMemGovernorBusyLimit(t *testing.T) {
	var g memGovernor
	var m memSample
	tick := func(live uint64) int64 {
		m.at += memTick
		m.live = live
		m.allocs += uint64(64 << 20 * memTick.Seconds())
		got, _ := g.step(m)
		return got
	}
	tick(20 << 20)
	for i := range liveWindow {
		if got := tick(20 << 20); got != busyFloor {
			t.Fatalf("tick %d, 20 MiB live: limit %d, want the floor %d", i, got, busyFloor)
		}
	}
	tick(80 << 20) // a collection in the middle of a flush
	for i := range liveWindow - 1 {
		if got, want := tick(20<<20), int64(100<<20); got != want {
			t.Fatalf("tick %d after an 80 MiB sample: limit %d, want %d", i, got, want)
		}
	}
	if got := tick(20 << 20); got != busyFloor {
		t.Fatalf("the 80 MiB sample is out of the window: limit %d, want the floor %d", got, busyFloor)
	}
	for range liveWindow {
		tick(40 << 20)
	}
	if got, want := tick(40<<20), int64(120<<20); got != want {
		t.Fatalf("steady 40 MiB live heap: limit %d, want %d", got, want)
	}
}

// TestMemGovernorLiftsCostlyLimit: a busy limit under which collecting and
// scavenging take more than busyMemShare of a second's processor time is
// lifted for the rest of the busy spell, and set again after it.
func TestMemGovernorLiftsCostlyLimit(t *testing.T) {
	var g memGovernor
	var m memSample
	// tick advances one memTick, busy, with the given share of the
	// processor time spent on memory.
	tick := func(share float64) int64 {
		m.at += memTick
		m.live = 20 << 20
		m.allocs += uint64(64 << 20 * memTick.Seconds())
		m.memCPU += share * memTick.Seconds()
		m.work += (1 - share) * memTick.Seconds()
		got, _ := g.step(m)
		return got
	}
	tick(0.05)
	for i := range 30 {
		if got := tick(0.05); got != busyFloor {
			t.Fatalf("tick %d, 5 %% of the time on memory: limit %d, want %d", i, got, busyFloor)
		}
	}
	lifted := -1
	for i := range 20 {
		if tick(0.3) == math.MaxInt64 {
			lifted = i
			break
		}
	}
	if lifted < 0 || lifted > 10 {
		t.Fatalf("30 %% of the time on memory: limit lifted after %d ticks, want within a second", lifted)
	}
	for range 20 {
		if got := tick(0.01); got != math.MaxInt64 {
			t.Fatalf("lifted limit came back (%d) within the busy spell", got)
		}
	}
	released := false
	for range int(quietPeriod/memTick) + 1 {
		m.at += memTick
		if _, release := g.step(m); release {
			released = true
			break
		}
	}
	if !released {
		t.Fatal("no release after the busy spell")
	}
	tick(0.05)
	if got := tick(0.05); got != busyFloor {
		t.Fatalf("the next busy spell: limit %d, want %d", got, busyFloor)
	}
}
