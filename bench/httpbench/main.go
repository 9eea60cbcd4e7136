// Command httpbench drives `thoughtbox serve` over Streamable HTTP with many
// agents at once, each its own MCP session and its own reasoning session,
// as a team's agents would, and reports the aggregate rate of durable
// thoughts, the latency of each call and the server's memory. Afterwards it
// checks with plain git that every acknowledged thought is a commit.
//
//	go run ./bench/httpbench                       # 1, 16 and 64 agents, 150 thoughts each
//	go run ./bench/httpbench -agents 64 -n 200
//	go run ./bench/httpbench -data /tmp/big        # against an existing ledger
//	go run ./bench/httpbench -client raw           # a client that costs the machine little
//	go run ./bench/httpbench -conns own            # the SDK's client, one connection pool per agent
//	go run ./bench/httpbench -procs                # every agent in a process of its own
//	go run ./bench/httpbench -bin old,new -agents 64 -rounds 8   # two builds, alternating, compared pair by pair
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/internal/benchkit/build"
	"github.com/thoughtbox/thoughtbox/internal/benchkit/machine"
	"github.com/thoughtbox/thoughtbox/internal/benchkit/mcpcall"
)

var (
	bin     = flag.String("bin", "", "thoughtbox binary, or comma-separated binaries run in turn (default: go build ./cmd/thoughtbox)")
	rounds  = flag.Int("rounds", 1, "run every agent count with every binary this many times, alternating the binaries, and summarise")
	agents  = flag.String("agents", "1,16,64", "comma-separated agent counts, one fresh server each")
	n       = flag.Int("n", 150, "thoughts per agent")
	data    = flag.String("data", "", "data directory to serve (default: a fresh one per run)")
	storage = flag.String("storage", "fs", "THOUGHTBOX_STORAGE for the server: fs or memory")
	idleFor = flag.Duration("idlewait", 10*time.Second, "how long the server is left quiet before its idle RSS is read; 0 skips the reading (printed as 0)")
	nocheck = flag.Bool("nocheck", false, "skip the git check of every acknowledged thought")
	client  = flag.String("client", "sdk", "sdk: the go-sdk's MCP client; raw: a plain net/http client (see rawAgent)")
	cpuprof = flag.String("cpuprofile", "", "write a CPU profile of this client (the agents) to this file")
	latlog  = flag.String("latlog", "", "write each call's start (ms since the clock started), agent and latency (ms) to this file, to see whether the slow calls bunch in time")
	conns   = flag.String("conns", "shared", "with -client sdk, shared: every agent's client on http.DefaultClient, whose pool keeps 2 idle connections, so that with many agents most calls open a new one; own: an HTTP client for each agent, as agents in processes of their own have")
)

func main() {
	flag.Parse()
	if *childURL != "" {
		childMain()
		return
	}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		check(fmt.Errorf("stopped by %v", <-sig))
	}()
	if *client != "sdk" && *client != "raw" {
		check(fmt.Errorf("-client: expected sdk or raw, got %q", *client))
	}
	if *conns != "shared" && *conns != "own" {
		check(fmt.Errorf("-conns: expected shared or own, got %q", *conns))
	}
	if *cpuprof != "" {
		f, err := os.Create(*cpuprof)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	work, err := os.MkdirTemp("", "httpbench")
	check(err)
	defer os.RemoveAll(work)
	started.Lock()
	started.work = work
	started.Unlock()
	var exes []string
	if *bin == "" {
		exe, err := build.Thoughtbox(work)
		check(err)
		exes = []string{exe}
	} else {
		exes = strings.Split(*bin, ",")
	}
	if *rounds < 1 {
		check(fmt.Errorf("-rounds: expected at least 1, got %d", *rounds))
	}
	var counts []int
	for _, f := range strings.Split(*agents, ",") {
		a, err := strconv.Atoi(strings.TrimSpace(f))
		check(err)
		counts = append(counts, a)
	}
	// results[agent count][binary] holds one result per round.
	results := map[int][][]runResult{}
	for round := range *rounds {
		for _, a := range counts {
			if results[a] == nil {
				results[a] = make([][]runResult, len(exes))
			}
			for bi, exe := range exes {
				dir := *data
				if dir == "" {
					dir = filepath.Join(work, fmt.Sprintf("data-%d-%d-%d", round, bi, a))
				}
				if len(exes) > 1 {
					fmt.Printf("[%s] ", exe)
				}
				results[a][bi] = append(results[a][bi], run(exe, dir, a))
				if *data == "" {
					os.RemoveAll(dir)
				}
			}
		}
	}
	if *rounds > 1 || len(exes) > 1 {
		for _, a := range counts {
			summarise(a, exes, results[a])
		}
	}
}

