package gitstore_test

// Multi-writer safety (issue 2, "Durability and concurrency"):
//
//   - TestMultiProcessSharedSession: several processes append to one session
//     (and each to its own) on one repository; no acknowledged thought is
//     lost, duplicated or overwritten, and plain git agrees.
//   - TestConcurrentWriters: goroutines of one process write many sessions,
//     and one session through one Ledger and through two Ledgers over the
//     same Store (the second exercises ErrConflict and renumbering). Run it
//     with -race.
//
// This file also holds the writer process that the crash test
// (crash_test.go) and the multi-process test start: the test binary
// re-executed with THOUGHTBOX_TEST_WRITER=1, which runs TestWriterProcess
// only. The writer reports each acknowledged thought on stdout, one line per
// thought, written with a single write(2) so that a SIGKILL never leaves
// half a line:
//
//	ready                       (the store is open)
//	session <sessionId>
//	writing                     (every session is loaded or started)
//	ack <sessionId> <chain> <number> <sha256 of the text> <kind> <writer>
//	conflict <sessionId>        (AddThought gave up after its retries; retried)
//	done

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// ---------------------------------------------------------------------------
// The writer process.

const writerEnv = "THOUGHTBOX_TEST_WRITER"

// writerConfig is passed to a writer process in its environment.
type writerConfig struct {
	Repo     string        // TBW_REPO: the bare repository
	Flush    time.Duration // TBW_FLUSH: gitstore.Options.FlushInterval
	Name     string        // TBW_NAME: names the writer in its thoughts and acks
	Seed     uint64        // TBW_SEED
	Sessions []string      // TBW_SESSIONS: written at random; created when missing
	Shared   string        // TBW_SHARED: written with weight 2 (multi-process test)
	Mix      bool          // TBW_MIX: branches and revisions too, not only main thoughts
	Max      int           // TBW_MAX: thoughts to write, then close cleanly
	Deadline time.Duration // TBW_DEADLINE: stop early after this long
}

func (c writerConfig) env() []string {
	mix := "0"
	if c.Mix {
		mix = "1"
	}
	return []string{
		writerEnv + "=1",
		"TBW_REPO=" + c.Repo,
		"TBW_FLUSH=" + c.Flush.String(),
		"TBW_NAME=" + c.Name,
		"TBW_SEED=" + strconv.FormatUint(c.Seed, 10),
		"TBW_SESSIONS=" + strings.Join(c.Sessions, ","),
		"TBW_SHARED=" + c.Shared,
		"TBW_MIX=" + mix,
		"TBW_MAX=" + strconv.Itoa(c.Max),
		"TBW_DEADLINE=" + c.Deadline.String(),
	}
}

func writerConfigFromEnv() (writerConfig, error) {
	var c writerConfig
	var err error
	c.Repo = os.Getenv("TBW_REPO")
	c.Name = os.Getenv("TBW_NAME")
	if c.Flush, err = time.ParseDuration(os.Getenv("TBW_FLUSH")); err != nil {
		return c, err
	}
	if c.Seed, err = strconv.ParseUint(os.Getenv("TBW_SEED"), 10, 64); err != nil {
		return c, err
	}
	if s := os.Getenv("TBW_SESSIONS"); s != "" {
		c.Sessions = strings.Split(s, ",")
	}
	c.Shared = os.Getenv("TBW_SHARED")
	c.Mix = os.Getenv("TBW_MIX") == "1"
	if c.Max, err = strconv.Atoi(os.Getenv("TBW_MAX")); err != nil {
		return c, err
	}
	if c.Deadline, err = time.ParseDuration(os.Getenv("TBW_DEADLINE")); err != nil {
		return c, err
	}
	if c.Repo == "" || (len(c.Sessions) == 0 && c.Shared == "") {
		return c, errors.New("TBW_REPO and TBW_SESSIONS or TBW_SHARED are required")
	}
	return c, nil
}

// TestWriterProcess is not a test of its own: it is the body of the writer
// processes that the crash and multi-process tests start.
func TestWriterProcess(t *testing.T) {
	if os.Getenv(writerEnv) != "1" {
		t.Skip("helper process for the crash and multi-process tests; runs only when they start it")
	}
	cfg, err := writerConfigFromEnv()
	if err == nil {
		err = runWriter(cfg)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "writer %s: %v\n", cfg.Name, err)
		os.Exit(3)
	}
}

// say writes one whole line to stdout with one write(2): os.Stdout is
// unbuffered, and a pipe write under PIPE_BUF bytes is atomic.
func say(format string, args ...any) {
	if _, err := os.Stdout.WriteString(fmt.Sprintf(format, args...) + "\n"); err != nil {
		fmt.Fprintf(os.Stderr, "writer: stdout: %v\n", err)
		os.Exit(4)
	}
}

var writerAuthor = ledger.Author{Name: "durability-test 1.0"}

// writerSession is what a writer knows of a session it writes.
type writerSession struct {
	id       string
	mainMax  int            // highest main-chain number (they run 1..mainMax)
	branches map[string]int // branch id -> the main thought it forks from
	order    []string       // branch ids, in creation order
}

