package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

type options struct {
	bin                      string
	servers, agents, n       int
	duration, pace, interval time.Duration
	poll, settle             time.Duration
	remote                   string
	keep                     bool
}

// report is what a run found.
type report struct {
	o                   options
	remoteURL           string
	sessions, thoughts  int
	wall                time.Duration
	delays              []time.Duration
	unmatched           int // thoughts seen before their ack was recorded
	lagging             int // reads that showed fewer thoughts than the listing just before
	settled             time.Duration
	pushFails, pullFail int
	load                string
	failures            []string
	checks              []string
}

func (r *report) pct(p int) time.Duration {
	if len(r.delays) == 0 {
		return 0
	}
	return r.delays[min(len(r.delays)-1, len(r.delays)*p/100)].Round(time.Millisecond)
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "teamsim: %d servers, %d agents, %d thoughts per session, pace %v, auto-push/pull interval %v, remote %s\n",
		r.o.servers, r.o.agents, r.o.n, r.o.pace, r.o.interval, r.remoteURL)
	fmt.Fprintf(w, "teamsim: %d sessions, %d thoughts in %v (%.0f thoughts/s aggregate); load average %s\n",
		r.sessions, r.thoughts, r.wall.Round(time.Second), float64(r.thoughts)/r.wall.Seconds(), r.load)
	if len(r.delays) > 0 {
		fmt.Fprintf(w, "teamsim: propagation delay, ack on one server to visible on another (%d observations): p50 %v, p90 %v, p99 %v, max %v\n",
			len(r.delays), r.pct(50), r.pct(90), r.pct(99), r.delays[len(r.delays)-1].Round(time.Millisecond))
	}
	if r.lagging > 0 || r.unmatched > 0 {
		fmt.Fprintf(w, "teamsim: %d reads showed fewer thoughts than the listing just before; %d thoughts were seen before their ack was recorded\n", r.lagging, r.unmatched)
	}
	fmt.Fprintf(w, "teamsim: every server saw every session whole %v after the agents stopped; server log: %d auto-push and %d auto-pull failures\n",
		r.settled.Round(100*time.Millisecond), r.pushFails, r.pullFail)
	for i, f := range r.failures {
		if i == 5 {
			fmt.Fprintf(w, "teamsim: … and %d more\n", len(r.failures)-5)
			break
		}
		fmt.Fprintln(w, "teamsim: server log:", f)
	}
	for _, c := range r.checks {
		fmt.Fprintln(w, "teamsim: check:", c)
	}
}

// session is one agent's session, as the registry knows it.
type session struct {
	id     string
	server int
	mu     sync.Mutex
	acks   []time.Time // acks[k-1] is when thought k was acknowledged
	closed bool
}

func (s *session) state() (acked int, closed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.acks), s.closed
}

func (s *session) ack(k int) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k < 1 || k > len(s.acks) {
		return time.Time{}, false
	}
	return s.acks[k-1], true
}

type registry struct {
	mu   sync.Mutex
	list []*session
}

func (g *registry) add(s *session) {
	g.mu.Lock()
	g.list = append(g.list, s)
	g.mu.Unlock()
}

func (g *registry) all() []*session {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*session(nil), g.list...)
}

type server struct {
	cmd       *exec.Cmd
	url, repo string
	done      chan struct{}
	mu        sync.Mutex
	pushFails int
	pullFails int
	failures  []string
	logTail   []string
}

