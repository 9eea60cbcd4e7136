package cli

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/thoughtbox/thoughtbox/internal/tuning"
)

// memoryFloor is the least soft memory limit the server sets. It was
// chosen to keep a server that has written a 10,000-thought session near
// 40 MB resident, the binary's own pages included; a higher floor traded
// a few MB for less CPU per thought on such long sessions. What such a
// server measures now: BENCHMARKS.md, "Memory (RSS)".
const memoryFloor = 25 << 20

// The governor's pace and thresholds.
const (
	// memTick is how often the governor samples: a burst of work runs
	// under the tight limit at most this long before it is lifted.
	memTick = 100 * time.Millisecond
	// busyAllocRate is the allocation rate (bytes a second) at which the
	// server counts as busy. A thought call allocates a few hundred kB,
	// so this is some tens of thoughts a second; below it a collection
	// under the limit comes at most every couple of seconds.
	busyAllocRate = 8 << 20
	// quietPeriod is how long the server must stay under busyAllocRate
	// before the limit comes back and the memory is handed back.
	quietPeriod = 5 * time.Second
	// busyGCPercent paces the collector under load: a collection when
	// the heap reaches three times the live heap instead of twice, so
	// half as many collections for half again the heap. The limit under
	// load (busyFloor) stays clear of that heap: near a limit the runtime
	// hands pages back to the OS on the allocation path (a 64 MiB cap on
	// the last live heap with 64 agents put 8 % of the server's time in
	// madvise), and the next requests fault them in again.
	busyGCPercent = 200
	// busyFloor is the least limit under load. Above it the limit is
	// what busyGCPercent lets the heap between flushes reach (three times
	// the least live heap of the recent samples), or a quarter above the
	// largest live heap of the recent samples, whichever is more. With 64
	// agents the live heap swings with the flusher (its pack plan holds
	// whole versions of the sessions' folder trees: 50 of 88 MiB in one
	// sample taken in a flush), and a collection that happened to end in
	// a flush let the heap grow to three times that, 125-250 MB resident.
	// The limit cuts only that: it leaves the pacing between flushes
	// alone and stays above what a flush holds. Limits below either cost
	// processor time: twice the least live heap (tried first) made the
	// collector run without end during each flush, 40-80 % more time a
	// thought with sessions of 300 thoughts; a quarter above the largest
	// alone, 20-25 % more. What remains of that cost with long sessions
	// is bounded by busyMemShare, which raises the limit in steps.
	busyFloor = 72 << 20
	// busyMemShare is the share of the server's processor time, over a
	// second of a busy spell, that collecting and scavenging may take
	// under the busy limit; past it the limit is raised by a step
	// (busyStep), a second later again if the share is still past it,
	// up to busyMaxSteps. Below half the share it comes down a step a
	// second. Lifting the limit outright (the governor before this)
	// let the heap grow to three times a live heap sampled in a flush:
	// 104-165 MB resident at the end of 64 agents' 300 thoughts in some
	// runs (3 of 24 on 2026-11-25, about half before), where one step
	// sufficed (87-95 MB in 24 runs), and 155-190 MB at 500 thoughts,
	// where two or three did (101-118 MB), at no cost in rate or
	// processor time a thought that alternating runs could show.
	busyMemShare = 0.12
	// busyStep is one step of the raise, in eighths of the busy limit:
	// an eighth when the share is past busyMemShare, two when it is past
	// twice that. The collector's cost goes with the live heap over the
	// room the limit leaves above it, and with 64 agents the room was
	// some 12 MB of heap under the 72 MiB floor: an eighth (9 MiB)
	// nearly doubles it.
	busyStep = 8
	// busyMaxSteps caps the raise at twice the busy limit: the heap goal
	// is then at least 2.5 times the largest live heap of the window,
	// pacing no tighter than GOGC=150, whatever the share.
	busyMaxSteps = 8
	// liveWindow is how many samples of the live heap the limit follows
	// (the least of them), so that a collection that lands in the middle
	// of a flush does not lift the limit.
	liveWindow = int(quietPeriod / memTick)
)