func runWriter(cfg writerConfig) error {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x7468_6f75_6768_74))
	s, err := gitstore.Open(cfg.Repo, gitstore.Options{FlushInterval: cfg.Flush})
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	say("ready")
	var nextID string
	l := ledger.New(s, ledger.Options{NewID: func() string { return nextID }})

	var pool []*writerSession // Shared appears twice: written twice as often
	byID := map[string]*writerSession{}
	for _, id := range append(slices.Clone(cfg.Sessions), cfg.Shared) {
		if id == "" || byID[id] != nil {
			continue
		}
		v, err := l.Load(ctx, id)
		if errors.Is(err, ledger.ErrSessionNotFound) {
			nextID = id
			if _, err = l.StartSession(ctx, ledger.CreateSessionParams{Title: "Durability test " + id, Tags: []string{"test"}}, writerAuthor); err != nil {
				return fmt.Errorf("start session %s: %w", id, err)
			}
			v, err = l.View(ctx, id)
		}
		if err != nil {
			return fmt.Errorf("load session %s: %w", id, err)
		}
		ws := &writerSession{id: id, branches: map[string]int{}}
		for _, n := range v.Graph.MainChain() {
			ws.mainMax = max(ws.mainMax, n.Data.ThoughtNumber)
		}
		for _, b := range v.Graph.Branches() {
			ws.branches[string(b.ID)] = b.FromThought
			ws.order = append(ws.order, string(b.ID))
		}
		byID[id] = ws
		pool = append(pool, ws)
		if id == cfg.Shared {
			pool = append(pool, ws)
		}
		say("session %s", id)
	}

	say("writing")
	start := time.Now()
	for i := 0; i < cfg.Max && time.Since(start) < cfg.Deadline; i++ {
		ws := pool[rng.IntN(len(pool))]
		in, kind := writerInput(rng, cfg, ws, i)
		var res *ledger.AddResult
		for attempt := 0; ; attempt++ {
			res, err = l.AddThought(ctx, ws.id, in, writerAuthor)
			if !errors.Is(err, ledger.ErrConflict) || attempt == 50 {
				break
			}
			// The ledger gives up after a few lost races and says so; the
			// thought was not stored, so trying again is safe.
			say("conflict %s", ws.id)
		}
		if err != nil {
			return fmt.Errorf("thought %d on %s: %w", i, ws.id, err)
		}
		if res.Thought.Thought != in.Thought {
			return fmt.Errorf("thought %d on %s: stored text differs from the input", i, ws.id)
		}
		chain := "main"
		if in.BranchID != "" {
			chain = in.BranchID
			if _, ok := ws.branches[chain]; !ok {
				ws.branches[chain] = *in.BranchFromThought
				ws.order = append(ws.order, chain)
			}
		} else {
			ws.mainMax = max(ws.mainMax, res.Thought.ThoughtNumber)
		}
		say("ack %s %s %d %s %s %s", ws.id, chain, res.Thought.ThoughtNumber, textSum(in.Thought), kind, cfg.Name)
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	say("done")
	return nil
}

// writerInput makes the next thought: mostly auto-numbered main-chain
// thoughts; with cfg.Mix also branches (new and continued) and revisions.
func writerInput(rng *rand.Rand, cfg writerConfig, ws *writerSession, i int) (ledger.ThoughtInput, string) {
	in := ledger.ThoughtInput{NextThoughtNeeded: rng.IntN(20) != 0}
	kind := "main"
	if cfg.Mix && ws.mainMax > 0 {
		switch p := rng.IntN(100); {
		case p < 12 && len(ws.order) > 0:
			kind = "branch"
			b := ws.order[rng.IntN(len(ws.order))]
			in.BranchID, in.BranchFromThought = b, ptr(ws.branches[b])
		case p < 18:
			kind = "branch"
			in.BranchID = fmt.Sprintf("%s-b%d", strings.ToLower(cfg.Name), i)
			in.BranchFromThought = ptr(1 + rng.IntN(ws.mainMax))
		case p < 28:
			kind = "rev"
			in.IsRevision, in.RevisesThought = true, ptr(1+rng.IntN(ws.mainMax))
		}
	}
	in.Thought = thoughtText(rng, fmt.Sprintf("%s thought %d on %s (%s)", cfg.Name, i, ws.id, kind))
	return in, kind
}

var fillerWords = strings.Fields(`the cache misses because the key includes the request id so every
lookup is cold; check the session middleware, the token refresh, the retry loop and the
connection pool before blaming redis; measure first, then change one thing at a time`)

// thoughtText is head followed by random words: usually short, sometimes
// over 2 KB (compressed pack entries), sometimes several lines.
func thoughtText(rng *rand.Rand, head string) string {
	var b strings.Builder
	b.WriteString(head)
	n := rng.IntN(40)
	if rng.IntN(10) == 0 {
		n = 300 + rng.IntN(500)
	}
	for range n {
		if rng.IntN(15) == 0 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(fillerWords[rng.IntN(len(fillerWords))])
	}
	return b.String()
}

func ptr(n int) *int { return &n }

func textSum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// ---------------------------------------------------------------------------
// Starting writers and reading their acks.

// ack is one thought a writer was told is stored.
type ack struct {
	session, chain string
	num            int
	sum, kind      string
	writer         string
}

type ackKey struct {
	session, chain string
	num            int
}

func (a ack) key() ackKey { return ackKey{a.session, a.chain, a.num} }

func (a ack) String() string {
	return fmt.Sprintf("%s %s/%d (%s by %s, sha256 %.12s)", a.session, a.chain, a.num, a.kind, a.writer, a.sum)
}

func parseAck(line string) (ack, error) {
	f := strings.Fields(line)
	if len(f) != 7 || f[0] != "ack" {
		return ack{}, fmt.Errorf("malformed ack %q", line)
	}
	n, err := strconv.Atoi(f[3])
	if err != nil {
		return ack{}, fmt.Errorf("malformed ack %q", line)
	}
	return ack{session: f[1], chain: f[2], num: n, sum: f[4], kind: f[5], writer: f[6]}, nil
}

