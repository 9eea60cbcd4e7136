//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
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

	"github.com/thoughtbox/thoughtbox/internal/benchkit/machine"
)

// commandTimeout bounds every command the campaign runs to completion: a
// hang (a lock a dead process still seems to hold) is a failure too, not
// a campaign that never ends.
const commandTimeout = 2 * time.Minute

// tool runs the thoughtbox binary and git.
type tool struct{ bin string }

// childEnv is this process's environment without anything that would
// point a child at another ledger, repository or server.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "THOUGHTBOX_") || strings.HasPrefix(k, "GIT_") ||
			k == "HOST" || k == "PORT" || k == "DISABLE_THOUGHT_LOGGING" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// runCmd runs a command to completion and returns its standard output, or
// an error carrying its standard error.
func runCmd(ctx context.Context, cmd *exec.Cmd) (string, error) {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// tb runs thoughtbox on a data directory.
func (t *tool) tb(ctx context.Context, data string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, t.bin, args...)
	cmd.Env = childEnv(append([]string{"THOUGHTBOX_DATA_DIR=" + data, "DISABLE_THOUGHT_LOGGING=1"}, env...)...)
	return runCmd(ctx, cmd)
}

func git(ctx context.Context, repo string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"--git-dir", repo}, args...)...)
	cmd.Env = childEnv()
	return runCmd(ctx, cmd)
}

// startKillable starts cmd in a process group of its own, so that the
// campaign can tell when every process it started (git-receive-pack under
// a push, say) is gone, and can take them all with -kill-group.
func startKillable(cmd *exec.Cmd) error {
	cmd.SysProcAttr = newGroup()
	return cmd.Start()
}

func newGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killGroupToo is -kill-group: SIGKILL the whole process group rather than
// the thoughtbox process alone.
var killGroupToo bool

