package main

import "strings"

// sysmonSetting keeps the Go runtime's monitor thread (sysmon) out of its
// deep sleep. A server that goes idle between calls, as it does for each
// round trip of a lone agent, lets sysmon sleep until the next system
// call, which wakes it and starts it polling again every 20 µs, backing
// off only after a millisecond: with one agent that is most of every
// call, six or seven wake-ups a thought, and about a sixth of the
// server's processor time in a virtual machine (BENCHMARKS.md, "the
// request path's CPU per thought"). A set schedtrace is the runtime's one
// switch that keeps sysmon from that sleep, so that it stays at its
// backed-off 10 ms while nothing needs retaking; its period, the largest
// the runtime takes (2^31-1 ms, 24.8 days of the host's uptime), puts the
// trace line it prints out of reach: the runtime counts the period from
// the host's boot, so a host up for longer prints one line to stderr at
// start and one every 24.8 days after. Only the runtime reads
// GODEBUG, at start: hence a new exec of the binary.
const sysmonSetting = "schedtrace=2147483647"

// sysmonEnv returns environ with sysmonSetting added to GODEBUG, and true,
// when args run serve and GODEBUG does not set schedtrace already (which
// is also how a user turns this off: GODEBUG=schedtrace=0).
func sysmonEnv(args, environ []string) ([]string, bool) {
	if !runsServe(args) {
		return nil, false
	}
	out := make([]string, 0, len(environ)+1)
	found := false
	for _, kv := range environ {
		v, ok := strings.CutPrefix(kv, "GODEBUG=")
		if !ok {
			out = append(out, kv)
			continue
		}
		for _, s := range strings.Split(v, ",") {
			if k, _, _ := strings.Cut(strings.TrimSpace(s), "="); k == "schedtrace" {
				return nil, false
			}
		}
		if found {
			continue // the runtime reads the first; so do we
		}
		found = true
		if strings.TrimSpace(v) != "" {
			v += ","
		}
		out = append(out, "GODEBUG="+v+sysmonSetting)
	}
	if !found {
		out = append(out, "GODEBUG="+sysmonSetting)
	}
	return out, true
}

// runsServe reports whether args (without the program's name) name the
// serve command: its first word that is not a flag.
func runsServe(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if !strings.HasPrefix(a, "-") {
			return a == "serve"
		}
	}
	return false
}
