package main

import (
	"strings"

	"github.com/thoughtbox/thoughtbox/config"
)

// sysmonSetting keeps the Go runtime's monitor thread (sysmon) out of its
// deep sleep. A server that goes idle between calls, as it does for each
// round trip of a lone agent, lets sysmon sleep until the next system
// call, which wakes it and starts it polling again every 20 µs, backing
// off only after a millisecond: with one agent that is most of every
// call, several wake-ups a thought, and a large share of the server's
// processor time in a virtual machine (BENCHMARKS.md, "Tuning: what each
// trick was measured to buy"). A set schedtrace is the runtime's one
// switch that keeps sysmon from that sleep, so that it stays at its
// backed-off 10 ms while nothing needs retaking; its period, the largest
// the runtime takes (2^31-1 ms, 24.8 days of the host's uptime), puts the
// trace line it prints out of reach: the runtime counts the period from
// the host's boot, so a host up for longer prints one line to stderr at
// start and one every 24.8 days after. Only the runtime reads
// GODEBUG, at start: hence a new exec of the binary.
const sysmonSetting = "schedtrace=2147483647"

// sysmonEnv returns environ with sysmonSetting added to GODEBUG, and true,
// when args run serve over HTTP and GODEBUG does not set schedtrace already (which
// is also how a user turns this off: GODEBUG=schedtrace=0).
func sysmonEnv(args, environ []string) ([]string, bool) {
	if !runsServe(args, environ) {
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
// serve command, its first word that is not a flag, over HTTP. Over stdio
// a client starts a server for each session it opens, and a second exec
// would add the binary's start to every connect (BENCHMARKS.md, "Tuning:
// what each trick was measured to buy"): the setting is kept for the
// long-lived HTTP server, where its agents' calls gain.
func runsServe(args, environ []string) bool {
	for i, a := range args {
		if a == "--" {
			return false
		}
		if !strings.HasPrefix(a, "-") {
			return a == "serve" && transport(args[i+1:], environ) == "http"
		}
	}
	return false
}

// transport is the transport serve's flags and environment ask for, as
// serve reads them: the flag, then THOUGHTBOX_TRANSPORT, then http. A
// value serve refuses is returned as it is; serve then reports it.
func transport(args, environ []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--transport="); ok {
			return v
		}
		if a == "--transport" && i+1 < len(args) {
			return args[i+1]
		}
	}
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, config.EnvTransport+"="); ok {
			if v != "" {
				return v
			}
			break // the first is the one getenv returns
		}
	}
	return "http"
}
