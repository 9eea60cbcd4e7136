// Package tuning is the one place where the server's runtime and I/O
// tricks are switched. Each trick is here because alternating runs
// against the build without it moved a headline row of BENCHMARKS.md by
// 5 % or more; each switch's comment names that row, and the code that
// does the trick reads the switch. Every build a user gets has them all
// on.
//
// To measure a trick again, build without it and alternate that build
// with a normal one (BENCHMARKS.md, "Tuning: what each trick was measured
// to buy"):
//
//	go build -ldflags "-X github.com/thoughtbox/thoughtbox/internal/tuning.off=inline,memgov" ./cmd/thoughtbox
//
// A name off does not know stops the program at its start, so that a
// misspelt build does not measure the trick it claims to leave out.
package tuning

import (
	"fmt"
	"slices"
	"strings"
)

// off is the comma-separated names of the tricks a benchmark build goes
// without; only the linker sets it.
var off string

var known []string

// on registers a trick's name and reports whether it is on.
func on(name string) bool {
	known = append(known, name)
	return !slices.Contains(strings.Split(off, ","), name)
}

// The tricks, each read where it is done. Each comment names its row of
// BENCHMARKS.md, "Tuning: what each trick was measured to buy", and the
// headline figure that row moved.
var (
	// SysmonAwake: the HTTP server runs itself again with a GODEBUG
	// schedtrace set, which keeps the runtime's monitor thread out of its
	// deep sleep between calls (cmd/thoughtbox, sysmon.go). Row "sysmon":
	// HTTP 16 and 64 agents' rate.
	SysmonAwake = on("sysmon")

	// InlineAnswer: the stdio reader answers a call itself when nothing
	// else waits in the input, handing the reading over after a grace
	// (gateway/internal/stdio, inline.go). Row "inline": stdio rate,
	// memory and durable storage.
	InlineAnswer = on("inline")

	// MemoryGovernor: serve sets a soft memory limit while quiet and
	// raises it in steps under load (cmd/thoughtbox/internal/cli,
	// memgov.go). Row "memgov": HTTP 64 agents' idle RSS, and the rates.
	MemoryGovernor = on("memgov")
)

// Off returns the names of the tricks this build goes without, for
// `thoughtbox version` to say: a linker flag naming the wrong package is
// ignored without a word, so a benchmark checks it there.
func Off() []string {
	var names []string
	for _, name := range strings.Split(off, ",") {
		if name != "" {
			names = append(names, name)
		}
	}
	return names
}

func init() {
	for _, name := range strings.Split(off, ",") {
		if name != "" && !slices.Contains(known, name) {
			panic(fmt.Sprintf("tuning: -X tuning.off names %q; the tricks are %s", name, strings.Join(known, ", ")))
		}
	}
}