// writerProc is a running writer process.
type writerProc struct {
	name   string
	cmd    *exec.Cmd
	stderr bytes.Buffer
	eof    chan struct{} // closed when stdout reaches EOF

	mu    sync.Mutex
	lines []string
}

// startWriter re-executes the test binary as a writer.
func startWriter(t *testing.T, cfg writerConfig) *writerProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestWriterProcess$", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), cfg.env()...)
	w := &writerProc{name: cfg.Name, cmd: cmd, eof: make(chan struct{})}
	cmd.Stderr = &w.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.eof)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			w.mu.Lock()
			w.lines = append(w.lines, line)
			w.mu.Unlock()
		}
	}()
	return w
}

// kill sends SIGKILL and reaps the process; it reports whether the process
// had already exited by itself.
func (w *writerProc) kill() (exitedEarly bool) {
	select {
	case <-w.eof:
		exitedEarly = true
	default:
	}
	_ = w.cmd.Process.Kill()
	<-w.eof
	_ = w.cmd.Wait()
	return exitedEarly
}

// waitFor waits until the writer has printed n lines starting with prefix,
// or exited, or timeout passed; it reports whether the lines came.
func (w *writerProc) waitFor(prefix string, n int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for w.count(prefix) < n {
		select {
		case <-w.eof:
			return w.count(prefix) >= n
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// wait waits for a writer to finish by itself, up to timeout (then kills it).
func (w *writerProc) wait(timeout time.Duration) error {
	select {
	case <-w.eof:
	case <-time.After(timeout):
		w.kill()
		return fmt.Errorf("writer %s did not finish within %v", w.name, timeout)
	}
	return w.cmd.Wait()
}

// output is everything the writer printed that is not an ack, and its stderr.
func (w *writerProc) output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, l := range w.lines {
		if !strings.HasPrefix(l, "ack ") {
			b.WriteString(l + "\n")
		}
	}
	return b.String() + w.stderr.String()
}

func (w *writerProc) acks(t *testing.T) []ack {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []ack
	for _, l := range w.lines {
		if strings.HasPrefix(l, "ack ") {
			a, err := parseAck(l)
			if err != nil {
				t.Fatalf("writer %s: %v", w.name, err)
			}
			out = append(out, a)
		}
	}
	return out
}

func (w *writerProc) count(prefix string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, l := range w.lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// raced reports a data race the race-enabled writer printed.
func (w *writerProc) raced() bool {
	return strings.Contains(w.stderr.String(), "WARNING: DATA RACE")
}

// ---------------------------------------------------------------------------
// Checking a repository.

var hasGit = sync.OnceValue(func() bool {
	_, err := exec.LookPath("git")
	return err == nil
})

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+os.TempDir(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// fsck runs git fsck --strict on dir; it reports false when git is not
// installed.
func fsck(t *testing.T, dir, when string) bool {
	t.Helper()
	if !hasGit() {
		return false
	}
	if out, err := git(dir, "fsck", "--strict", "--no-dangling", "--no-progress"); err != nil {
		t.Errorf("%s: %v", when, err)
	} else if strings.TrimSpace(out) != "" {
		t.Logf("%s: git fsck said:\n%s", when, out)
	}
	return true
}

var hexRef = regexp.MustCompile(`^[0-9a-f]{40}\n$`)

// checkRefFiles checks that every loose ref file holds a whole object id
// and packed-refs is well formed: a ref is never left empty or torn, even
// right after SIGKILL. It returns
// the .lock files it saw (left by a killed writer; Open removes them).
func checkRefFiles(t *testing.T, dir, when string) (locks []string) {
	t.Helper()
	root := filepath.Join(dir, "refs")
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); errors.Is(err, fs.ErrNotExist) {
		// A writer killed while creating the repository: HEAD is written
		// last, and the next Open finishes the job.
		return nil
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasSuffix(p, ".lock") {
			locks = append(locks, rel)
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !hexRef.Match(data) {
			t.Errorf("%s: ref file %s holds %q, not an object id", when, rel, data)
		}
		return nil
	})
	if err != nil {
		t.Errorf("%s: walking refs: %v", when, err)
	}
	// packed-refs, when the store has packed them, is replaced whole by
	// rename; it must never be torn either.
	if data, err := os.ReadFile(filepath.Join(dir, "packed-refs")); err == nil {
		for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if !packedRefLine.MatchString(line) {
				t.Errorf("%s: packed-refs line %d is %q", when, i+1, line)
			}
		}
	}
	return locks
}

var packedRefLine = regexp.MustCompile(`^(#.*|\^[0-9a-f]{40}|[0-9a-f]{40} refs/\S+)$`)

// leftovers lists, after a clean Open and Close, the lock and temporary
// files a killed writer left behind that Open did not clean up, and packs
// without their index (or the reverse), which git counts as garbage.
// thoughtbox/flush.lock is not a leftover: it is the file the flushers
// flock, and it stays.
func leftovers(dir string) []string {
	var out []string
	packs := map[string]int{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		switch {
		case rel == "thoughtbox/flush.lock", strings.HasPrefix(rel, "thoughtbox/locks/"):
			// Lock files that may stay: the flush lock, which lives as
			// long as the repository, and a session's lock that another
			// process held or waited at when this one closed (a lock is
			// held on the file, not by its existence).
		case strings.HasSuffix(name, ".lock"), strings.HasPrefix(name, "tmp_"), strings.HasSuffix(name, ".tmp"):
			out = append(out, rel+" was left behind")
		case strings.HasPrefix(rel, "objects/pack/pack-"):
			if base, ok := strings.CutSuffix(name, ".pack"); ok {
				packs[base] |= 1
			} else if base, ok := strings.CutSuffix(name, ".idx"); ok {
				packs[base] |= 2
			}
		}
		return nil
	})
	if err != nil {
		out = append(out, err.Error())
	}
	for base, bits := range packs {
		switch bits {
		case 1:
			out = append(out, "objects/pack/"+base+".pack has no .idx (git: garbage)")
		case 2:
			out = append(out, "objects/pack/"+base+".idx has no .pack")
		}
	}
	if hasGit() {
		o, err := git(dir, "count-objects", "-v")
		if err != nil {
			out = append(out, err.Error())
		} else if !strings.Contains(o, "\ngarbage: 0\n") {
			var warnings []string
			for _, line := range strings.Split(o, "\n") {
				if strings.HasPrefix(line, "warning:") || strings.HasPrefix(line, "error:") {
					warnings = append(warnings, line)
				}
			}
			out = append(out, "git count-objects -v reports garbage: "+strings.Join(warnings, "; "))
		}
	}
	sort.Strings(out)
	return out
}

func checkNoLeftovers(t *testing.T, dir, when string) {
	t.Helper()
	for _, p := range leftovers(dir) {
		t.Errorf("%s: %s", when, p)
	}
}

// repoCheck is what verifyRepo found.
type repoCheck struct {
	sessions int // sessions loaded and checked
	thoughts int // thoughts in them
	stored   map[string]*ledger.StoredSession
	refs     map[string]string // every session ref on disk after Close
}

// verifyRepo opens the repository (which recovers anything a killed writer
// left in its log) and checks it against the acks:
//   - every session listed, and every session a writer announced, loads and
//     passes the integrity check (the store's and the graph's);
//   - every acknowledged thought is where it was acknowledged, with its text;
//   - no thought is stored twice (every writer text is unique), and each
//     chain's auto-numbers run without gaps in creation order;
//   - after Close, the refs on disk are the tips the store loaded.
//
// With only set, just the sessions it accepts are loaded and checked.
func verifyRepo(t *testing.T, dir string, acked map[ackKey]ack, announced []string, only func(string) bool, when string) repoCheck {
	t.Helper()
	ctx := context.Background()
	s, err := gitstore.Open(dir, gitstore.Options{})
	if err != nil {
		t.Fatalf("%s: open: %v", when, err)
	}
	closed := false
	defer func() {
		if !closed {
			s.Close()
		}
	}()
	list, err := s.ListSessions(ctx)
	if err != nil {
		t.Fatalf("%s: list sessions: %v", when, err)
	}
	ids := map[string]bool{}
	for _, ss := range list {
		ids[ss.Meta.ID] = true
	}
	for _, id := range announced {
		if !ids[id] {
			t.Errorf("%s: session %s was announced but is not listed", when, id)
			ids[id] = true
		}
	}
	for _, a := range acked {
		ids[a.session] = true
	}
	rc := repoCheck{stored: map[string]*ledger.StoredSession{}}
	graphs := map[string]*ledger.Graph{}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		if only != nil && !only(id) {
			continue
		}
		ss, err := s.LoadSession(ctx, id)
		if err != nil {
			t.Errorf("%s: load %s: %v", when, id, err)
			continue
		}
		if ss.Meta.ID == "" {
			ss.Meta.ID = id
		}
		g := ledger.BuildGraph(ss)
		if !ss.Integrity.Valid || len(g.Problems()) > 0 {
			t.Errorf("%s: session %s fails its integrity check: %+v; graph problems: %q", when, id, ss.Integrity, g.Problems())
		}
		rc.stored[id], graphs[id] = ss, g
		rc.sessions++
		rc.thoughts += g.Len()
		seen := map[string]string{}
		for _, n := range g.Nodes() {
			sum := textSum(n.Data.Thought)
			if prev, dup := seen[sum]; dup {
				t.Errorf("%s: the same thought is stored twice, as %s and %s", when, prev, n.ID)
			}
			seen[sum] = n.ID
		}
		checkNumbering(t, when, g.MainChain(), 1, "main chain of "+id)
		for _, b := range g.Branches() {
			nodes, _ := g.Branch(b.ID)
			checkNumbering(t, when, nodes, b.FromThought+1, fmt.Sprintf("branch %s of %s", b.ID, id))
		}
	}
	var bad []string
	checked := 0
	for _, a := range acked {
		if only != nil && !only(a.session) {
			continue
		}
		checked++
		g := graphs[a.session]
		if g == nil {
			bad = append(bad, a.String()+": session not loaded")
			continue
		}
		var n ledger.ThoughtNode
		var ok bool
		if a.chain == "main" {
			n, ok = g.Thought(a.num)
		} else {
			n, ok = g.BranchThought(ledger.BranchID(a.chain), a.num)
		}
		switch {
		case !ok:
			bad = append(bad, a.String()+": not stored")
		case textSum(n.Data.Thought) != a.sum:
			bad = append(bad, fmt.Sprintf("%s: another text is stored there: %.80q", a, n.Data.Thought))
		case a.kind == "rev" && (!n.Data.IsRevision || n.Data.RevisesThought == nil):
			bad = append(bad, a.String()+": stored, but not as a revision")
		case a.kind == "branch" && n.BranchOrigin == "":
			bad = append(bad, a.String()+": stored, but without its branch origin")
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		t.Errorf("%s: %d of %d acknowledged thoughts checked are lost or wrong:\n  %s", when, len(bad), checked,
			strings.Join(bad[:min(len(bad), 20)], "\n  "))
	}
	if err := s.Close(); err != nil {
		t.Errorf("%s: close: %v", when, err)
	}
	closed = true
	rc.refs = diskRefs(t, dir, when)
	for id, ss := range rc.stored {
		checkRef(t, when, rc.refs, "refs/heads/sessions/"+id+"/main", string(ss.MainTip))
		for _, b := range ss.Branches {
			checkRef(t, when, rc.refs, "refs/heads/sessions/"+id+"/branches/"+b.ID, string(b.Tip))
		}
	}
	return rc
}

// diskRefs reads the session refs as plain git sees them: with git
// for-each-ref, or from the loose ref files without git.
func diskRefs(t *testing.T, dir, when string) map[string]string {
	t.Helper()
	refs := map[string]string{}
	if hasGit() {
		out, err := git(dir, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/sessions/")
		if err != nil {
			t.Errorf("%s: %v", when, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if name, id, ok := strings.Cut(line, " "); ok {
				refs[name] = id
			}
		}
		return refs
	}
	if data, err := os.ReadFile(filepath.Join(dir, "packed-refs")); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if id, name, ok := strings.Cut(line, " "); ok && strings.HasPrefix(name, "refs/heads/sessions/") {
				refs[name] = id
			}
		}
	}
	root := filepath.Join(dir, "refs", "heads", "sessions")
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".lock") {
			return nil
		}
		data, _ := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		refs[filepath.ToSlash(rel)] = strings.TrimSpace(string(data))
		return nil
	})
	return refs
}

