package project

import (
	"context"
	"log/slog"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/config"
	gitremote "github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// syncBuffer is a log the puller writes from its goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// logger is a text logger into s, as the CLI's, without the time.
func (s *syncBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(s, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}

// openProject opens a project in a fresh data directory, with the
// settings env gives.
func openProject(t *testing.T, env map[string]string, opts Options) *Project {
	t.Helper()
	vars := map[string]string{config.EnvDataDir: t.TempDir()}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.Resolve(config.Flags{}, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

type teamMember = Project

func newTeamMember(t *testing.T) *teamMember { return openProject(t, nil, Options{}) }

func (m *teamMember) think(t *testing.T, id, text string) *ledger.AddResult {
	t.Helper()
	r, err := m.Ledger().AddThought(context.Background(), id, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true}, ledger.Author{Name: "agent"})
	if err != nil {
		t.Fatalf("thought %q: %v", text, err)
	}
	return r
}

func (m *teamMember) push(t *testing.T, remote string) {
	t.Helper()
	if _, err := m.Push(context.Background(), remote, PushOptions{}); err != nil {
		t.Fatalf("push: %v", err)
	}
}

func bareRemote(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	remote := filepath.Join(t.TempDir(), "team.git")
	if out, err := exec.Command("git", "init", "--bare", "-q", remote).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return remote
}

// pulledAfterNow waits for a pull that began after this call.
func pulledAfterNow(p *autoPuller) {
	p.waitPulls(p.finished() + 2)
}

// TestAutoPullServerSeesTeam: what ledger A pushes, ledger B's auto-pull
// brings in, and B's reads — including of a session B had already read
// and so holds a view of — show it without B writing first; B's next
// thought then follows A's.
func TestAutoPullServerSeesTeam(t *testing.T) {
	remote := bareRemote(t)
	a, b := newTeamMember(t), newTeamMember(t)
	ctx := context.Background()
	var log syncBuffer
	p := newAutoPuller(b, remote, 10*time.Millisecond, 0, gitremote.TransferOptions{}, log.logger())
	defer p.close()

	s, err := a.Ledger().StartSession(ctx, ledger.CreateSessionParams{Title: "Why the cache misses"}, ledger.Author{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	a.think(t, s.ID, "The eviction counter climbs with every deploy.")
	a.think(t, s.ID, "Suspect the warmup job.")
	a.push(t, remote)
	pulledAfterNow(p)

	list, err := b.Ledger().List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != s.ID || list[0].ThoughtCount != 2 {
		t.Fatalf("B's list after the pull: %+v, %v", list, err)
	}
	found, err := b.Ledger().Search(ctx, ledger.SearchQuery{Query: "eviction"})
	if err != nil || found.Total != 1 {
		t.Fatalf("B's search for a word of A's thought: %+v, %v", found, err)
	}
	v, err := b.Ledger().View(ctx, s.ID)
	if err != nil || v.Graph.Len() != 2 {
		t.Fatalf("B's view: %v thoughts, %v", v, err)
	}

	// A goes on; B, which holds a view of two thoughts, must see three.
	a.think(t, s.ID, "The warmup job evicts the hottest keys: quarantine it.")
	a.push(t, remote)
	pulledAfterNow(p)
	v, err = b.Ledger().View(ctx, s.ID)
	if err != nil || v.Graph.Len() != 3 {
		t.Fatalf("B's view after A's third thought was pulled: %d thoughts, %v", v.Graph.Len(), err)
	}
	if list, _ = b.Ledger().List(ctx); list[0].ThoughtCount != 3 {
		t.Errorf("B's list counts %d thoughts, want 3", list[0].ThoughtCount)
	}
	if found, _ = b.Ledger().Search(ctx, ledger.SearchQuery{Query: "quarantine"}); found.Total != 1 {
		t.Errorf("B's search misses a word of the pulled thought: %+v", found)
	}
	r := b.think(t, s.ID, "Agreed; B takes it from here.")
	if r.Thought.ThoughtNumber != 4 {
		t.Errorf("B's next thought is number %d, want 4", r.Thought.ThoughtNumber)
	}
	if got := log.String(); got != "" {
		t.Errorf("log of pulls that went well: %q", got)
	}

	// Both extend the session apart: B's pull makes B's own thought a
	// branch forked at thought 4, says so once, and B's main chain follows
	// A's; nothing is kept aside.
	b.think(t, s.ID, "B's fifth.")
	a.think(t, s.ID, "A's fourth, unaware of B.")
	a.push(t, remote)
	pulledAfterNow(p)
	pulledAfterNow(p)
	if got := log.String(); strings.Count(got, "now a branch") != 1 || !strings.Contains(got, "remote="+remote) || strings.Contains(got, "diverged") {
		t.Errorf("log after a divergence:\n%s", got)
	}
	v, _ = b.Ledger().View(ctx, s.ID)
	if len(v.Graph.MainChain()) != 4 || v.Graph.BranchCount() != 1 {
		t.Fatalf("B's session after the divergence: %d thoughts on main, %d branches; want A's 4 on main and B's fifth on a branch", len(v.Graph.MainChain()), v.Graph.BranchCount())
	}
	var texts []string
	for _, n := range v.Graph.MainChain() {
		texts = append(texts, n.Data.Thought)
	}
	for _, id := range v.Graph.BranchIDs() {
		nodes, _ := v.Graph.Branch(id)
		for _, n := range nodes {
			texts = append(texts, n.Data.Thought)
		}
	}
	for _, want := range []string{"A's fourth, unaware of B.", "B's fifth."} {
		if !slices.Contains(texts, want) {
			t.Errorf("B's session lacks %q: %q", want, texts)
		}
	}
	if kept, err := b.Diverged(""); err != nil || len(kept) != 0 {
		t.Errorf("kept chains after the pull: %+v, %v", kept, err)
	}
}

// TestAutoPullFailureIsLoggedOnce: an unreachable remote is logged with
// its name and cause, once, while writes go on; when it comes back the
// log says so and its sessions arrive.
func TestAutoPullFailureIsLoggedOnce(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	missing := filepath.Join(t.TempDir(), "team.git")
	a, b := newTeamMember(t), newTeamMember(t)
	ctx := context.Background()
	var log syncBuffer
	p := newAutoPuller(b, missing, 10*time.Millisecond, 0, gitremote.TransferOptions{}, log.logger())
	defer p.close()
	pulledAfterNow(p)
	pulledAfterNow(p)
	own, err := b.Ledger().StartSession(ctx, ledger.CreateSessionParams{Title: "Written meanwhile"}, ledger.Author{Name: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	b.think(t, own.ID, "Writes do not wait for the remote.")
	got := log.String()
	if strings.Count(got, `level=WARN msg="auto-pull failed`) != 1 || !strings.Contains(got, "remote="+missing) || !strings.Contains(got, "no Git repository") {
		t.Fatalf("log of a missing remote:\n%s", got)
	}

	s, err := a.Ledger().StartSession(ctx, ledger.CreateSessionParams{Title: "From A"}, ledger.Author{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	a.think(t, s.ID, "Hello from A.")
	if out, err := exec.Command("git", "init", "--bare", "-q", missing).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	a.push(t, missing)
	pulledAfterNow(p)
	if got := log.String(); !strings.Contains(got, `msg="auto-pull works again" remote=`+missing) {
		t.Errorf("no recovery in the log:\n%s", got)
	}
	list, _ := b.Ledger().List(ctx)
	ids := []string{}
	for _, x := range list {
		ids = append(ids, x.ID)
	}
	if !slices.Contains(ids, s.ID) || !slices.Contains(ids, own.ID) {
		t.Errorf("B lists %v, want %s and %s", ids, s.ID, own.ID)
	}
}

// TestAutoPullStopsPromptly: closing the puller returns while it waits
// for its next pull.
func TestAutoPullStopsPromptly(t *testing.T) {
	remote := bareRemote(t)
	b := newTeamMember(t)
	p := newAutoPuller(b, remote, time.Hour, 0, gitremote.TransferOptions{}, (&syncBuffer{}).logger())
	p.waitPulls(1)
	done := make(chan struct{})
	go func() { p.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the puller did not stop within a minute of close, waiting on an hour's interval")
	}
}

// TestAutoPullQuarantine: a chain that fails the checks of what a pull
// brings in (here a thought over B's size limit) is kept aside, as with
// `thoughtbox pull`: B does not list it, and the log says so once.
func TestAutoPullQuarantine(t *testing.T) {
	remote := bareRemote(t)
	a, b := newTeamMember(t), newTeamMember(t)
	ctx := context.Background()
	s, err := a.Ledger().StartSession(ctx, ledger.CreateSessionParams{Title: "Too long for B"}, ledger.Author{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	a.think(t, s.ID, strings.Repeat("a long thought ", 20))
	a.push(t, remote)
	var log syncBuffer
	p := newAutoPuller(b, remote, 10*time.Millisecond, 0, gitremote.TransferOptions{MaxThoughtBytes: 64}, log.logger())
	defer p.close()
	pulledAfterNow(p)
	pulledAfterNow(p)
	got := log.String()
	if strings.Count(got, "failed the checks") != 1 || !strings.Contains(got, `what="session `+s.ID+`"`) || !strings.Contains(got, "remote="+remote) {
		t.Errorf("log of a quarantined chain:\n%s", got)
	}
	if list, _ := b.Ledger().List(ctx); len(list) != 0 {
		t.Errorf("B lists a quarantined session: %+v", list)
	}
}