// runResult is what summarise compares of one run.
type runResult struct {
	rate     float64       // durable thoughts per second, all agents together
	p99      time.Duration // per call
	cpuRatio float64       // the server's processor time per thought over the client's
}

// summarise prints, for one agent count, each binary's range of rates
// and p99s, and how many runs met the 50 ms p99; with two
// binaries, how many alternating pairs the second won. The ratio of the
// server's processor time to the client's takes out how fast the shared
// machine happened to be during a run, which moves both alike.
func summarise(agents int, exes []string, res [][]runResult) {
	for bi, exe := range exes {
		rs := res[bi]
		rates, p99s, ratios := make([]float64, len(rs)), make([]float64, len(rs)), make([]float64, len(rs))
		under := 0
		for i, r := range rs {
			rates[i], p99s[i], ratios[i] = r.rate, float64(r.p99)/1e6, r.cpuRatio
			if r.p99 < 50*time.Millisecond {
				under++
			}
		}
		fmt.Printf("summary, %d agents, %s, %d runs: rate %.0f median (%.0f-%.0f)/s; p99 %.1f median (%.1f-%.1f) ms, under 50 ms in %d; server/client CPU %.2f median\n",
			agents, exe, len(rs), median(rates), slices.Min(rates), slices.Max(rates), median(p99s), slices.Min(p99s), slices.Max(p99s), under, median(ratios))
	}
	if len(exes) == 2 {
		lowerP99, higherRate := 0, 0
		for i := range res[0] {
			if res[1][i].p99 < res[0][i].p99 {
				lowerP99++
			}
			if res[1][i].rate > res[0][i].rate {
				higherRate++
			}
		}
		fmt.Printf("summary, %d agents: %s against %s, pair by pair: lower p99 in %d of %d, higher rate in %d\n",
			agents, exes[1], exes[0], lowerP99, len(res[0]), higherRate)
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

var listening = regexp.MustCompile(`http://[^ ]+/mcp`)

// startServer runs thoughtbox serve on a free loopback port and returns its
// URL once it listens.
func startServer(exe, dir string) (*exec.Cmd, string) {
	cmd := exec.Command(exe, "serve")
	cmd.Env = append(os.Environ(), "THOUGHTBOX_DATA_DIR="+dir, "HOST=127.0.0.1", "PORT=0",
		"DISABLE_THOUGHT_LOGGING=1", "THOUGHTBOX_STORAGE="+*storage)
	stderr, err := cmd.StderrPipe()
	check(err)
	check(launch(cmd))
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if u := listening.FindString(sc.Text()); u != "" && !sent {
				urls <- u
				sent = true
			} else if !sent || strings.Contains(sc.Text(), "error") {
				fmt.Fprintln(os.Stderr, "server:", sc.Text())
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case u := <-urls:
		return cmd, u
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		check(fmt.Errorf("the server did not say where it listens within 60 s"))
	}
	return nil, ""
}

type agentResult struct {
	session string
	lat     []time.Duration
	starts  []time.Duration
	acked   int
	err     error
}

func run(exe, dir string, agents int) runResult {
	cmd, url := startServer(exe, dir)
	pid := cmd.Process.Pid
	var (
		results        []agentResult
		start          time.Time
		wall           time.Duration
		srvCPU, cliCPU time.Duration
		sessions       []agent
	)
	if *procs {
		var srv0 time.Duration
		results, start, wall, cliCPU = driveProcs(url, agents, func() { srv0 = machine.ProcCPU(pid) })
		srvCPU = machine.ProcCPU(pid) - srv0
	} else {
		results, sessions, start, wall, srvCPU, cliCPU = drive(url, pid, agents)
	}
	rss := machine.ProcMemory(pid).RSS
	for _, s := range sessions {
		s.close()
	}
	// Idle memory, once the server has been quiet long enough to set its
	// soft memory limit again (five quiet seconds, see serve's governor)
	// and return what it no longer needs.
	var idle int64
	if *idleFor > 0 {
		time.Sleep(*idleFor)
		idle = machine.ProcMemory(pid).RSS
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()

	if *latlog != "" {
		writeLatLog(*latlog, start, results)
	}
	var all []time.Duration
	total, failed := 0, 0
	for _, r := range results {
		all = append(all, r.lat...)
		total += r.acked
		if r.err != nil {
			failed++
			fmt.Fprintf(os.Stderr, "httpbench: an agent failed after %d thoughts: %v\n", r.acked, r.err)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p int) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, len(all)*p/100)].Round(10 * time.Microsecond)
	}
	how := *client + " client"
	if *procs {
		how += ", a process per agent"
	} else if *client == "sdk" && *conns == "own" {
		how += ", a pool per agent"
	}
	fmt.Printf("http, %d agents x %d thoughts (%s, %s): %.0f durable thoughts/s aggregate; per call p50 %v, p99 %v; server RSS %.1f MB under load, %.1f MB idle; CPU per thought server %v, client %v; load average %s\n",
		agents, *n, *storage, how, float64(total)/wall.Seconds(), pct(50), pct(99), float64(rss)/1e6, float64(idle)/1e6,
		(srvCPU / time.Duration(max(total, 1))).Round(time.Microsecond), (cliCPU / time.Duration(max(total, 1))).Round(time.Microsecond), machine.LoadAvg())
	if failed > 0 {
		check(fmt.Errorf("%d agents failed", failed))
	}
	if *storage == "fs" && !*nocheck {
		verifyCommits(filepath.Join(dir, "projects", "_default.git"), results)
	}
	return runResult{rate: float64(total) / wall.Seconds(), p99: pct(99), cpuRatio: float64(srvCPU) / float64(max(cliCPU, 1))}
}

// drive runs the agents as goroutines of this process and returns their
// results and sessions, the start and length of the timed part, and the
// processor time the server and this process spent in it.
func drive(url string, pid, agents int) (results []agentResult, sessions []agent, start time.Time, wall, srvCPU, cliCPU time.Duration) {
	ctx := context.Background()
	results = make([]agentResult, agents)
	// Every agent connects and reaches the thought stage before the clock
	// starts, so the figure is the steady rate of thoughts.
	sessions = make([]agent, agents)
	var wg sync.WaitGroup
	for i := range agents {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s, err := connect(ctx, url, fmt.Sprintf("httpbench-%d", i))
			if err != nil {
				results[i].err = err
				return
			}
			sessions[i] = s
			r, err := call(ctx, s, "start_new", map[string]any{"sessionTitle": fmt.Sprintf("httpbench agent %d", i)})
			if err == nil {
				results[i].session, _ = r["sessionId"].(string)
				_, err = call(ctx, s, "cipher", nil)
			}
			results[i].err = err
		}(i)
	}
	wg.Wait()
	for i := range results {
		check(results[i].err)
	}
	srv0, cli0 := machine.ProcCPU(pid), machine.CPUTime()
	start = time.Now()
	for i := range agents {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := &results[i]
			r.lat = make([]time.Duration, 0, *n)
			for k := 1; k <= *n; k++ {
				t0 := time.Now()
				_, err := call(ctx, sessions[i], "thought", map[string]any{
					"thought":           fmt.Sprintf("S%d|H|S%d|Agent %d: the latency follows deploy %d; the planner scans users.email.", k, k-1, i, k),
					"nextThoughtNeeded": true,
				})
				if err != nil {
					r.err = err
					return
				}
				r.lat = append(r.lat, time.Since(t0))
				r.starts = append(r.starts, t0.Sub(start))
				r.acked++
			}
		}(i)
	}
	wg.Wait()
	wall = time.Since(start)
	srvCPU, cliCPU = machine.ProcCPU(pid)-srv0, machine.CPUTime()-cli0
	return results, sessions, start, wall, srvCPU, cliCPU
}