func checkRef(t *testing.T, when string, onDisk map[string]string, ref, want string) {
	t.Helper()
	if got := onDisk[ref]; got != want {
		t.Errorf("%s: after Close, git reads %s as %q; the store loaded %q", when, ref, got, want)
	}
}

// checkNumbering checks that auto-numbered thoughts run first, first+1, …
// in creation order: the ledger renumbers a loser, never skips or reuses.
func checkNumbering(t *testing.T, when string, nodes []ledger.ThoughtNode, first int, what string) {
	t.Helper()
	for i, n := range nodes {
		if n.Data.ThoughtNumber != first+i {
			nums := make([]int, len(nodes))
			for j, m := range nodes {
				nums[j] = m.Data.ThoughtNumber
			}
			t.Errorf("%s: %s is numbered %v, want %d, %d, … in creation order", when, what, nums, first, first+1)
			return
		}
	}
}

// addAcks merges a writer's acks into acked, failing when two acks claim
// the same place with different texts (one overwrote the other).
func addAcks(t *testing.T, acked map[ackKey]ack, acks []ack) {
	t.Helper()
	var clash []string
	for _, a := range acks {
		if prev, dup := acked[a.key()]; dup && prev.sum != a.sum {
			clash = append(clash, fmt.Sprintf("%s and %s", prev, a))
		}
		acked[a.key()] = a
	}
	if len(clash) > 0 {
		t.Errorf("%d times, two thoughts were acknowledged at the same place (one overwrote the other):\n  %s",
			len(clash), strings.Join(clash[:min(len(clash), 10)], "\n  "))
	}
}

