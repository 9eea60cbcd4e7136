//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// unit is one workload with the data directories it owns.
type unit interface {
	stats() *unitStats
	setup(ctx context.Context) error
	// round writes, kills at a random moment up to maxDelay into the
	// writing, and returns how many processes the kill took.
	round(ctx context.Context, rng *rand.Rand, maxDelay time.Duration) (kills int, err error)
	// checkRemote checks what must hold after every kill of a push or
	// pull: both repositories sound, and a following run succeeds.
	checkRemote(ctx context.Context) error
}

// noRemote is for the units without a remote.
type noRemote struct{}

func (noRemote) checkRemote(context.Context) error { return nil }

// tokens hands out unique thought tokens for one unit.
type tokens struct {
	prefix string
	n      atomic.Int64
}

func (t *tokens) next() string { return fmt.Sprintf("ck-%s-%d", t.prefix, t.n.Add(1)) }

func randDelay(rng *rand.Rand, max time.Duration) time.Duration {
	return time.Duration(rng.Int64N(int64(max) + 1))
}

// cliUnit runs two `thoughtbox add` loops, one per session, and kills the
// add each loop is running.
type cliUnit struct {
	unitStats
	noRemote
	l   *ledger
	tok tokens
	// est is how long an add takes, learned as the campaign goes: on a
	// loaded machine an add can take longer than -max-delay, and a kill
	// window that short would hardly ever let one finish.
	est time.Duration
}

func (u *cliUnit) setup(ctx context.Context) error {
	u.l = u.addLedger("data")
	u.tok.prefix = u.name
	for i := 0; i < 2; i++ {
		if _, err := u.l.startSession(ctx, fmt.Sprintf("campaign cli %d", i)); err != nil {
			return err
		}
	}
	return nil
}

func (u *cliUnit) round(ctx context.Context, rng *rand.Rand, maxDelay time.Duration) (int, error) {
	var mu sync.Mutex
	stopped := false
	current := make([]*exec.Cmd, len(u.l.sessions))
	var kills atomic.Int64
	var goneErr atomic.Value
	texts := make([][]string, len(u.l.sessions)) // drawn here: rng is not safe for concurrent use
	for i := range texts {
		for j := 0; j < 64; j++ {
			texts[i] = append(texts[i], u.tok.next())
		}
	}
	filler := thoughtText(rng, "")
	var wg sync.WaitGroup
	for i, id := range u.l.sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, token := range texts[i] {
				cmd := exec.Command(u.tool.bin, "add", id, token+filler)
				cmd.Env = childEnv("THOUGHTBOX_DATA_DIR="+u.l.data, "DISABLE_THOUGHT_LOGGING=1")
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				mu.Lock()
				if stopped {
					mu.Unlock()
					return
				}
				u.l.sent(token, id)
				if err := startKillable(cmd); err != nil {
					mu.Unlock()
					u.l.refuse(token, err.Error())
					return
				}
				current[i] = cmd
				mu.Unlock()
				t0 := time.Now()
				err := cmd.Wait()
				mu.Lock()
				current[i] = nil
				if err == nil {
					u.est = (u.est*7 + time.Since(t0)*3) / 10
				}
				mu.Unlock()
				switch {
				case err == nil && strings.Contains(out.String(), "recorded in"):
					u.l.ack(token)
				case wasKilled(cmd):
					kills.Add(1)
					if err := waitGone(cmd); err != nil {
						goneErr.Store(err)
					}
				default:
					u.l.refuse(token, fmt.Sprintf("%v: %s", err, strings.TrimSpace(errb.String())))
				}
			}
		}()
	}
	mu.Lock()
	window := max(maxDelay, 3*u.est)
	mu.Unlock()
	time.Sleep(randDelay(rng, window))
	mu.Lock()
	stopped = true
	for _, c := range current {
		if c != nil {
			kill(c)
		}
	}
	mu.Unlock()
	wg.Wait()
	if err, _ := goneErr.Load().(error); err != nil {
		return int(kills.Load()), err
	}
	return int(kills.Load()), nil
}