func run(o options, progress io.Writer) (*report, error) {
	work, err := os.MkdirTemp("", "teamsim")
	if err != nil {
		return nil, err
	}
	if o.keep {
		fmt.Fprintln(progress, "teamsim: work directory", work)
	} else {
		defer os.RemoveAll(work)
	}
	exe := o.bin
	if exe == "" {
		var err error
		if exe, err = build.Thoughtbox(work); err != nil {
			return nil, err
		}
	}
	bare := filepath.Join(work, "remote", "team.git")
	if out, err := exec.Command("git", "init", "--bare", "-q", bare).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git init: %v\n%s", err, out)
	}
	url := bare
	if o.remote == "daemon" && !haveDaemon() {
		fmt.Fprintln(progress, "teamsim: git daemon is not installed; the servers reach the remote by its path")
		o.remote = "file"
	}
	if o.remote == "daemon" {
		u, stop, err := startDaemon(filepath.Dir(bare))
		if err != nil {
			return nil, err
		}
		defer stop()
		url = u + "/team.git"
	} else if o.remote != "file" {
		return nil, fmt.Errorf("-remote %q: expected daemon or file", o.remote)
	}
	r := &report{o: o, remoteURL: url}

	servers := make([]*server, o.servers)
	defer func() {
		for _, s := range servers {
			if s != nil {
				s.stop()
			}
		}
	}()
	for i := range servers {
		s, err := startServer(exe, filepath.Join(work, fmt.Sprintf("data-%d", i)), url, o.interval)
		if err != nil {
			return nil, err
		}
		servers[i] = s
	}

	ctx := context.Background()
	reg := &registry{}
	// Watchers first: each is an MCP client of its server that reads the
	// other servers' sessions. It writes a short session of its own to
	// reach the stage where read_thoughts is allowed; that session
	// travels like any other.
	var delaysMu sync.Mutex
	seen := make([]map[string]int, o.servers)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var watchWG sync.WaitGroup
	for i, s := range servers {
		c, err := connect(ctx, fmt.Sprintf("teamsim-watcher-%d", i), s.url)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		id, err := startSession(ctx, c, fmt.Sprintf("teamsim watcher on server %d", i))
		if err != nil {
			return nil, err
		}
		ws := &session{id: id, server: i}
		if _, err := call(ctx, c, "thought", map[string]any{"thought": "Watching the other servers' sessions arrive.", "nextThoughtNeeded": false}); err != nil {
			return nil, err
		}
		ws.acks, ws.closed = []time.Time{time.Now()}, true
		reg.add(ws)
		seen[i] = map[string]int{}
		watchWG.Add(1)
		go func(i int, c *mcp.ClientSession) {
			defer watchWG.Done()
			t := time.NewTicker(o.poll)
			defer t.Stop()
			for {
				select {
				case <-watchCtx.Done():
					return
				case <-t.C:
				}
				// One listing says which sessions grew here; only those are
				// read, through read_thoughts (the server's view of the
				// session, which is what an agent there would get), so
				// that the watcher's own calls stay few under load. A
				// thought counts as visible when the listing showed it, if
				// read_thoughts then shows it too; one the listing showed
				// but read_thoughts did not yet (the server's view lagging
				// its store) counts when a later read shows it.
				counts, err := listCounts(watchCtx, c)
				listed := time.Now()
				if err != nil {
					if watchCtx.Err() != nil {
						return
					}
					continue
				}
				for _, x := range reg.all() {
					if x.server == i {
						continue
					}
					acked, closed := x.state()
					delaysMu.Lock()
					have := seen[i][x.id]
					delaysMu.Unlock()
					if closed && have >= acked || counts[x.id] <= have {
						continue
					}
					visible, err := lastThought(watchCtx, c, x.id)
					if err != nil {
						if watchCtx.Err() != nil {
							return
						}
						continue
					}
					now := time.Now()
					delaysMu.Lock()
					if visible < counts[x.id] {
						r.lagging++
					}
					for k := seen[i][x.id] + 1; k <= visible; k++ {
						at, ok := x.ack(k)
						switch {
						case !ok:
							r.unmatched++
						case k <= counts[x.id] && listed.After(at):
							r.delays = append(r.delays, listed.Sub(at))
						default:
							r.delays = append(r.delays, now.Sub(at))
						}
					}
					if visible > seen[i][x.id] {
						seen[i][x.id] = visible
					}
					delaysMu.Unlock()
				}
			}
		}(i, c)
	}

	// The agents.
	start := time.Now()
	deadline := start.Add(o.duration)
	errs := make(chan error, o.agents)
	var agentWG sync.WaitGroup
	for j := range o.agents {
		agentWG.Add(1)
		go func(j int) {
			defer agentWG.Done()
			errs <- agent(ctx, j, j%o.servers, servers[j%o.servers].url, o, deadline, reg)
		}(j)
	}
	agentWG.Wait()
	r.wall = time.Since(start)
	close(errs)
	var agentErr error
	for err := range errs {
		agentErr = errors.Join(agentErr, err)
	}
	r.load = machine.LoadAvg()

	// Settle: wait until every watcher has seen every other server's
	// session whole.
	stopped := time.Now()
	for {
		missing := 0
		delaysMu.Lock()
		for _, x := range reg.all() {
			acked, _ := x.state()
			for i := range servers {
				if i != x.server && seen[i][x.id] < acked {
					missing++
				}
			}
		}
		delaysMu.Unlock()
		if missing == 0 {
			break
		}
		if time.Since(stopped) > o.settle {
			stopWatch()
			watchWG.Wait()
			return r, fmt.Errorf("%d sessions were not seen whole on every server %v after the agents stopped", missing, o.settle)
		}
		time.Sleep(o.poll)
	}
	r.settled = time.Since(stopped)
	stopWatch()
	watchWG.Wait()
	sort.Slice(r.delays, func(a, b int) bool { return r.delays[a] < r.delays[b] })
	for _, x := range reg.all() {
		acked, _ := x.state()
		r.sessions++
		r.thoughts += acked
	}

	// Stop the servers (each flushes, and pushes what is pending), then
	// look at what they left with plain git.
	for _, s := range servers {
		s.stop()
		s.mu.Lock()
		r.pushFails += s.pushFails
		r.pullFail += s.pullFails
		r.failures = append(r.failures, s.failures...)
		s.mu.Unlock()
	}
	if agentErr != nil {
		return r, agentErr
	}
	return r, r.check(servers, bare, reg)
}