// ---------------------------------------------------------------------------
// TestMultiProcessSharedSession.

// createShared makes the session id that writer processes then share, in
// the repository at dir, and closes it before they start, so that they
// only append to it.
func createShared(t *testing.T, dir, id, title string) {
	t.Helper()
	s, err := gitstore.Open(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(s, ledger.Options{NewID: func() string { return id }})
	if _, err := l.StartSession(context.Background(), ledger.CreateSessionParams{Title: title}, writerAuthor); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMultiProcessSharedSession runs three writer processes on one
// repository, each appending auto-numbered thoughts to one shared session
// and to a session of its own, with different flush intervals. Every
// acknowledged thought must be stored exactly once where it was
// acknowledged, the shared main chain numbered 1..N without reuse, and plain
// git must agree (fsck, log length).
func TestMultiProcessSharedSession(t *testing.T) {
	if testing.Short() {
		t.Skip("starts writer processes; skipped with -short")
	}
	const perWriter = 150
	dir := filepath.Join(t.TempDir(), "p.git")
	shared := "multi-shared"
	createShared(t, dir, shared, "Shared by three processes")

	seed := testSeed(t)
	flushes := []time.Duration{5 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond}
	var ws []*writerProc
	start := time.Now()
	for i, fl := range flushes {
		ws = append(ws, startWriter(t, writerConfig{
			Repo: dir, Flush: fl, Name: fmt.Sprintf("P%d", i), Seed: seed + uint64(i),
			Sessions: []string{fmt.Sprintf("multi-own-%d", i)}, Shared: shared,
			Max: perWriter, Deadline: 20 * time.Second,
		}))
	}
	acked := map[ackKey]ack{}
	var own []string
	conflicts := 0
	for i, w := range ws {
		if err := w.wait(90 * time.Second); err != nil {
			t.Fatalf("writer %s: %v\n%s", w.name, err, summarize(w.output()))
		}
		if w.raced() || w.count("done") != 1 {
			t.Errorf("writer %s did not finish cleanly:\n%s", w.name, summarize(w.output()))
		}
		addAcks(t, acked, w.acks(t))
		own = append(own, fmt.Sprintf("multi-own-%d", i))
		conflicts += w.count("conflict ")
	}
	t.Logf("3 writers, %d acknowledged thoughts in %v; AddThought gave up on a lost race %d times (retried)",
		len(acked), time.Since(start).Round(time.Millisecond), conflicts)

	// Plain git first, as the writers left it: each Close published its log.
	gitOK := fsck(t, dir, "after the writers exited")
	checkRefFiles(t, dir, "after the writers exited")

	perSession := map[string]map[string]ack{} // session -> sum -> ack
	for _, a := range acked {
		if perSession[a.session] == nil {
			perSession[a.session] = map[string]ack{}
		}
		if prev, dup := perSession[a.session][a.sum]; dup {
			t.Errorf("one text acknowledged twice: %s and %s", prev, a)
		}
		perSession[a.session][a.sum] = a
	}
	if len(perSession[shared]) < 2*perWriter/3 {
		t.Errorf("only %d thoughts reached the shared session", len(perSession[shared]))
	}

	rc := verifyRepo(t, dir, acked, append(own, shared), nil, "after the writers exited")
	for id, want := range perSession {
		ss := rc.stored[id]
		if ss == nil {
			continue // reported by verifyRepo
		}
		// Every writer exited cleanly, so every stored thought was
		// acknowledged: the store must hold exactly the acknowledged ones.
		nums := map[int]bool{}
		got := map[string]bool{}
		for _, th := range ss.Main {
			if nums[th.Data.ThoughtNumber] {
				t.Errorf("session %s: thought number %d is stored twice on the main chain", id, th.Data.ThoughtNumber)
			}
			nums[th.Data.ThoughtNumber] = true
			sum := textSum(th.Data.Thought)
			if _, ok := want[sum]; !ok {
				t.Errorf("session %s: thought %d (%.60q) is stored but was never acknowledged", id, th.Data.ThoughtNumber, th.Data.Thought)
			}
			got[sum] = true
		}
		for sum, a := range want {
			if !got[sum] {
				t.Errorf("session %s: acknowledged %s is not on the main chain", id, a)
			}
		}
		if len(ss.Main) != len(want) {
			t.Errorf("session %s: %d thoughts stored, %d acknowledged", id, len(ss.Main), len(want))
		}
		if gitOK {
			out, err := git(dir, "log", "--format=%s", "sessions/"+id+"/main")
			if err != nil {
				t.Error(err)
				continue
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			// one commit per thought plus the session's first commit
			if len(lines) != len(want)+1 {
				t.Errorf("git log sessions/%s/main has %d commits; want %d thoughts + 1", id, len(lines), len(want))
			}
			if len(lines) > 0 && !strings.HasPrefix(lines[len(lines)-1], "Start session: ") {
				t.Errorf("git log sessions/%s/main starts with %q", id, lines[len(lines)-1])
			}
		}
	}
	if !gitOK {
		t.Log("the git CLI is not installed: git fsck and git log checks skipped")
	}
	checkNoLeftovers(t, dir, "after the writers exited and a clean Open+Close")
}

// TestMultiProcessWriterKilled: three processes share a session; one of
// them, which flushes every 5 ms and so does most of the flushing, is killed
// with SIGKILL at a random moment while the other two carry on and close.
// A writer killed in the middle of a flush may leave a <ref>.lock, a torn
// log record or a temporary pack; the survivors must not be stopped by it:
// they finish, their Close succeeds, and before anything reopens the
// repository plain git already sees every acknowledged thought (the
// survivors' flushes publish the whole log, the dead writer's acknowledged
// thoughts included). Then Open recovers and every acknowledged thought is
// checked. Several rounds on one repository.
func TestMultiProcessWriterKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts writer processes; skipped with -short")
	}
	const rounds = 4
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0x7065_6572))
	dir := filepath.Join(t.TempDir(), "p.git")
	shared := "peer-shared"
	createShared(t, dir, shared, "Shared; one writer dies")
	acked := map[ackKey]ack{}
	stuck := 0
	for round := range rounds {
		victim := startWriter(t, writerConfig{
			Repo: dir, Flush: 5 * time.Millisecond, Name: fmt.Sprintf("V%d", round), Seed: seed + uint64(10*round),
			Sessions: []string{fmt.Sprintf("peer-v%d", round)}, Shared: shared, Max: 1 << 30, Deadline: time.Hour,
		})
		var survivors []*writerProc
		for k := range 2 {
			survivors = append(survivors, startWriter(t, writerConfig{
				Repo: dir, Flush: 50 * time.Millisecond, Name: fmt.Sprintf("S%d-%d", round, k), Seed: seed + uint64(10*round+k+1),
				Sessions: []string{fmt.Sprintf("peer-s%d-%d", round, k)}, Shared: shared, Max: 120, Deadline: 20 * time.Second,
			}))
		}
		victim.waitFor("writing", 1, 30*time.Second)
		delay := time.Duration(20+rng.IntN(300)) * time.Millisecond
		time.Sleep(delay)
		if victim.kill() {
			t.Fatalf("round %d: the victim exited before it was killed:\n%s", round, victim.output())
		}
		when := fmt.Sprintf("round %d (victim killed %v after it started writing, %d acks)", round, delay, victim.count("ack "))
		addAcks(t, acked, victim.acks(t))
		// The survivors may have written their share and exited before the
		// kill; a peer that lives past it must still publish what the
		// victim acknowledged, so one more starts now.
		survivors = append(survivors, startWriter(t, writerConfig{
			Repo: dir, Flush: 50 * time.Millisecond, Name: fmt.Sprintf("L%d", round), Seed: seed + uint64(10*round+5),
			Sessions: []string{fmt.Sprintf("peer-l%d", round)}, Shared: shared, Max: 5, Deadline: 20 * time.Second,
		}))
		for _, w := range survivors {
			err := w.wait(90 * time.Second)
			addAcks(t, acked, w.acks(t))
			if err != nil || w.count("done") != 1 || w.raced() {
				t.Errorf("%s: survivor %s did not finish cleanly (%v):\n%s", when, w.name, err, summarize(w.output()))
			}
			if strings.Contains(w.stderr.String(), "thoughtbox: flushing") {
				stuck++
				t.Logf("%s: survivor %s could not flush", when, w.name)
			}
		}

		if locks := checkRefFiles(t, dir, when+", after the survivors exited"); len(locks) > 0 {
			t.Logf("%s: ref locks on disk after the survivors exited: %v", when, locks)
		}
		if hasGit() {
			fsck(t, dir, when+", after the survivors exited, before reopening")
			// Plain git must already see every acknowledged thought: the
			// chains are numbered 1..N, so a chain holding at least the
			// highest acknowledged number holds them all.
			high := map[string]int{}
			for _, a := range acked {
				high[a.session] = max(high[a.session], a.num)
			}
			for id, n := range high {
				out, err := git(dir, "rev-list", "--count", "refs/heads/sessions/"+id+"/main")
				got, _ := strconv.Atoi(strings.TrimSpace(out))
				if err != nil || got < n+1 {
					t.Errorf("%s: before reopening, git sees %d commits on sessions/%s/main; thought %d was acknowledged (%v)",
						when, got, id, n, err)
				}
			}
		}
		verifyRepo(t, dir, acked, nil, nil, when+", after reopening")
		checkNoLeftovers(t, dir, when+", after a clean Open+Close")
		if t.Failed() {
			t.Fatalf("stopping after round %d; seed %d", round, seed)
		}
	}
	t.Logf("%d rounds, %d acknowledged thoughts; survivors failed to flush in %d cases", rounds, len(acked), stuck)
}