// softMemoryLimit keeps an idle or lightly used server's memory near what
// it uses, and a busy one's under a looser bound. With the default pacing (GOGC=100)
// the heap grows to twice the live heap before a collection, and a thought
// call leaves a few hundred kB of garbage (mostly decoding in the MCP
// SDK), so a server with a 10,000-thought session in memory (~17 MB live)
// sat at 57 MB resident. While the server is quiet the limit is the larger
// of memoryFloor and half again the live heap.
//
// Under load any limit that close to the live heap costs throughput: the
// collector runs far more often, allocations help it (GC assist), and the
// scavenger returns pages the next request faults back in (issue 12
// measured a fifth of a busy server's processor time there). The first
// governor lifted the limit only once the collector had cost more than a
// tenth of a second's work, and the runtime reports that cost only at the
// end of a collection, so every burst began under the limit. This one
// decides by the allocation rate, which the runtime keeps current: past
// busyAllocRate the limit is loosened within memTick (see busyFloor), and it
// comes back (with the memory handed back to the OS at once, while nobody
// waits) after quietPeriod below it. Under load the collector is paced by
// busyGCPercent, which collects half as often as the default. When
// collecting under the busy limit still costs more than busyMemShare of a
// second's processor time, the limit is raised an eighth at a time
// (raiseStep) and comes down as that cost falls, so that the heap grows
// by about what the collector needs to keep to its share, not to the
// three times a flush's live heap that busyGCPercent alone would allow.
// GOMEMLIMIT, when set, is the user's choice and is left alone; so is
// GOGC (then only the limit moves).
func softMemoryLimit(ctx context.Context) {
	if os.Getenv("GOMEMLIMIT") != "" || !tuning.MemoryGovernor {
		return
	}
	samples := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/cpu/classes/scavenge/total:cpu-seconds"},
		{Name: "/cpu/classes/user:cpu-seconds"},
		// Marking on processors the scheduler had nothing else for
		// costs no request any time; the runtime's documentation says
		// to subtract it from the total for what collecting compels.
		// As the load ebbs it was most of the collector's time (in one
		// run's last busy second 0.11 of 0.22 s), and counted it raised
		// the limit after the work that might have needed it was done.
		{Name: "/cpu/classes/gc/mark/idle:cpu-seconds"},
	}
	start := time.Now()
	// GOGC, when set, is the user's choice as well: only the limit moves.
	ownPacing := os.Getenv("GOGC") == ""
	var g memGovernor
	wasBusy := false
	set := func() {
		metrics.Read(samples)
		m := memSample{at: time.Since(start)}
		if v := samples[0].Value; v.Kind() == metrics.KindUint64 {
			m.live = v.Uint64()
		}
		if v := samples[1].Value; v.Kind() == metrics.KindUint64 {
			m.allocs = v.Uint64()
		}
		for i, v := range samples[2:] {
			if v.Value.Kind() != metrics.KindFloat64 {
				continue
			}
			switch i {
			case 0, 1:
				m.memCPU += v.Value.Float64()
			case 2:
				m.work += v.Value.Float64()
			case 3:
				m.memCPU -= v.Value.Float64()
			}
		}
		limit, release := g.step(m)
		if release {
			// Quiet again: collect and give back at once what the busy
			// spell took, rather than at the background scavenger's
			// slow pace; the limit follows the fresh live heap.
			debug.FreeOSMemory()
			metrics.Read(samples[:1])
			if v := samples[0].Value; v.Kind() == metrics.KindUint64 {
				limit = g.restart(v.Uint64())
			}
		}
		if ownPacing {
			if g.busy != wasBusy {
				percent := 100
				if g.busy {
					percent = busyGCPercent
				}
				debug.SetGCPercent(percent)
				wasBusy = g.busy
			}
		}
		debug.SetMemoryLimit(limit)
	}
	set()
	go func() {
		t := time.NewTicker(memTick)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				set()
			}
		}
	}()
}

