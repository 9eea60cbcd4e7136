// Command teamsim simulates a team of Thoughtbox servers kept in step
// through one Git remote, as issue 12 describes: several `thoughtbox serve`
// processes over Streamable HTTP, each with its own data directory, all
// with THOUGHTBOX_AUTO_PUSH and THOUGHTBOX_AUTO_PULL set to one bare
// repository served by `git daemon` (or by its path, with -remote file).
// Agents (MCP clients) spread over the servers each write sessions of -n
// thoughts, closing each, until -duration is up. A watcher on every server
// lists its sessions every -poll, reads with read_thoughts those of the
// other servers that grew, and records, for every thought, the time from
// its acknowledgement on its own server to its visibility on another: the
// propagation delay.
//
// At the end, once every server sees every session whole, the servers
// stop and the run checks with plain git that every ledger holds every
// session with identical refs, that the remote has them all with one
// commit per acknowledged thought, and that the remote passes
// `git fsck --strict`.
//
//	go run ./systest/teamsim                          # 3 servers, 16 agents, 2 minutes
//	go run ./systest/teamsim -duration 30s -interval 1s
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "", "thoughtbox binary (default: go build ./cmd/thoughtbox)")
	flag.IntVar(&o.servers, "servers", 3, "thoughtbox serve processes, each with its own data directory")
	flag.IntVar(&o.agents, "agents", 16, "agents (MCP clients), spread over the servers in turn")
	flag.IntVar(&o.n, "n", 20, "thoughts per session (the last one closes it)")
	flag.DurationVar(&o.duration, "duration", 2*time.Minute, "how long agents start new sessions (each finishes the one it is in)")
	flag.DurationVar(&o.pace, "pace", 200*time.Millisecond, "an agent's pause between two thoughts (time to think)")
	flag.DurationVar(&o.interval, "interval", 2*time.Second, "THOUGHTBOX_AUTO_PULL_INTERVAL and THOUGHTBOX_AUTO_PUSH_INTERVAL of every server")
	flag.DurationVar(&o.poll, "poll", 250*time.Millisecond, "how often a watcher reads the other servers' sessions")
	flag.DurationVar(&o.settle, "settle", 2*time.Minute, "how long to wait, after the agents stop, for every server to see every session")
	flag.StringVar(&o.remote, "remote", "daemon", "how the servers reach the remote: daemon (git daemon on 127.0.0.1) or file (its path)")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (data directories, remote, server logs)")
	flag.Parse()
	r, err := run(o, os.Stdout)
	if r != nil {
		r.print(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "teamsim:", err)
		os.Exit(1)
	}
}