// TestMultiProcessDeadPeerRefLock is the deterministic form of what
// TestMultiProcessWriterKilled catches some of the time: a peer process
// killed inside a flush, between creating <ref>.lock and renaming it over the
// ref, leaves the lock behind (TestCrashSIGKILL sees this after roughly one
// kill in seven). A writer that is already running must not be stopped by
// it: a flusher holds flush.lock, so no live Thoughtbox flusher can own that
// lock, and Open already treats such locks as stale. Here the dead peer's
// lock is put in place while a writer runs; the writer must still publish
// its thoughts to plain git and close without error.
func TestMultiProcessDeadPeerRefLock(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a writer process; skipped with -short")
	}
	dir := filepath.Join(t.TempDir(), "p.git")
	id := "peer-lock"
	w := startWriter(t, writerConfig{
		Repo: dir, Flush: 10 * time.Millisecond, Name: "W", Seed: 1,
		Sessions: []string{id}, Max: 80, Deadline: 30 * time.Second,
	})
	if !w.waitFor("ack ", 5, 30*time.Second) {
		w.kill()
		t.Fatalf("the writer did not start writing:\n%s", w.output())
	}
	// The dead peer's lock, taken the way writeDiskRef takes it (O_EXCL);
	// if the writer holds the lock this instant, try again.
	lock := filepath.Join(dir, "refs", "heads", "sessions", id, "main.lock")
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.WriteString("0123456789abcdef0123456789abcdef01234567\n")
			f.Close()
			break
		}
		if attempt == 1000 {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	err := w.wait(60 * time.Second)
	acks := w.acks(t)
	if err != nil || w.count("done") != 1 {
		t.Errorf("with a dead peer's %s left behind, the writer failed (%v):\n%s", filepath.Base(lock), err, summarize(w.output()))
	}
	if hasGit() {
		out, err := git(dir, "rev-list", "--count", "refs/heads/sessions/"+id+"/main")
		if got, _ := strconv.Atoi(strings.TrimSpace(out)); err != nil || got != len(acks)+1 {
			t.Errorf("before reopening, git sees %d commits on sessions/%s/main; want %d thoughts + 1 (%v)", got, id, len(acks), err)
		}
	}
	acked := map[ackKey]ack{}
	addAcks(t, acked, acks)
	verifyRepo(t, dir, acked, []string{id}, nil, "after reopening")
}

