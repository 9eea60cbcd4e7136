// Command mcpbench drives `thoughtbox serve --transport stdio` over a real
// stdio connection, as an agent would, and reports the figures of
// BENCHMARKS.md, "MCP over stdio against the reference server": durable
// thoughts per second, the initialize round trip, and the server's
// resident memory after the run.
//
//	go run ./bench/mcpbench                  # 1,000 then 10,000 thoughts
//	go run ./bench/mcpbench -n 1000          # one run
//	go run ./bench/mcpbench -n 1000 -peer -pairs 5
//	go run ./bench/mcpbench -n 1000 -peer -storage memory
//	go run ./bench/mcpbench -n 1000 -peer -syncprobe   # and what one sync costs here
//	go run ./bench/mcpbench -n 300 -data /tmp/big   # on an existing ledger
//
// With -peer, it installs the reference server
// @modelcontextprotocol/server-sequential-thinking with npm into a temporary
// folder and drives it with the same client, in alternating runs with
// thoughtbox, printing the ratio of their rates for each pair: the
// reference keeps thoughts in memory and stores nothing, so the ratio says
// what durability in Git costs over an in-memory list.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/internal/benchkit/build"
	"github.com/thoughtbox/thoughtbox/internal/benchkit/machine"
)

var (
	bin  = flag.String("bin", "", "thoughtbox binary (default: go build ./cmd/thoughtbox)")
	runs = flag.String("n", "1000,10000", "comma-separated thought counts, one fresh server each")
	prof = flag.String("clientprofile", "", "write a CPU profile of the client (this process) to this file")
	maps = flag.Bool("smaps", false, "print the server's resident memory by mapping after the run")

	peer    = flag.Bool("peer", false, "alternate runs with the npm reference server (needs node and npm) and print the ratio")
	pairs   = flag.Int("pairs", 3, "with -peer: how many alternating pairs of runs")
	storage = flag.String("storage", "fs", "THOUGHTBOX_STORAGE for thoughtbox: fs or memory")
	data    = flag.String("data", "", "data directory for thoughtbox (default: a fresh one per run)")
	probe   = flag.Bool("syncprobe", false, "with -peer: before each pair, time 500 thought-sized appends and syncs in the data directory's file system (see syncProbe)")
)

// peerPackage is the reference server -peer installs.
const peerPackage = "@modelcontextprotocol/server-sequential-thinking@2026.8.31"

func main() {
	flag.Parse()
	if *probe && !*peer {
		fmt.Fprintln(os.Stderr, "mcpbench: -syncprobe goes with -peer (it is taken before each pair)")
		os.Exit(2)
	}
	work, err := os.MkdirTemp("", "mcpbench")
	check(err)
	defer os.RemoveAll(work)
	exe := *bin
	if exe == "" {
		exe, err = build.Thoughtbox(work)
		check(err)
	}
	if *prof != "" {
		f, err := os.Create(*prof)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	var peerJS string
	if *peer {
		peerJS = installPeer(work)
	}
	for _, f := range strings.Split(*runs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		check(err)
		if !*peer {
			run(thoughtboxTarget(exe, dataDir(work, f, 0)), n)
			continue
		}
		var ratios []float64
		for p := 0; p < *pairs; p++ {
			// Alternate which goes first, so that neither always meets a
			// warmer or busier machine.
			var ours, theirs float64
			if *probe {
				// Beside the data directory: its file system, and nothing
				// left in it.
				printSyncProbe(filepath.Dir(dataDir(work, f, p)), p+1)
			}
			if p%2 == 0 {
				ours = run(thoughtboxTarget(exe, dataDir(work, f, p)), n)
				theirs = run(peerTarget(peerJS), n)
			} else {
				theirs = run(peerTarget(peerJS), n)
				ours = run(thoughtboxTarget(exe, dataDir(work, f, p)), n)
			}
			ratios = append(ratios, ours/theirs)
			fmt.Printf("pair %d, %d thoughts: thoughtbox (%s) %.0f/s, reference %.0f/s: ratio %.2f×\n", p+1, n, *storage, ours, theirs, ours/theirs)
		}
		sort.Float64s(ratios)
		fmt.Printf("thoughtbox (%s) / reference server, %d thoughts, %d pairs: median ratio %.2f× (min %.2f×, max %.2f×); load average %s\n",
			*storage, n, len(ratios), ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1], machine.LoadAvg())
	}
}

func dataDir(work, n string, pair int) string {
	if *data != "" {
		return *data
	}
	return filepath.Join(work, fmt.Sprintf("data-%s-%d", n, pair))
}

// target is a server to drive: how to start it and how to send it one
// thought.
type target struct {
	name    string
	cmd     func() *exec.Cmd
	prepare func(ctx context.Context, s *mcp.ClientSession, n int)
	thought func(ctx context.Context, s *mcp.ClientSession, i, n int)
}

func thoughtboxTarget(exe, data string) target {
	return target{
		name: "thoughtbox",
		cmd: func() *exec.Cmd {
			cmd := exec.Command(exe, "serve", "--transport", "stdio")
			cmd.Env = append(os.Environ(), "THOUGHTBOX_DATA_DIR="+data, "DISABLE_THOUGHT_LOGGING=1", "THOUGHTBOX_STORAGE="+*storage)
			return cmd
		},
		prepare: func(ctx context.Context, s *mcp.ClientSession, n int) {
			call(ctx, s, "start_new", map[string]any{"sessionTitle": fmt.Sprintf("mcpbench %d", n)})
			call(ctx, s, "cipher", map[string]any{})
		},
		thought: func(ctx context.Context, s *mcp.ClientSession, i, n int) {
			call(ctx, s, "thought", map[string]any{"thought": benchThought(i), "nextThoughtNeeded": true})
		},
	}
}