// mcpWriter sends thoughts on one connection until told to stop or until
// its server is gone.
func mcpWriter(ctx context.Context, s *mcp.ClientSession, l *ledger, session string, next func() string, filler string, stop *atomic.Bool) {
	for !stop.Load() {
		token := next()
		l.sent(token, session)
		res, err := s.CallTool(ctx, &mcp.CallToolParams{
			Name: "thoughtbox_gateway",
			Arguments: map[string]any{"operation": "thought", "args": map[string]any{
				"thought": token + filler, "nextThoughtNeeded": true,
			}},
		})
		switch {
		case err != nil:
			return // the server was killed: the thought is in flight
		case res.IsError:
			l.refuse(token, resultText(res))
		default:
			l.ack(token)
		}
	}
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func callOK(ctx context.Context, s *mcp.ClientSession, op string, args map[string]any) error {
	res, err := s.CallTool(ctx, &mcp.CallToolParams{
		Name: "thoughtbox_gateway", Arguments: map[string]any{"operation": op, "args": args},
	})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if res.IsError {
		return fmt.Errorf("%s: %s", op, resultText(res))
	}
	return nil
}

// join makes a session the connection's active one, ready for thoughts.
func join(ctx context.Context, s *mcp.ClientSession, session string) error {
	if err := callOK(ctx, s, "load_context", map[string]any{"sessionId": session}); err != nil {
		return err
	}
	return callOK(ctx, s, "cipher", map[string]any{})
}

// closeSoon closes a client connection without waiting more than a few
// seconds for a server that is gone.
func closeSoon(s *mcp.ClientSession) {
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}

// stdioUnit runs two stdio servers on one data directory, each driven on a
// session of its own, and kills both.
type stdioUnit struct {
	unitStats
	noRemote
	l   *ledger
	tok tokens
}

func (u *stdioUnit) setup(ctx context.Context) error {
	u.l = u.addLedger("data")
	u.tok.prefix = u.name
	for i := 0; i < 2; i++ {
		if _, err := u.l.startSession(ctx, fmt.Sprintf("campaign stdio %d", i)); err != nil {
			return err
		}
	}
	return nil
}

func (u *stdioUnit) round(ctx context.Context, rng *rand.Rand, maxDelay time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	type server struct {
		cmd    *exec.Cmd
		s      *mcp.ClientSession
		stderr bytes.Buffer
	}
	servers := make([]*server, len(u.l.sessions))
	defer func() {
		for _, sv := range servers {
			if sv != nil && sv.s != nil {
				killAll(sv.cmd)
				closeSoon(sv.s)
			}
		}
	}()
	for i, id := range u.l.sessions {
		sv := &server{cmd: exec.Command(u.tool.bin, "serve", "--transport", "stdio")}
		servers[i] = sv
		sv.cmd.Env = childEnv("THOUGHTBOX_DATA_DIR="+u.l.data, "DISABLE_THOUGHT_LOGGING=1")
		sv.cmd.Stderr = &sv.stderr
		sv.cmd.SysProcAttr = newGroup()
		client := mcp.NewClient(&mcp.Implementation{Name: "crashcampaign-stdio", Version: "1"}, nil)
		s, err := client.Connect(ctx, &mcp.CommandTransport{Command: sv.cmd}, nil)
		if err != nil {
			return 0, fmt.Errorf("stdio server %d after the last kill: %v\n%s", i, err, sv.stderr.String())
		}
		sv.s = s
		if err := join(ctx, s, id); err != nil {
			return 0, fmt.Errorf("stdio server %d: %v\n%s", i, err, sv.stderr.String())
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	filler := thoughtText(rng, "")
	for i, id := range u.l.sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mcpWriter(ctx, servers[i].s, u.l, id, u.tok.next, filler, &stop)
		}()
	}
	time.Sleep(randDelay(rng, maxDelay))
	stop.Store(true)
	for _, sv := range servers {
		kill(sv.cmd)
	}
	wg.Wait()
	kills := 0
	for i, sv := range servers {
		closeSoon(sv.s)
		servers[i] = nil
		if wasKilled(sv.cmd) {
			kills++
		}
		if err := waitGone(sv.cmd); err != nil {
			return kills, err
		}
	}
	return kills, nil
}

// httpUnit runs one server over Streamable HTTP with several clients, each
// on a session of its own, and kills it.
type httpUnit struct {
	unitStats
	noRemote
	clients int
	l       *ledger
	tok     tokens
}

func (u *httpUnit) setup(ctx context.Context) error {
	u.l = u.addLedger("data")
	u.tok.prefix = u.name
	for i := 0; i < u.clients; i++ {
		if _, err := u.l.startSession(ctx, fmt.Sprintf("campaign http %d", i)); err != nil {
			return err
		}
	}
	return nil
}

var listenRE = regexp.MustCompile(`listening on (http://\S+/mcp)`)

func (u *httpUnit) round(ctx context.Context, rng *rand.Rand, maxDelay time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.Command(u.tool.bin, "serve", "--transport", "http")
	cmd.Env = childEnv("THOUGHTBOX_DATA_DIR="+u.l.data, "DISABLE_THOUGHT_LOGGING=1", "HOST=127.0.0.1", "PORT=0")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return 0, err
	}
	if err := startKillable(cmd); err != nil {
		return 0, err
	}
	var stderr strings.Builder
	addr := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		cmd.Wait()
		close(done)
	}()
	defer func() { killAll(cmd); <-done }()
	var url string
	select {
	case url = <-addr:
	case <-done:
		return 0, fmt.Errorf("http server exited after the last kill:\n%s", stderr.String())
	case <-time.After(time.Minute):
		return 0, fmt.Errorf("http server never said where it listens")
	}
	sessions := make([]*mcp.ClientSession, len(u.l.sessions))
	defer func() {
		for _, s := range sessions {
			if s != nil {
				closeSoon(s)
			}
		}
	}()
	for i, id := range u.l.sessions {
		client := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("crashcampaign-http-%d", i), Version: "1"}, nil)
		s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
		if err != nil {
			return 0, fmt.Errorf("http client %d: %v", i, err)
		}
		sessions[i] = s
		if err := join(ctx, s, id); err != nil {
			return 0, fmt.Errorf("http client %d: %v", i, err)
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	filler := thoughtText(rng, "")
	for i, id := range u.l.sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mcpWriter(ctx, sessions[i], u.l, id, u.tok.next, filler, &stop)
		}()
	}
	time.Sleep(randDelay(rng, maxDelay))
	stop.Store(true)
	kill(cmd)
	<-done
	wg.Wait()
	if wasKilled(cmd) {
		return 1, waitGone(cmd)
	}
	return 0, fmt.Errorf("http server exited by itself:\n%s", stderr.String())
}