// summarize shortens a writer's output for a failure message: repeated
// lines (a flusher retrying) are shown once, with a count.
func summarize(out string) string {
	var b strings.Builder
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i := 0; i < len(lines); {
		j := i + 1
		for j < len(lines) && lines[j] == lines[i] {
			j++
		}
		b.WriteString("        " + lines[i])
		if j-i > 1 {
			fmt.Fprintf(&b, "  [×%d]", j-i)
		}
		b.WriteString("\n")
		i = j
	}
	return b.String()
}

// testSeed returns the seed from THOUGHTBOX_TEST_SEED or a new one, and
// logs it so that a failure can be replayed.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("THOUGHTBOX_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("THOUGHTBOX_TEST_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with THOUGHTBOX_TEST_SEED=%d)", seed, seed)
	return seed
}

// ---------------------------------------------------------------------------
// TestConcurrentWriters.

// TestConcurrentWriters writes from many goroutines of one process: eight
// sessions in parallel; one session from four goroutines through one
// Ledger; one session from four goroutines through two Ledgers over the
// same Store, whose views go stale so that the store's compare-and-swap
// refuses writes (ErrConflict) and the ledger reloads and renumbers. Readers
// (Load, List, Flush) run alongside. Every thought must be stored exactly
// once, each main chain numbered 1..N. On both backends.
func TestConcurrentWriters(t *testing.T) {
	for _, backend := range []string{"memory", "fs"} {
		t.Run(backend, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p.git")
			open := func() *gitstore.Store {
				var s *gitstore.Store
				var err error
				if backend == "memory" {
					s, err = gitstore.OpenMemory(gitstore.Options{})
				} else {
					s, err = gitstore.Open(dir, gitstore.Options{FlushInterval: 10 * time.Millisecond})
				}
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			s := open()
			defer func() {
				if s != nil {
					s.Close()
				}
			}()
			testConcurrentWriters(t, s)
			if backend == "fs" {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				s = nil
				if fsck(t, dir, "after the concurrent writers") {
					checkNoLeftovers(t, dir, "after the concurrent writers")
				}
			}
		})
	}
}

