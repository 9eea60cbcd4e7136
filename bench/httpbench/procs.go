package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/thoughtbox/thoughtbox/internal/benchkit/machine"
)

// With -procs every agent runs in a process of its own: this program run
// again with -child-url. A team's agents are separate processes, each with
// its own heap, collector and connection pool; all of them in one process
// share one collector, whose work grows with their common heap (with 64
// agents the one-process client spent about a third of its time
// collecting, on the same two cores as the server), and, with the SDK's
// default HTTP client, one pool of two idle connections.
//
// The child speaks lines on its stdout:
//
//	ready <session id>           connected, session started, at the thought stage
//	lat <start ns> <latency ns>  one acknowledged thought (start: Unix time)
//	done <acked> <cpu ns>        finished; its processor time from "go" to here
//	fail <acked> <error>         an agent's call failed
//
// and waits for one line on its stdin ("go") between ready and its first
// thought, so that the clock starts once every agent is ready.
var (
	procs      = flag.Bool("procs", false, "run every agent in a process of its own (this program again), as a team's agents are: its own heap, collector and connection pool")
	childURL   = flag.String("child-url", "", "(internal) run one agent against this server, for -procs")
	childIndex = flag.Int("child-index", 0, "(internal) the agent's number, for -procs")
)

func childMain() {
	ctx := context.Background()
	say := bufio.NewWriter(os.Stdout)
	fail := func(acked int, err error) {
		fmt.Fprintf(say, "fail %d %s\n", acked, strings.ReplaceAll(err.Error(), "\n", " "))
		say.Flush()
		os.Exit(1)
	}
	s, err := connect(ctx, *childURL, fmt.Sprintf("httpbench-%d", *childIndex))
	if err != nil {
		fail(0, err)
	}
	r, err := call(ctx, s, "start_new", map[string]any{"sessionTitle": fmt.Sprintf("httpbench agent %d", *childIndex)})
	if err == nil {
		_, err = call(ctx, s, "cipher", nil)
	}
	if err != nil {
		fail(0, err)
	}
	session, _ := r["sessionId"].(string)
	fmt.Fprintf(say, "ready %s\n", session)
	say.Flush()
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fail(0, fmt.Errorf("waiting for go: %v", err))
	}
	cpu0 := machine.CPUTime()
	lat := make([][2]int64, 0, *n)
	for k := 1; k <= *n; k++ {
		t0 := time.Now()
		_, err := call(ctx, s, "thought", map[string]any{
			"thought":           fmt.Sprintf("S%d|H|S%d|Agent %d: the latency follows deploy %d; the planner scans users.email.", k, k-1, *childIndex, k),
			"nextThoughtNeeded": true,
		})
		if err != nil {
			fail(len(lat), err)
		}
		lat = append(lat, [2]int64{t0.UnixNano(), int64(time.Since(t0))})
	}
	cpu := machine.CPUTime() - cpu0
	// Written after the last call, so that reporting costs no call time.
	for _, l := range lat {
		fmt.Fprintf(say, "lat %d %d\n", l[0], l[1])
	}
	fmt.Fprintf(say, "done %d %d\n", len(lat), int64(cpu))
	say.Flush()
	s.close()
}

// driveProcs runs agents child processes against url, each one agent, and
// returns their results, the wall time from "go" until the last
// acknowledged thought, and the children's processor time over that span.
func driveProcs(url string, agents int, started func()) (results []agentResult, start time.Time, wall, cliCPU time.Duration) {
	exe, err := os.Executable()
	check(err)
	results = make([]agentResult, agents)
	type child struct {
		cmd   *exec.Cmd
		in    io.WriteCloser
		lines *bufio.Scanner
	}
	kids := make([]child, agents)
	for i := range agents {
		cmd := exec.Command(exe, "-child-url", url, "-child-index", strconv.Itoa(i), "-n", strconv.Itoa(*n),
			"-client", *client, "-conns", *conns)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		check(err)
		out, err := cmd.StdoutPipe()
		check(err)
		check(launch(cmd))
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		kids[i] = child{cmd, in, sc}
	}
	for i, k := range kids {
		if !k.lines.Scan() {
			check(fmt.Errorf("agent process %d ended before it was ready", i))
		}
		line := k.lines.Text()
		session, ok := strings.CutPrefix(line, "ready ")
		if !ok {
			check(fmt.Errorf("agent process %d: %s", i, line))
		}
		results[i].session = session
	}
	started()
	start = time.Now()
	for _, k := range kids {
		io.WriteString(k.in, "go\n")
		k.in.Close()
	}
	var (
		mu   sync.Mutex
		last time.Time
		wg   sync.WaitGroup
	)
	for i, k := range kids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[i]
			r.lat = make([]time.Duration, 0, *n)
			for k.lines.Scan() {
				f := strings.Fields(k.lines.Text())
				switch {
				case len(f) == 3 && f[0] == "lat":
					t0, _ := strconv.ParseInt(f[1], 10, 64)
					l, _ := strconv.ParseInt(f[2], 10, 64)
					r.starts = append(r.starts, time.Unix(0, t0).Sub(start))
					r.lat = append(r.lat, time.Duration(l))
					r.acked++
					mu.Lock()
					if end := time.Unix(0, t0+l); end.After(last) {
						last = end
					}
					mu.Unlock()
				case len(f) == 3 && f[0] == "done":
					c, _ := strconv.ParseInt(f[2], 10, 64)
					mu.Lock()
					cliCPU += time.Duration(c)
					mu.Unlock()
				case len(f) >= 2 && f[0] == "fail":
					r.err = fmt.Errorf("agent process %d: %s", i, strings.Join(f[2:], " "))
				}
			}
			if err := k.cmd.Wait(); err != nil && r.err == nil {
				r.err = fmt.Errorf("agent process %d: %v", i, err)
			}
			// One failed agent fails the run: stop the others now rather
			// than after their thoughts.
			check(r.err)
		}()
	}
	wg.Wait()
	return results, start, last.Sub(start), cliCPU
}