// transfer is what push and pull units share: a bare remote, the
// transport, and an estimate of how long an uninterrupted run takes, so
// that kills land inside the run rather than after it.
type transfer struct {
	remote    string
	transport string
	estimate  time.Duration
}

func (t *transfer) env() []string { return []string{"THOUGHTBOX_FILE_TRANSPORT=" + t.transport} }

// killRun starts `thoughtbox <verb>` on a data directory and kills it at a
// random moment within the estimated run time.
func (t *transfer) killRun(tl *tool, u *unitStats, rng *rand.Rand, data, verb string) (int, error) {
	cmd := exec.Command(tl.bin, verb)
	cmd.Env = childEnv(append([]string{"THOUGHTBOX_DATA_DIR=" + data, "DISABLE_THOUGHT_LOGGING=1"}, t.env()...)...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := startKillable(cmd); err != nil {
		return 0, err
	}
	delay := randDelay(rng, t.estimate*6/5)
	timer := time.AfterFunc(delay, func() { kill(cmd) })
	err := cmd.Wait()
	timer.Stop()
	if wasKilled(cmd) {
		return 1, waitGone(cmd)
	}
	u.finishedFirst++
	if err != nil {
		return 0, fmt.Errorf("%s (%s transport) failed before the kill: %v\n%s", verb, t.transport, err, errb.String())
	}
	return 0, nil
}

// followUp runs an uninterrupted push or pull, which must succeed, and
// learns how long one takes.
func (t *transfer) followUp(ctx context.Context, tl *tool, data, verb string) error {
	t0 := time.Now()
	if _, err := tl.tb(ctx, data, t.env(), verb); err != nil {
		return fmt.Errorf("the %s after the kill (%s transport) failed: %w", verb, t.transport, err)
	}
	d := time.Since(t0)
	t.estimate = (t.estimate*7 + d*3) / 10
	return nil
}

func initRemote(ctx context.Context, dir string) (string, error) {
	remote := filepath.Join(dir, "remote.git")
	cmd := exec.CommandContext(ctx, "git", "init", "--bare", "-q", remote)
	cmd.Env = childEnv()
	_, err := runCmd(ctx, cmd)
	return remote, err
}

// addThoughts adds a few thoughts with the CLI, uninterrupted, and returns
// the acknowledged tokens.
func addThoughts(ctx context.Context, l *ledger, tok *tokens, rng *rand.Rand, record *ledger) []string {
	var acked []string
	for _, id := range l.sessions {
		for n := 1 + rng.IntN(3); n > 0; n-- {
			token := tok.next()
			record.sent(token, id)
			if _, err := l.tool.tb(ctx, l.data, nil, "add", id, thoughtText(rng, token)); err != nil {
				record.refuse(token, err.Error())
				continue
			}
			acked = append(acked, token)
		}
	}
	return acked
}

// pushUnit kills `thoughtbox push` to a bare remote.
type pushUnit struct {
	unitStats
	transfer
	l   *ledger
	tok tokens
}

func (u *pushUnit) setup(ctx context.Context) error {
	u.l = u.addLedger("local")
	u.tok.prefix = u.name
	u.estimate = 300 * time.Millisecond
	var err error
	if u.remote, err = initRemote(ctx, u.dir); err != nil {
		return err
	}
	for i := 0; i < 2; i++ {
		if _, err := u.l.startSession(ctx, fmt.Sprintf("campaign %s %d", u.name, i)); err != nil {
			return err
		}
	}
	_, err = u.tool.tb(ctx, u.l.data, nil, "remote", "add", "origin", u.remote)
	return err
}

func (u *pushUnit) round(ctx context.Context, rng *rand.Rand, _ time.Duration) (int, error) {
	for _, tok := range addThoughts(ctx, u.l, &u.tok, rng, u.l) {
		u.l.ack(tok)
	}
	return u.killRun(u.tool, &u.unitStats, rng, u.l.data, "push")
}

func (u *pushUnit) checkRemote(ctx context.Context) error {
	u.remoteChecks++
	for _, repo := range []string{u.remote, u.l.repo()} {
		if err := checkRepo(ctx, repo); err != nil {
			u.count(err)
			return err
		}
	}
	if err := u.followUp(ctx, u.tool, u.l.data, "push"); err != nil {
		return err
	}
	// Everything acknowledged is now on the remote, once.
	for _, id := range u.l.sessions {
		out, err := git(ctx, u.remote, "log", "--format=%s", "refs/heads/sessions/"+id+"/main")
		if err != nil {
			return err
		}
		counts := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			_, rest, _ := strings.Cut(line, ": ")
			tok, _, _ := strings.Cut(rest, " ")
			counts[tok]++
		}
		if _, err := u.l.checkTokens("remote "+u.remote, id, counts, func(tok string) bool { return u.l.acked[tok] }); err != nil {
			u.count(err)
			return err
		}
	}
	return nil
}