// memSample is what the governor reads each tick: when, the live heap
// (as of the last collection) and the bytes allocated since the start.
type memSample struct {
	at     time.Duration
	live   uint64
	allocs uint64
	// memCPU is the processor time spent collecting (but for marking on
	// processors with nothing else to run) and scavenging, work the time
	// spent otherwise (the runtime's estimates, seconds).
	memCPU, work float64
}

// memGovernor decides the soft memory limit from one sample a tick.
type memGovernor struct {
	recent [liveWindow]uint64
	n      int
	prev   memSample
	// busy is set while the limit is lifted; quiet is how long the
	// allocation rate has stayed under busyAllocRate since.
	busy  bool
	quiet time.Duration
	// raised is how many eighths of the busy limit it is raised by:
	// memory management cost more than busyMemShare of a second under
	// it. mark is the sample that second is measured from.
	raised int
	mark   memSample
}

// step takes one sample and returns the limit to set, and whether the
// server has just gone quiet (the caller then hands memory back).
func (g *memGovernor) step(m memSample) (limit int64, release bool) {
	g.recent[g.n%len(g.recent)] = m.live
	g.n++
	if g.n > 1 && m.at > g.prev.at {
		dt := m.at - g.prev.at
		rate := float64(m.allocs-g.prev.allocs) / dt.Seconds()
		switch {
		case rate >= busyAllocRate:
			if !g.busy {
				g.mark = m
			}
			g.busy, g.quiet = true, 0
		case g.busy:
			if g.quiet += dt; g.quiet >= quietPeriod {
				g.busy, g.quiet, g.raised, release = false, 0, 0, true
			}
		}
	}
	g.prev = m
	if g.busy && m.at-g.mark.at >= time.Second {
		g.raised = raiseStep(g.raised, m.memCPU-g.mark.memCPU, m.work-g.mark.work)
		g.mark = m
	}
	if g.busy {
		most := int64(g.mostLive())
		between := int64(g.leastLive()) * (100 + busyGCPercent) / 100
		limit := max(busyFloor, between, most+most/4)
		return limit + limit/busyStep*int64(g.raised), false
	}
	return g.limit(), release
}

// raiseStep returns the raise of the busy limit (in eighths of it) for
// the next second, from the current one and the processor time spent on
// memory (mem) and on everything else (work) over the last second: up a
// step past busyMemShare, two past twice that, down one under half of
// it, and otherwise held, so that the limit neither stays raised once
// the load that needed it is gone nor swings each second around the
// threshold.
func raiseStep(raised int, mem, work float64) int {
	if mem+work <= 0 {
		return raised
	}
	switch share := mem / (mem + work); {
	case share > 2*busyMemShare:
		raised += 2
	case share > busyMemShare:
		raised++
	case share < busyMemShare/2:
		raised--
	}
	return min(max(raised, 0), busyMaxSteps)
}

// restart forgets the live heap seen under load, now that a collection
// has measured it afresh, and returns the limit that follows.
func (g *memGovernor) restart(live uint64) int64 {
	g.recent = [liveWindow]uint64{}
	g.recent[0], g.n = live, 1
	return g.limit()
}

// limit is the larger of memoryFloor and half again the least live heap
// of the recent samples.
func (g *memGovernor) limit() int64 {
	return max(memoryFloor, int64(g.leastLive()*3/2))
}

// mostLive is the largest live heap of the recent samples.
func (g *memGovernor) mostLive() uint64 {
	live := g.recent[0]
	for _, v := range g.recent[1:min(g.n, len(g.recent))] {
		live = max(live, v)
	}
	return live
}

// leastLive is the least live heap of the recent samples.
func (g *memGovernor) leastLive() uint64 {
	live := g.recent[0]
	for _, v := range g.recent[1:min(g.n, len(g.recent))] {
		live = min(live, v)
	}
	return live
}
