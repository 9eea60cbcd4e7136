package cli

import (
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

// TestMemGovernorRaisesCostlyLimit: a busy limit under which collecting
// and scavenging take more than busyMemShare of a second's processor time
// is raised by an eighth (by two past twice the share) each second the
// share stays past it, up to twice the busy limit; held while the share
// is between half busyMemShare and busyMemShare; brought down an eighth a
// second below that; and set afresh for the next busy spell.
func TestMemGovernorRaisesCostlyLimit(t *testing.T) {
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
	// second runs a second's ticks at the share and returns the limit
	// after each.
	second := func(share float64) []int64 {
		var got []int64
		for range int(time.Second / memTick) {
			got = append(got, tick(share))
		}
		return got
	}
	eighths := func(n int) int64 { return busyFloor + busyFloor/8*int64(n) }
	// settled checks that the limit, after a second at the share, is
	// the busy limit raised by want eighths, and that it moved at most
	// once within that second.
	settled := func(what string, share float64, want int) {
		t.Helper()
		got := second(share)
		moves := 0
		for i := 1; i < len(got); i++ {
			if got[i] != got[i-1] {
				moves++
			}
		}
		if last := got[len(got)-1]; last != eighths(want) || moves > 1 {
			t.Fatalf("%s: limit %d after a second (%d moves within it), want %d (raised by %d eighths)", what, last, moves, eighths(want), want)
		}
	}
	// The first sample has no rate to judge; the second starts the busy
	// spell and the second it is measured over, so that each of the
	// following seconds is one measurement.
	tick(0.05)
	tick(0.05)
	for range 3 {
		settled("5 % of the time on memory", 0.05, 0)
	}
	settled("15 %, one second", 0.15, 1)
	settled("15 %, two seconds", 0.15, 2)
	settled("8 %: held", 0.08, 2)
	settled("8 %: still held", 0.08, 2)
	settled("30 %: two steps", 0.30, 4)
	for range 10 {
		second(0.5)
	}
	settled("50 % for long: capped", 0.5, busyMaxSteps)
	if eighths(busyMaxSteps) != 2*busyFloor {
		t.Fatalf("the cap is %d, want twice the busy limit %d", eighths(busyMaxSteps), 2*busyFloor)
	}
	settled("1 %: one step down", 0.01, busyMaxSteps-1)
	for range busyMaxSteps {
		second(0.01)
	}
	settled("1 % for long: back to the busy limit", 0.01, 0)

	// The raise is of the busy limit as it stands: a steady live heap of
	// 40 MiB makes that three times as much, and the eighths grow with it.
	settled("20 %", 0.2, 1)
	var got int64
	for range liveWindow {
		m.at += memTick
		m.live = 40 << 20
		m.allocs += uint64(64 << 20 * memTick.Seconds())
		m.memCPU += 0.1 * memTick.Seconds()
		m.work += 0.9 * memTick.Seconds()
		got, _ = g.step(m)
	}
	if want := int64(120<<20 + 15<<20); got != want {
		t.Fatalf("40 MiB live, raised by an eighth: limit %d, want %d", got, want)
	}

	// A quiet spell ends the raise with the release.
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
	g.restart(20 << 20)
	tick(0.05)
	if got := tick(0.05); got != busyFloor {
		t.Fatalf("the next busy spell: limit %d, want %d", got, busyFloor)
	}
}

// TestRaiseStep: the raise for the next second from the share of the last
// one, at the thresholds' edges.
func TestRaiseStep(t *testing.T) {
	for _, c := range []struct {
		raised    int
		mem, work float64
		want      int
	}{
		{0, 0, 0, 0},                           // no processor time measured: held
		{3, 0, 0, 3},                           // likewise
		{0, 0.05, 0.95, 0},                     // under half the share, at the floor
		{2, 0.05, 0.95, 1},                     // under half: down one
		{2, 0.06, 0.94, 2},                     // at half: held
		{2, 0.12, 0.88, 2},                     // at the share: held
		{2, 0.13, 0.87, 3},                     // past it: up one
		{2, 0.24, 0.76, 3},                     // at twice: up one
		{2, 0.25, 0.75, 4},                     // past twice: up two
		{busyMaxSteps - 1, 1, 0, busyMaxSteps}, // all of it: capped
		{busyMaxSteps, 0.2, 0.8, busyMaxSteps},
	} {
		if got := raiseStep(c.raised, c.mem, c.work); got != c.want {
			t.Errorf("raiseStep(%d, %v, %v) = %d, want %d", c.raised, c.mem, c.work, got, c.want)
		}
	}
}