// check compares, with plain git, every ledger's session refs and the
// remote's, counts each session's commits on the remote, and runs
// git fsck --strict on the remote.
func (r *report) check(servers []*server, bare string, reg *registry) error {
	refs := func(repo string) (map[string]string, error) {
		out, err := exec.Command("git", "--git-dir", repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/sessions/").Output()
		if err != nil {
			return nil, fmt.Errorf("git for-each-ref in %s: %v", repo, err)
		}
		m := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if name, h, ok := strings.Cut(line, " "); ok {
				m[name] = h
			}
		}
		return m, nil
	}
	want, err := refs(bare)
	if err != nil {
		return err
	}
	for _, x := range reg.all() {
		acked, _ := x.state()
		ref := "refs/heads/sessions/" + x.id + "/main"
		if want[ref] == "" {
			return fmt.Errorf("the remote lacks session %s", x.id)
		}
		out, err := exec.Command("git", "--git-dir", bare, "rev-list", "--count", ref).Output()
		if err != nil {
			return fmt.Errorf("git rev-list %s: %v", ref, err)
		}
		if n, _ := strconv.Atoi(strings.TrimSpace(string(out))); n != acked+1 {
			return fmt.Errorf("session %s has %d commits on the remote, want %d (its acknowledged thoughts and its start)", x.id, n, acked+1)
		}
	}
	r.checks = append(r.checks, fmt.Sprintf("the remote holds all %d sessions, each with one commit per acknowledged thought (git rev-list --count)", len(reg.all())))
	for i, s := range servers {
		got, err := refs(s.repo)
		if err != nil {
			return err
		}
		if len(got) != len(want) {
			return fmt.Errorf("server %d's ledger has %d session refs, the remote %d", i, len(got), len(want))
		}
		for name, h := range want {
			if got[name] != h {
				return fmt.Errorf("server %d's ledger has %s at %q, the remote at %s", i, name, got[name], h)
			}
		}
	}
	r.checks = append(r.checks, fmt.Sprintf("all %d ledgers hold the same %d session refs at the same commits as the remote (git for-each-ref)", len(servers), len(want)))
	if out, err := exec.Command("git", "--git-dir", bare, "fsck", "--strict", "--no-progress").CombinedOutput(); err != nil {
		return fmt.Errorf("git fsck --strict of the remote: %v\n%s", err, out)
	}
	r.checks = append(r.checks, "git fsck --strict of the remote: clean")
	return nil
}

// agent writes sessions of o.n thoughts on one server until the deadline.
func agent(ctx context.Context, j, srv int, url string, o options, deadline time.Time, reg *registry) error {
	c, err := connect(ctx, fmt.Sprintf("teamsim-agent-%d", j), url)
	if err != nil {
		return err
	}
	defer c.Close()
	for m := 0; time.Now().Before(deadline); m++ {
		id, err := startSession(ctx, c, fmt.Sprintf("teamsim agent %d, session %d", j, m))
		if err != nil {
			return fmt.Errorf("agent %d: %w", j, err)
		}
		s := &session{id: id, server: srv}
		reg.add(s)
		for k := 1; k <= o.n; k++ {
			time.Sleep(o.pace)
			_, err := call(ctx, c, "thought", map[string]any{
				"thought":           fmt.Sprintf("Agent %d, session %d, step %d: the cache misses follow deploy %d.", j, m, k, k),
				"nextThoughtNeeded": k < o.n,
			})
			if err != nil {
				return fmt.Errorf("agent %d, session %s, thought %d: %w", j, id, k, err)
			}
			s.mu.Lock()
			s.acks = append(s.acks, time.Now())
			s.closed = k == o.n
			s.mu.Unlock()
		}
	}
	return nil
}

func connect(ctx context.Context, name, url string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: connect to %s: %w", name, url, err)
	}
	return s, nil
}

// startSession starts a session and reaches the thought stage.
func startSession(ctx context.Context, c *mcp.ClientSession, title string) (string, error) {
	r, err := call(ctx, c, "start_new", map[string]any{"sessionTitle": title})
	if err != nil {
		return "", err
	}
	id, _ := r["sessionId"].(string)
	if id == "" {
		return "", fmt.Errorf("start_new answered no sessionId: %v", r)
	}
	if _, err := call(ctx, c, "cipher", nil); err != nil {
		return "", err
	}
	return id, nil
}