// kill is the campaign's kill: SIGKILL to the thoughtbox process, as an
// operator's kill -9 or the OOM killer would send; with -kill-group to
// the programs it started as well, as a crash of the machine would.
func kill(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	if killGroupToo {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
}

// killAll takes the whole group, when the campaign gives up on a round.
func killAll(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// waitGone waits until no live process is left in cmd's group: a git
// program still finishing after its parent was killed would otherwise race
// with the checks. A process that has not gone within a minute is a
// failure of its own.
func waitGone(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	pgid := cmd.Process.Pid
	for deadline := time.Now().Add(time.Minute); ; {
		live := groupMembers(pgid)
		if len(live) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v of killed %s still running after a minute", live, cmd.Args[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupMembers lists the live (not zombie) processes in a process group,
// from /proc.
func groupMembers(pgid int) []string {
	ents, _ := os.ReadDir("/proc")
	var live []string
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name, field 2, is in parentheses and may hold spaces.
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" || f[2] != strconv.Itoa(pgid) {
			continue
		}
		live = append(live, e.Name()+" "+string(data[strings.IndexByte(string(data), '(')+1:i]))
	}
	return live
}

// wasKilled says whether a process that has been waited for died of
// SIGKILL (rather than finishing before the kill reached it).
func wasKilled(cmd *exec.Cmd) bool {
	if cmd.ProcessState == nil {
		return false
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// ledger is one data directory and what the campaign knows was written to
// it: every thought carries a unique token as its first word.
type ledger struct {
	tool     *tool
	data     string
	sessions []string

	mu      sync.Mutex
	session map[string]string // token -> session, every thought sent
	acked   map[string]bool   // acknowledged: must be there exactly once
	refused map[string]string // refused, with the reply: must not be there
	lost    int               // acknowledged thoughts found missing
}

func newLedger(t *tool, data string) *ledger {
	return &ledger{tool: t, data: data, session: map[string]string{}, acked: map[string]bool{}, refused: map[string]string{}}
}

func (l *ledger) repo() string { return filepath.Join(l.data, "projects", "_default.git") }

func (l *ledger) sent(token, session string) {
	l.mu.Lock()
	l.session[token] = session
	l.mu.Unlock()
}

func (l *ledger) ack(token string) {
	l.mu.Lock()
	l.acked[token] = true
	l.mu.Unlock()
}

func (l *ledger) refuse(token, reply string) {
	l.mu.Lock()
	l.refused[token] = reply
	l.mu.Unlock()
}

// startSession starts a session with the CLI and returns its id.
func (l *ledger) startSession(ctx context.Context, title string) (string, error) {
	out, err := l.tool.tb(ctx, l.data, nil, "start", title)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(out)
	if !uuidRE.MatchString(id) {
		return "", fmt.Errorf("thoughtbox start printed %q, want a session id", out)
	}
	l.sessions = append(l.sessions, id)
	return id, nil
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// thoughtText is a thought with the token first and a filler of random
// length, so writes differ in size and a kill lands in writes of every
// shape.
func thoughtText(rng *rand.Rand, token string) string {
	n := rng.IntN(1500)
	var b strings.Builder
	b.WriteString(token)
	b.WriteString(" crash campaign: a thought that must survive the kill of its writer once acknowledged.")
	for b.Len() < n {
		b.WriteString(" filler")
	}
	return b.String()
}

// exportTokens reads a session through thoughtbox and counts each token.
func (l *ledger) exportTokens(ctx context.Context, session string) (map[string]int, error) {
	out, err := l.tool.tb(ctx, l.data, nil, "export", session, "--format", "json")
	if err != nil {
		return nil, err
	}
	var exp struct {
		Nodes []struct {
			Data struct {
				Thought string `json:"thought"`
			} `json:"data"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &exp); err != nil {
		return nil, fmt.Errorf("export %s: %v", session, err)
	}
	counts := map[string]int{}
	for _, n := range exp.Nodes {
		tok, _, _ := strings.Cut(n.Data.Thought, " ")
		counts[tok]++
	}
	return counts, nil
}

// checkTokens compares the tokens found in one session with what was sent
// to it. acked is what must be there; it may be a subset of l.acked (a
// remote only holds what was pushed).
func (l *ledger) checkTokens(where, session string, counts map[string]int, mustHave func(token string) bool) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var problems []string
	have, lost := 0, 0
	for tok, s := range l.session {
		if s != session {
			continue
		}
		c := counts[tok]
		switch {
		case mustHave(tok) && c == 0:
			problems = append(problems, fmt.Sprintf("acknowledged thought %s lost", tok))
			lost++
		case c > 1:
			problems = append(problems, fmt.Sprintf("thought %s present %d times", tok, c))
		case c == 1 && l.refused[tok] != "":
			problems = append(problems, fmt.Sprintf("thought %s present although refused (%s)", tok, l.refused[tok]))
		}
		if mustHave(tok) && c == 1 {
			have++
		}
	}
	for tok, c := range counts {
		if _, ok := l.session[tok]; !ok && strings.HasPrefix(tok, "ck-") {
			problems = append(problems, fmt.Sprintf("thought %s present %d times but never sent to this session", tok, c))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		if len(problems) > 10 {
			problems = append(problems[:10], fmt.Sprintf("... %d problems in all", len(problems)))
		}
		l.lost += lost
		return have, &checkError{kind: lossFailure, err: fmt.Errorf("%s, session %s:\n  %s", where, session, strings.Join(problems, "\n  "))}
	}
	return have, nil
}

// check is the full ledger check: every acknowledged thought there once,
// verify OK, fsck clean, refs sound.
func (l *ledger) check(ctx context.Context) error {
	for _, s := range l.sessions {
		counts, err := l.exportTokens(ctx, s)
		if err != nil {
			return err
		}
		if _, err := l.checkTokens("ledger "+l.data, s, counts, func(tok string) bool { return l.acked[tok] }); err != nil {
			return err
		}
	}
	if out, err := l.tool.tb(ctx, l.data, nil, "verify"); err != nil {
		return &checkError{kind: verifyFailure, err: fmt.Errorf("verify %s: %v\n%s", l.data, err, out)}
	}
	return checkRepo(ctx, l.repo())
}

type failureKind int

const (
	lossFailure failureKind = iota + 1 // lost, duplicated or phantom thoughts
	verifyFailure
	fsckFailure
	refFailure
)

// checkError says which check failed, for the summary's counts.
type checkError struct {
	kind failureKind
	err  error
}

func (e *checkError) Error() string { return e.err.Error() }
func (e *checkError) Unwrap() error { return e.err }

// checkRepo runs git fsck --strict --full on a repository and checks that
// every ref file holds the id of an object that exists.
func checkRepo(ctx context.Context, repo string) error {
	if out, err := git(ctx, repo, "fsck", "--strict", "--full", "--no-progress"); err != nil {
		return &checkError{kind: fsckFailure, err: fmt.Errorf("git fsck --strict --full %s: %v\n%s", repo, err, out)}
	}
	if err := checkRefs(ctx, repo); err != nil {
		return &checkError{kind: refFailure, err: err}
	}
	return nil
}

var objectIDRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// checkRefs reads the ref files and packed-refs of a repository itself: an
// empty or torn ref file is what a write in place leaves after a kill, and
// git only warns about it.
func checkRefs(ctx context.Context, repo string) error {
	ids := map[string]string{} // id -> a ref holding it
	err := filepath.WalkDir(filepath.Join(repo, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".lock") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		v := strings.TrimSpace(string(data))
		if strings.HasPrefix(v, "ref: ") {
			return nil
		}
		if !objectIDRE.MatchString(v) {
			return fmt.Errorf("ref %s holds %q, not an object id", p, data)
		}
		ids[v] = p
		return nil
	})
	if err != nil {
		return err
	}
	if data, err := os.ReadFile(filepath.Join(repo, "packed-refs")); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if line == "" || line[0] == '#' || line[0] == '^' {
				continue
			}
			id, name, _ := strings.Cut(line, " ")
			if !objectIDRE.MatchString(id) {
				return fmt.Errorf("packed-refs of %s: line %q holds no object id", repo, line)
			}
			ids[id] = "packed-refs " + name
		}
	} else if !os.IsNotExist(err) {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	var in strings.Builder
	for id := range ids {
		in.WriteString(id + "\n")
	}
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "--git-dir", repo, "cat-file", "--batch-check")
	cmd.Env = childEnv()
	cmd.Stdin = strings.NewReader(in.String())
	out, err := runCmd(ctx, cmd)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if id, ok := strings.CutSuffix(sc.Text(), " missing"); ok {
			return fmt.Errorf("%s points at %s, which is not in %s", ids[id], id, repo)
		}
	}
	return nil
}

// unitStats is what a unit counts; every unit embeds one.
type unitStats struct {
	name    string
	dir     string
	tool    *tool
	ledgers []*ledger

	rounds         int
	kills          int
	finishedFirst  int // processes that finished before the kill reached them
	ledgerChecks   int
	remoteChecks   int
	remoteFailures int
	failures       map[failureKind]int
	firstRefusal   string
	// teamSettles counts the pull/push passes a team unit's rounds needed
	// to converge, teamBranches the branches the settling pulls made of
	// diverged chains (the servers' own auto-pulls make more, unseen).
	teamSettles, teamBranches int
}

func newBase(t *tool, work, name string) unitStats {
	dir := filepath.Join(work, name)
	os.MkdirAll(dir, 0o755)
	return unitStats{name: name, dir: dir, tool: t, failures: map[failureKind]int{}}
}

func (s *unitStats) stats() *unitStats { return s }

func (s *unitStats) addLedger(sub string) *ledger {
	l := newLedger(s.tool, filepath.Join(s.dir, sub))
	s.ledgers = append(s.ledgers, l)
	return l
}

func (s *unitStats) checkLedgers(ctx context.Context) error {
	for _, l := range s.ledgers {
		s.ledgerChecks++
		if err := l.check(ctx); err != nil {
			s.count(err)
			return err
		}
	}
	return nil
}

func (s *unitStats) count(err error) {
	var ce *checkError
	if errors.As(err, &ce) {
		s.failures[ce.kind]++
	}
}

// totals sums what the unit's ledgers recorded.
func (s *unitStats) totals() (sent, acked, refused, lost int) {
	for _, l := range s.ledgers {
		l.mu.Lock()
		sent += len(l.session)
		acked += len(l.acked)
		refused += len(l.refused)
		lost += l.lost
		if s.firstRefusal == "" {
			for tok, r := range l.refused {
				s.firstRefusal = tok + ": " + r
				break
			}
		}
		l.mu.Unlock()
	}
	return
}

// summary is the campaign's figures.
type summary struct {
	seed      uint64
	start     time.Time
	wall      time.Duration
	cpu0      time.Duration
	cpu       time.Duration
	load      string
	stoppedBy string
	units     []*unitStats
}

func (s *summary) finish() {
	s.wall = time.Since(s.start)
	s.cpu = machine.CPUTime() - s.cpu0
	s.load = machine.LoadAvg()
}

func (s *summary) print(w io.Writer) {
	fmt.Fprintf(w, "\n%-14s %7s %6s %9s %8s %9s %8s %6s %6s %6s %6s\n",
		"unit", "rounds", "kills", "finished", "sent", "acked", "refused", "lost", "fsck", "verify", "refs")
	var tk, ta, tr, tl, tf int
	for _, u := range s.units {
		sent, acked, refused, lost := u.totals()
		fmt.Fprintf(w, "%-14s %7d %6d %9d %8d %9d %8d %6d %6d %6d %6d\n",
			u.name, u.rounds, u.kills, u.finishedFirst, sent, acked, refused, lost,
			u.failures[fsckFailure], u.failures[verifyFailure], u.failures[refFailure])
		tk += u.kills
		ta += acked
		tr += refused
		tl += lost
		tf += u.failures[fsckFailure] + u.failures[verifyFailure] + u.failures[refFailure]
	}
	fmt.Fprintf(w, "total: %d kills, %d acknowledged thoughts, %d lost, %d refused, %d check failures; seed %d\n", tk, ta, tl, tr, tf, s.seed)
	fmt.Fprintf(w, "wall %v, campaign CPU %v (children not counted), load average %s\n",
		s.wall.Round(time.Second), s.cpu.Round(time.Millisecond), s.load)
	if s.stoppedBy != "" {
		fmt.Fprintf(w, "stopped early by %s\n", s.stoppedBy)
	}
	for _, u := range s.units {
		if u.teamSettles > 0 {
			fmt.Fprintf(w, "%s: %d pull/push passes to converge after %d rounds, %d branches made of diverged chains by those pulls, 0 diverged chains left\n",
				u.name, u.teamSettles, u.rounds, u.teamBranches)
		}
	}
	for _, u := range s.units {
		if u.firstRefusal != "" {
			fmt.Fprintf(w, "%s: first refusal: %.300s\n", u.name, u.firstRefusal)
		}
	}
}