func testConcurrentWriters(t *testing.T, s *gitstore.Store) {
	ctx := context.Background()
	var idMu sync.Mutex
	ids := 0
	newID := func() string {
		idMu.Lock()
		defer idMu.Unlock()
		ids++
		return fmt.Sprintf("conc-%03d", ids)
	}
	l1 := ledger.New(s, ledger.Options{NewID: newID})
	l2 := ledger.New(s, ledger.Options{NewID: newID})
	start := func(title string) string {
		ss, err := l1.StartSession(ctx, ledger.CreateSessionParams{Title: title}, writerAuthor)
		if err != nil {
			t.Fatal(err)
		}
		return ss.ID
	}

	const (
		parallelSessions = 8
		perSession       = 30
		sameWriters      = 4
		perSameWriter    = 25
	)
	type job struct {
		l       *ledger.Ledger
		session string
		name    string
		n       int
	}
	var jobs []job
	var separate []string
	for i := range parallelSessions {
		id := start(fmt.Sprintf("parallel %d", i))
		separate = append(separate, id)
		jobs = append(jobs, job{l1, id, fmt.Sprintf("par%d", i), perSession})
	}
	oneLedger := start("one session, one ledger")
	twoLedgers := start("one session, two ledgers")
	for g := range sameWriters {
		jobs = append(jobs, job{l1, oneLedger, fmt.Sprintf("one%d", g), perSameWriter})
		l := l1
		if g%2 == 1 {
			l = l2
		}
		jobs = append(jobs, job{l, twoLedgers, fmt.Sprintf("two%d", g), perSameWriter})
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	want := map[string]map[string]string{} // session -> sum -> writer's label
	gaveUp := 0
	errs := make(chan error, len(jobs)+8)
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range j.n {
				text := fmt.Sprintf("%s thought %d on %s: measure first, then change one thing", j.name, i, j.session)
				var err error
				var res *ledger.AddResult
				for attempt := 0; attempt < 50; attempt++ {
					res, err = j.l.AddThought(ctx, j.session, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true}, writerAuthor)
					if !errors.Is(err, ledger.ErrConflict) {
						break
					}
					mu.Lock()
					gaveUp++
					mu.Unlock()
				}
				if err != nil {
					errs <- fmt.Errorf("%s thought %d: %w", j.name, i, err)
					return
				}
				if res.Thought.Thought != text {
					errs <- fmt.Errorf("%s thought %d: stored text differs", j.name, i)
				}
				mu.Lock()
				if want[j.session] == nil {
					want[j.session] = map[string]string{}
				}
				want[j.session][textSum(text)] = fmt.Sprintf("%s #%d (acknowledged as %d)", j.name, i, res.Thought.ThoughtNumber)
				mu.Unlock()
			}
		}()
	}
	// Readers alongside the writers.
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	rwg.Add(3)
	go func() {
		defer rwg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, id := range []string{twoLedgers, oneLedger, separate[0]} {
				if _, err := l2.View(ctx, id); err != nil {
					errs <- fmt.Errorf("view %s: %w", id, err)
					return
				}
			}
			if _, err := s.LoadSession(ctx, twoLedgers); err != nil {
				errs <- fmt.Errorf("load %s: %w", twoLedgers, err)
				return
			}
			runtime.Gosched()
		}
	}()
	go func() {
		defer rwg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := l1.List(ctx); err != nil {
				errs <- fmt.Errorf("list: %w", err)
				return
			}
			time.Sleep(3 * time.Millisecond)
		}
	}()
	go func() {
		defer rwg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			if err := s.Flush(); err != nil {
				errs <- fmt.Errorf("flush: %w", err)
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	rwg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d writers; AddThought gave up on a lost race %d times (retried)", len(jobs), gaveUp)

	// A fresh Ledger reads everything back from the store.
	l3 := ledger.New(s, ledger.Options{})
	for id, sums := range want {
		v, err := l3.Load(ctx, id)
		if err != nil {
			t.Errorf("load %s: %v", id, err)
			continue
		}
		if !v.Integrity.Valid {
			t.Errorf("session %s fails its integrity check: %+v", id, v.Integrity)
		}
		main := v.Graph.MainChain()
		checkNumbering(t, "concurrent writers", main, 1, "main chain of "+id)
		got := map[string]int{}
		for _, n := range main {
			got[textSum(n.Data.Thought)]++
		}
		for sum, label := range sums {
			switch got[sum] {
			case 1:
			case 0:
				t.Errorf("session %s: %s is lost", id, label)
			default:
				t.Errorf("session %s: %s is stored %d times", id, label, got[sum])
			}
		}
		if len(main) != len(sums) {
			t.Errorf("session %s: %d thoughts stored, %d acknowledged", id, len(main), len(sums))
		}
		// A session only l1 wrote: l1's view must be what the store holds.
		if id != twoLedgers {
			if lv, err := l1.View(ctx, id); err != nil || lv.Graph.Len() != len(main) {
				t.Errorf("session %s: the writing ledger's view disagrees with the store (%v)", id, err)
			}
		}
	}
	if n := len(want[oneLedger]); n != sameWriters*perSameWriter {
		t.Errorf("one ledger: %d thoughts acknowledged, want %d", n, sameWriters*perSameWriter)
	}
	if n := len(want[twoLedgers]); n != sameWriters*perSameWriter {
		t.Errorf("two ledgers: %d thoughts acknowledged, want %d", n, sameWriters*perSameWriter)
	}
}