// lastThought is the number of the last thought of a session this server
// shows (0 while it has no thought or the session is not there yet).
func lastThought(ctx context.Context, c *mcp.ClientSession, id string) (int, error) {
	r, err := call(ctx, c, "read_thoughts", map[string]any{"sessionId": id, "last": 1})
	if err != nil {
		var nf notFound
		if errors.As(err, &nf) {
			return 0, nil
		}
		return 0, err
	}
	ts, _ := r["thoughts"].([]any)
	if len(ts) == 0 {
		return 0, nil
	}
	t, _ := ts[0].(map[string]any)
	n, _ := t["thoughtNumber"].(float64)
	return int(n), nil
}

// listCounts pages through session list and returns each session's
// thought count.
func listCounts(ctx context.Context, c *mcp.ClientSession) (map[string]int, error) {
	counts := map[string]int{}
	for offset := 0; ; offset += 100 {
		r, err := call(ctx, c, "session", map[string]any{"operation": "list", "limit": 100, "offset": offset})
		if err != nil {
			return nil, err
		}
		list, _ := r["sessions"].([]any)
		for _, x := range list {
			m, _ := x.(map[string]any)
			id, _ := m["id"].(string)
			n, _ := m["thoughtCount"].(float64)
			counts[id] = int(n)
		}
		if more, _ := r["hasMore"].(bool); !more {
			return counts, nil
		}
	}
}

type notFound struct{ msg string }

func (e notFound) Error() string { return e.msg }

func call(ctx context.Context, s *mcp.ClientSession, op string, args map[string]any) (map[string]any, error) {
	out, err := mcpcall.Call(ctx, s, op, args)
	var te *mcpcall.ToolError
	if errors.As(err, &te) && strings.Contains(te.Text, "SESSION_NOT_FOUND") {
		return nil, notFound{te.Text}
	}
	return out, err
}

var listening = regexp.MustCompile(`http://[^ ]+/mcp`)

// startServer runs thoughtbox serve over Streamable HTTP on a free
// loopback port, pushing to and pulling from url, and returns once it
// listens.
func startServer(exe, dir, url string, interval time.Duration) (*server, error) {
	cmd := exec.Command(exe, "serve")
	cmd.Env = append(os.Environ(), "THOUGHTBOX_DATA_DIR="+dir, "HOST=127.0.0.1", "PORT=0", "DISABLE_THOUGHT_LOGGING=1",
		"THOUGHTBOX_AUTO_PUSH="+url, "THOUGHTBOX_AUTO_PUSH_INTERVAL="+interval.String(),
		"THOUGHTBOX_AUTO_PULL="+url, "THOUGHTBOX_AUTO_PULL_INTERVAL="+interval.String())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, repo: filepath.Join(dir, "projects", "_default.git"), done: make(chan struct{})}
	logFile, err := os.Create(dir + ".log")
	if err != nil {
		cmd.Process.Kill()
		return nil, err
	}
	urls := make(chan string, 1)
	go func() {
		defer close(s.done)
		defer logFile.Close()
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logFile, line)
			if u := listening.FindString(line); u != "" && !sent {
				urls <- u
				sent = true
				continue
			}
			s.mu.Lock()
			switch {
			case strings.Contains(line, "auto-push to") && (strings.Contains(line, "failed") || strings.Contains(line, "rejected")):
				s.pushFails++
				s.failures = append(s.failures, line)
			case strings.Contains(line, "auto-pull from") && strings.Contains(line, "failed"):
				s.pullFails++
				s.failures = append(s.failures, line)
			}
			s.logTail = append(s.logTail, line)
			if len(s.logTail) > 20 {
				s.logTail = s.logTail[1:]
			}
			s.mu.Unlock()
		}
		cmd.Wait()
	}()
	select {
	case u := <-urls:
		s.url = u
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("thoughtbox serve exited before listening: %s", strings.Join(s.logTail, "\n"))
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		return nil, errors.New("thoughtbox serve did not say where it listens within a minute")
	}
}

// stop interrupts the server and waits for it to exit (it flushes and
// finishes its pushes first).
func (s *server) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(time.Minute):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// startDaemon serves dir with git daemon on a free loopback port, pushes
// allowed, and returns its git:// URL once it accepts connections.
func startDaemon(dir string) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
		"--base-path="+dir, "--listen=127.0.0.1", "--port="+strconv.Itoa(port), dir)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("git daemon: %v (run with -remote file to use the path instead)", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for start := time.Now(); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "git://" + addr, stop, nil
		}
		select {
		case <-exited:
			return "", nil, fmt.Errorf("git daemon exited: %s (run with -remote file to use the path instead)", out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Since(start) > 30*time.Second {
			stop()
			return "", nil, errors.New("git daemon did not accept connections within 30 s")
		}
	}
}

// haveDaemon reports whether git daemon is installed (some distributions
// package it apart from git).
func haveDaemon() bool {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(strings.TrimSpace(string(out)), "git-daemon"))
	return err == nil
}
