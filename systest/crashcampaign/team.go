//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// teamUnit is the team setting under kills: two servers, each on a ledger
// of its own, write the same sessions and share them through one bare
// remote with auto-pull and auto-push. Both servers are killed at a random
// moment; then each ledger pulls and pushes, uninterrupted, until both and
// the remote hold the same refs. After every round every acknowledged
// thought must be in both ledgers and on the remote exactly once (on the
// main chain or on a branch a pull made of a diverged chain), and no
// diverged chain may be left.
type teamUnit struct {
	unitStats
	remote  string
	a, b    *ledger // b shares a's record of what was written (see setup)
	clients int
	window  time.Duration
	cycles  int // kill cycles per round (see round)
	tok     tokens
}

// teamSyncInterval is the servers' auto-pull and auto-push interval: the
// least the configuration allows, so that syncs happen within a round.
const teamSyncInterval = "1s"

func (u *teamUnit) setup(ctx context.Context) error {
	u.a = u.addLedger("alpha")
	u.tok.prefix = u.name
	var err error
	if u.remote, err = initRemote(ctx, u.dir); err != nil {
		return err
	}
	for i := 0; i < u.clients; i++ {
		id, err := u.a.startSession(ctx, fmt.Sprintf("campaign team %d", i))
		if err != nil {
			return err
		}
		// A first thought both sides share: a chain a pull makes a branch
		// forks from a thought.
		token := u.tok.next()
		u.a.sent(token, id)
		if _, err := u.tool.tb(ctx, u.a.data, nil, "add", id, token+" the first thought, shared by both servers"); err != nil {
			return err
		}
		u.a.ack(token)
	}
	if _, err := u.tool.tb(ctx, u.a.data, nil, "remote", "add", "origin", u.remote); err != nil {
		return err
	}
	if _, err := u.tool.tb(ctx, u.a.data, nil, "push"); err != nil {
		return err
	}
	// The second ledger is checked like the first against the same
	// record: every acknowledged thought must reach both. It is not in
	// u.ledgers, so the summary counts each thought once.
	u.b = newLedger(u.tool, filepath.Join(u.dir, "beta"))
	u.b.sessions, u.b.session, u.b.acked, u.b.refused = u.a.sessions, u.a.session, u.a.acked, u.a.refused
	if _, err := u.tool.tb(ctx, u.b.data, nil, "remote", "add", "origin", u.remote); err != nil {
		return err
	}
	_, err = u.tool.tb(ctx, u.b.data, nil, "pull")
	return err
}

// teamServer is one `thoughtbox serve` over HTTP with its clients.
type teamServer struct {
	cmd      *exec.Cmd
	done     chan struct{}
	stderr   strings.Builder
	sessions []*mcp.ClientSession
}

func (u *teamUnit) start(ctx context.Context, l *ledger, side string) (*teamServer, error) {
	sv := &teamServer{cmd: exec.Command(u.tool.bin, "serve", "--transport", "http"), done: make(chan struct{})}
	sv.cmd.Env = childEnv("THOUGHTBOX_DATA_DIR="+l.data, "DISABLE_THOUGHT_LOGGING=1", "HOST=127.0.0.1", "PORT=0",
		"THOUGHTBOX_AUTO_PULL=origin", "THOUGHTBOX_AUTO_PULL_INTERVAL="+teamSyncInterval,
		"THOUGHTBOX_AUTO_PUSH=origin", "THOUGHTBOX_AUTO_PUSH_INTERVAL="+teamSyncInterval)
	pipe, err := sv.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := startKillable(sv.cmd); err != nil {
		return nil, err
	}
	addr := make(chan string, 1)
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			mu.Lock()
			sv.stderr.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		sv.cmd.Wait()
		close(sv.done)
	}()
	var url string
	select {
	case url = <-addr:
	case <-sv.done:
		return sv, fmt.Errorf("%s server exited after the last kill:\n%s", side, sv.stderr.String())
	case <-time.After(time.Minute):
		return sv, fmt.Errorf("%s server never said where it listens", side)
	}
	for i, id := range l.sessions {
		client := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("campaign-%s-%d", side, i), Version: "1"}, nil)
		s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
		if err != nil {
			return sv, fmt.Errorf("%s client %d: %v", side, i, err)
		}
		sv.sessions = append(sv.sessions, s)
		if err := join(ctx, s, id); err != nil {
			return sv, fmt.Errorf("%s client %d: %v", side, i, err)
		}
	}
	return sv, nil
}

func (sv *teamServer) stop() {
	if sv == nil {
		return
	}
	killAll(sv.cmd)
	<-sv.done
	for _, s := range sv.sessions {
		closeSoon(s)
	}
}

// round runs u.cycles kill cycles — both servers started, writing, killed
// together — and leaves the settling and the checks to checkRemote: the
// servers' own auto-pulls and auto-pushes meet what the last cycle's kill
// left behind.
func (u *teamUnit) round(ctx context.Context, rng *rand.Rand, _ time.Duration) (int, error) {
	kills := 0
	for c := 0; c < u.cycles; c++ {
		k, err := u.cycle(ctx, rng)
		kills += k
		if err != nil {
			return kills, err
		}
	}
	return kills, nil
}