// pullUnit kills `thoughtbox pull` from a bare remote that another ledger,
// never killed, keeps pushing new thoughts to.
type pullUnit struct {
	unitStats
	transfer
	src *ledger // writes and pushes; not part of the checks
	l   *ledger // pulls, and is killed doing it
	tok tokens
}

func (u *pullUnit) setup(ctx context.Context) error {
	u.src = newLedger(u.tool, filepath.Join(u.dir, "source"))
	u.l = u.addLedger("local")
	u.tok.prefix = u.name
	u.estimate = 300 * time.Millisecond
	var err error
	if u.remote, err = initRemote(ctx, u.dir); err != nil {
		return err
	}
	for i := 0; i < 2; i++ {
		if _, err := u.src.startSession(ctx, fmt.Sprintf("campaign %s %d", u.name, i)); err != nil {
			return err
		}
	}
	if _, err := u.tool.tb(ctx, u.src.data, nil, "remote", "add", "origin", u.remote); err != nil {
		return err
	}
	if _, err := u.tool.tb(ctx, u.src.data, nil, "push"); err != nil {
		return err
	}
	if _, err := u.tool.tb(ctx, u.l.data, nil, "remote", "add", "origin", u.remote); err != nil {
		return err
	}
	if _, err := u.tool.tb(ctx, u.l.data, u.env(), "pull"); err != nil {
		return err
	}
	u.l.sessions = u.src.sessions
	return nil
}

func (u *pullUnit) round(ctx context.Context, rng *rand.Rand, _ time.Duration) (int, error) {
	published := addThoughts(ctx, u.src, &u.tok, rng, u.l)
	if _, err := u.tool.tb(ctx, u.src.data, nil, "push"); err != nil {
		return 0, fmt.Errorf("the source's push (never killed) failed: %w", err)
	}
	for _, tok := range published {
		u.l.ack(tok) // on the remote now: the next good pull must bring it
	}
	return u.killRun(u.tool, &u.unitStats, rng, u.l.data, "pull")
}

func (u *pullUnit) checkRemote(ctx context.Context) error {
	u.remoteChecks++
	for _, repo := range []string{u.l.repo(), u.remote} {
		if err := checkRepo(ctx, repo); err != nil {
			u.count(err)
			return err
		}
	}
	return u.followUp(ctx, u.tool, u.l.data, "pull")
}