// peerTarget is the reference server: its one tool takes the thought, its
// number and the estimated total, as the seeds' original did.
func peerTarget(js string) target {
	return target{
		name: "reference",
		cmd: func() *exec.Cmd {
			cmd := exec.Command("node", js)
			cmd.Env = append(os.Environ(), "DISABLE_THOUGHT_LOGGING=true")
			return cmd
		},
		prepare: func(context.Context, *mcp.ClientSession, int) {},
		thought: func(ctx context.Context, s *mcp.ClientSession, i, n int) {
			res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "sequentialthinking", Arguments: map[string]any{
				"thought": benchThought(i), "nextThoughtNeeded": true, "thoughtNumber": i + 1, "totalThoughts": n,
			}})
			check(err)
			if res.IsError {
				check(fmt.Errorf("reference server: %v", res.Content[0].(*mcp.TextContent).Text))
			}
		},
	}
}

func benchThought(i int) string {
	return fmt.Sprintf("S%d|H|S%d|Latency follows the deploy of build %d: the planner scans users.email without its index.", i+1, i, i+1)
}

// installPeer installs the reference server with npm and returns its entry
// script.
func installPeer(work string) string {
	dir := filepath.Join(work, "peer")
	check(os.MkdirAll(dir, 0o755))
	check(os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private":true}`), 0o644))
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--loglevel=error", peerPackage)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		check(fmt.Errorf("npm install %s (node and npm are needed for -peer): %v\n%s", peerPackage, err, out))
	}
	return filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-sequential-thinking", "dist", "index.js")
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpbench:", err)
		os.Exit(1)
	}
}

func call(ctx context.Context, s *mcp.ClientSession, op string, args map[string]any) {
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "thoughtbox_gateway", Arguments: map[string]any{"operation": op, "args": args}})
	check(err)
	if res.IsError {
		check(fmt.Errorf("%s: %v", op, res.Content[0].(*mcp.TextContent).Text))
	}
}

// run drives one fresh server through n thoughts, prints its figures and
// returns its rate in thoughts per second.
func run(tg target, n int) float64 {
	ctx := context.Background()
	cmd := tg.cmd()
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpbench", Version: "1"}, nil)
	t0 := time.Now()
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	check(err)
	connect := time.Since(t0)
	// The initialize round trip proper, on a server that is already up: a
	// second connection would need a second process, so time ping and the
	// handshake's share is reported with process start included above.
	var pings []time.Duration
	for i := 0; i < 20; i++ {
		p0 := time.Now()
		check(s.Ping(ctx, nil))
		pings = append(pings, time.Since(p0))
	}
	tg.prepare(ctx, s, n)
	lat := make([]time.Duration, n)
	srv0, cli0 := machine.ProcCPU(cmd.Process.Pid), machine.CPUTime()
	start := time.Now()
	for i := 0; i < n; i++ {
		c0 := time.Now()
		tg.thought(ctx, s, i, n)
		lat[i] = time.Since(c0)
	}
	total := time.Since(start)
	srvCPU, cliCPU := machine.ProcCPU(cmd.Process.Pid)-srv0, machine.CPUTime()-cli0
	mem := machine.ProcMemory(cmd.Process.Pid)
	rss, anon, file := mem.RSS, mem.Anon, mem.File
	if *maps {
		printSmaps(cmd.Process.Pid)
	}
	s.Close()
	cmd.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	sort.Slice(pings, func(i, j int) bool { return pings[i] < pings[j] })
	// The mean is what the rate follows; a median well under it means a
	// tail of slow calls (a stall behind a flush, a busy core) costs more
	// than the typical call.
	fmt.Printf("%s stdio, %d thoughts: %.0f thoughts/s (mean %v, median %v, p90 %v, p99 %v, max %v per call)\n",
		tg.name, n, float64(n)/total.Seconds(), (total / time.Duration(n)).Round(time.Microsecond), lat[n/2].Round(time.Microsecond),
		lat[n*90/100].Round(time.Microsecond), lat[n*99/100].Round(time.Microsecond), lat[n-1].Round(time.Microsecond))
	fmt.Printf("%s stdio, %d thoughts: connect (process start + initialize round trip) %v; ping round trip median %v\n",
		tg.name, n, connect.Round(100*time.Microsecond), pings[len(pings)/2].Round(time.Microsecond))
	fmt.Printf("%s stdio, %d thoughts: server resident memory after the run: %.1f MB (anonymous %.1f MB, file-backed %.1f MB)\n", tg.name, n, float64(rss)/1e6, float64(anon)/1e6, float64(file)/1e6)
	fmt.Printf("%s stdio, %d thoughts: CPU per thought (user+system): server %v, client %v; load average %s\n",
		tg.name, n, (srvCPU / time.Duration(n)).Round(time.Microsecond), (cliCPU / time.Duration(n)).Round(time.Microsecond), machine.LoadAvg())
	return float64(n) / total.Seconds()
}

// printSmaps prints the resident size of each of the server's mappings
// that holds more than 256 kB.
func printSmaps(pid int) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return
	}
	var head string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			head = line
		} else if len(f) == 3 && f[0] == "Rss:" {
			if kb, _ := strconv.Atoi(f[1]); kb > 256 {
				fmt.Printf("  %6d kB  %s\n", kb, head)
			}
		}
	}
}