func (u *teamUnit) cycle(ctx context.Context, rng *rand.Rand) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	servers := make([]*teamServer, 2)
	defer func() {
		for _, sv := range servers {
			sv.stop()
		}
	}()
	for i, side := range []struct {
		l    *ledger
		name string
	}{{u.a, "alpha"}, {u.b, "beta"}} {
		sv, err := u.start(ctx, side.l, side.name)
		servers[i] = sv
		if err != nil {
			return 0, err
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	filler := thoughtText(rng, "")
	for _, sv := range servers {
		for i, id := range u.a.sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mcpWriter(ctx, sv.sessions[i], u.a, id, u.tok.next, filler, &stop)
			}()
		}
	}
	// Long enough for auto-pull and auto-push to run while both servers
	// write, so that kills land inside them too.
	time.Sleep(time.Second + randDelay(rng, u.window))
	stop.Store(true)
	for _, sv := range servers {
		kill(sv.cmd)
	}
	kills := 0
	for _, sv := range servers {
		<-sv.done
	}
	wg.Wait()
	for i, sv := range servers {
		for _, s := range sv.sessions {
			closeSoon(s)
		}
		servers[i] = nil
		if wasKilled(sv.cmd) {
			kills++
		} else {
			return kills, fmt.Errorf("a team server exited by itself:\n%s", sv.stderr.String())
		}
		if err := waitGone(sv.cmd); err != nil {
			return kills, err
		}
	}
	return kills, nil
}

// checkRemote settles the two ledgers through the remote with plain pulls
// and pushes, then checks that they converged: the same session refs in
// both and on the remote, no chain kept aside as diverged, and every
// acknowledged thought in each, once.
func (u *teamUnit) checkRemote(ctx context.Context) error {
	u.remoteChecks++
	for _, repo := range []string{u.remote, u.a.repo(), u.b.repo()} {
		if err := checkRepo(ctx, repo); err != nil {
			u.count(err)
			return err
		}
	}
	converged := false
	for pass := 0; pass < 4 && !converged; pass++ {
		u.teamSettles++
		for _, step := range []struct {
			l    *ledger
			verb string
		}{{u.a, "pull"}, {u.a, "push"}, {u.b, "pull"}, {u.b, "push"}, {u.a, "pull"}} {
			out, err := u.tool.tb(ctx, step.l.data, nil, step.verb, "--format", "json")
			if err != nil {
				return fmt.Errorf("settling: %s %s: %w", step.verb, step.l.data, err)
			}
			if step.verb == "pull" {
				var res struct {
					Branched []json.RawMessage `json:"branched"`
				}
				if json.Unmarshal([]byte(out), &res) == nil {
					u.teamBranches += len(res.Branched)
				}
			}
		}
		same, err := u.sameRefs(ctx)
		if err != nil {
			return err
		}
		converged = same
	}
	for _, l := range []*ledger{u.a, u.b} {
		out, err := git(ctx, l.repo(), "for-each-ref", "--format=%(refname)", "refs/thoughtbox/diverged/")
		if err != nil {
			return err
		}
		if strings.TrimSpace(out) != "" {
			return &checkError{kind: lossFailure, err: fmt.Errorf("%s keeps diverged chains after settling:\n%s", l.data, out)}
		}
	}
	if !converged {
		return &checkError{kind: lossFailure, err: fmt.Errorf("the two ledgers and the remote hold different refs after %d pull/push passes", u.teamSettles)}
	}
	for _, id := range u.a.sessions {
		counts, err := remoteTokens(ctx, u.remote, id)
		if err != nil {
			return err
		}
		if _, err := u.a.checkTokens("remote "+u.remote, id, counts, func(tok string) bool { return u.a.acked[tok] }); err != nil {
			u.count(err)
			return err
		}
	}
	u.ledgerChecks++
	if err := u.b.check(ctx); err != nil {
		u.count(err)
		return err
	}
	return nil
}

// sameRefs says whether both ledgers and the remote hold the same session
// refs.
func (u *teamUnit) sameRefs(ctx context.Context) (bool, error) {
	var first string
	for i, repo := range []string{u.remote, u.a.repo(), u.b.repo()} {
		out, err := git(ctx, repo, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/sessions/")
		if err != nil {
			return false, err
		}
		if i == 0 {
			first = out
		} else if out != first {
			return false, nil
		}
	}
	return true, nil
}

// remoteTokens counts the tokens of a session's thoughts on the remote:
// the subjects of the commits of its main chain and every branch, each
// thought once (a commit's subject is "Thought N: <token> …"; a critique's
// is not a thought).
func remoteTokens(ctx context.Context, remote, session string) (map[string]int, error) {
	refs, err := git(ctx, remote, "for-each-ref", "--format=%(refname)", "refs/heads/sessions/"+session+"/")
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	seen := map[string]bool{}
	for _, ref := range strings.Fields(refs) {
		out, err := git(ctx, remote, "log", "--format=%H %s", ref)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			h, subject, _ := strings.Cut(line, " ")
			if seen[h] || !strings.HasPrefix(subject, "Thought ") {
				continue
			}
			seen[h] = true
			_, rest, _ := strings.Cut(subject, ": ")
			tok, _, _ := strings.Cut(rest, " ")
			counts[tok]++
		}
	}
	return counts, nil
}