// verifyCommits checks with plain git that each agent's session holds one
// commit per acknowledged thought, plus the one that started it.
func verifyCommits(repo string, results []agentResult) {
	bad := 0
	for _, r := range results {
		out, err := exec.Command("git", "--git-dir", repo, "rev-list", "--count", "refs/heads/sessions/"+r.session+"/main").Output()
		if err != nil {
			check(fmt.Errorf("git rev-list of session %s: %v", r.session, err))
		}
		got, _ := strconv.Atoi(strings.TrimSpace(string(out)))
		if got != r.acked+1 {
			fmt.Fprintf(os.Stderr, "httpbench: session %s has %d commits, want %d (acknowledged thoughts + start)\n", r.session, got, r.acked+1)
			bad++
		}
	}
	if bad > 0 {
		check(fmt.Errorf("%d sessions miss acknowledged thoughts", bad))
	}
	fmt.Printf("http: git rev-list: every acknowledged thought of the %d sessions is a commit\n", len(results))
}

// agent is one agent's MCP session, through either client.
type agent interface {
	call(ctx context.Context, op string, args map[string]any) (map[string]any, error)
	close()
}

func connect(ctx context.Context, url, name string) (agent, error) {
	if *client == "raw" {
		a := newRawAgent(url)
		return rawClient{a}, a.connect(ctx, name)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
	t := &mcp.StreamableClientTransport{Endpoint: url}
	if *conns == "own" {
		t.HTTPClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	s, err := c.Connect(ctx, t, nil)
	if err != nil {
		return nil, err
	}
	return sdkClient{s}, nil
}

type sdkClient struct{ s *mcp.ClientSession }

func (c sdkClient) call(ctx context.Context, op string, args map[string]any) (map[string]any, error) {
	return mcpcall.Call(ctx, c.s, op, args)
}

func (c sdkClient) close() { c.s.Close() }

type rawClient struct{ a *rawAgent }

// call decodes the reply only where the benchmark reads it (start_new's
// session id): the SDK's client decodes every reply, but a raw client
// need not, and its cost is what this client leaves out.
func (c rawClient) call(ctx context.Context, op string, args map[string]any) (map[string]any, error) {
	text, err := c.a.call(ctx, op, args)
	if err != nil || op != "start_new" {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return nil, fmt.Errorf("%s: reply %q: %v", op, text, err)
	}
	return out, nil
}

func (c rawClient) close() { c.a.close() }

func call(ctx context.Context, s agent, op string, args map[string]any) (map[string]any, error) {
	return s.call(ctx, op, args)
}

// started holds the processes this run started (the server, agent
// processes) and its scratch folder, so that a failure or a signal does
// not leave them behind.
var started struct {
	sync.Mutex
	cmds []*exec.Cmd
	work string
}

func launch(cmd *exec.Cmd) error {
	started.Lock()
	defer started.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	started.cmds = append(started.cmds, cmd)
	return nil
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpbench:", err)
		started.Lock()
		for _, c := range started.cmds {
			if c.ProcessState == nil {
				c.Process.Kill()
				c.Process.Wait() // before its files are removed
			}
		}
		if started.work != "" {
			os.RemoveAll(started.work)
		}
		started.Unlock()
		os.Exit(1)
	}
}

func decodeJSON(s string, v any) { _ = json.Unmarshal([]byte(s), v) }

func writeLatLog(path string, start time.Time, results []agentResult) {
	f, err := os.Create(path)
	check(err)
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "# clock started at %d ms since the Unix epoch\n", start.UnixMilli())
	for i, r := range results {
		for k := range r.lat {
			fmt.Fprintf(w, "%.3f %d %.3f\n", float64(r.starts[k])/1e6, i, float64(r.lat[k])/1e6)
		}
	}
	check(w.Flush())
	check(f.Close())
}
