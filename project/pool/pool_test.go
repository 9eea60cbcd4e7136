package pool

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/project"
)

// clock is a settable time source for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// resolve is a configuration in a fresh data directory, with env as the
// whole environment.
func resolve(t *testing.T, env map[string]string) *config.Config {
	t.Helper()
	cfg, err := config.Resolve(config.Flags{DataDir: t.TempDir()}, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func newPool(t *testing.T, cfg *config.Config, max int, idle time.Duration, now func() time.Time) *Pool {
	t.Helper()
	p := New(Options{Config: cfg, Max: max, Idle: idle, Now: now})
	t.Cleanup(p.Close)
	return p
}

// use opens name, creating it, and releases it at once.
func use(t *testing.T, p *Pool, name string) *ledger.Ledger {
	t.Helper()
	l, release, err := p.Ledger(context.Background(), name, true)
	if err != nil {
		t.Fatalf("opening %s: %v", name, err)
	}
	release()
	return l
}

// openNames are the projects open besides the server's own, sorted.
func openNames(p *Pool) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for name, e := range p.open {
		if e.proj != nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func openFDs(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd to count descriptors")
	}
	return len(entries)
}

// TestBounded navigates to many new projects, as a hostile client would,
// and checks that the open projects and descriptors stay bounded while
// every project's data stays on disk.
func TestBounded(t *testing.T) {
	p := newPool(t, resolve(t, nil), 4, time.Hour, nil)
	// Warm up (the first open loads shared state), then count.
	use(t, p, "warm")
	before := openFDs(t)
	for i := range 60 {
		use(t, p, "p"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	if n := p.Open(); n > 4 {
		t.Errorf("%d projects open, want at most 4", n)
	}
	if after := openFDs(t); after > before+4*8 {
		t.Errorf("descriptors grew from %d to %d after 60 projects", before, after)
	}
	names, _ := p.o.Config.Projects()
	if len(names) != 61 {
		t.Errorf("%d projects on disk, want 61", len(names))
	}
	// Closed projects open again.
	if _, release, err := p.Ledger(context.Background(), "paa", false); err != nil {
		t.Errorf("reopening a closed project: %v", err)
	} else {
		release()
	}
}

// TestNotCreatedUnlessAsked checks that the error for a missing project
// wraps the caller's sentinel, names the existing projects, and creates
// nothing.
func TestNotCreatedUnlessAsked(t *testing.T) {
	ctx := context.Background()
	errMissing := errors.New("missing")
	p := New(Options{Config: resolve(t, nil), Max: 4, Idle: time.Hour, NoProject: errMissing})
	t.Cleanup(p.Close)
	if _, _, err := p.Ledger(ctx, "alpha", false); !errors.Is(err, errMissing) || !strings.Contains(err.Error(), "there are none yet") {
		t.Errorf("missing project with none on disk: %v", err)
	}
	use(t, p, "alpha")
	_, _, err := p.Ledger(ctx, "alhpa", false)
	if !errors.Is(err, errMissing) || !strings.Contains(err.Error(), `"alhpa"; existing projects: alpha`) {
		t.Errorf("missing project: %v", err)
	}
	if names, _ := p.o.Config.Projects(); !slices.Equal(names, []string{"alpha"}) {
		t.Errorf("projects on disk: %v", names)
	}
	// Without Options.NoProject the pool's own sentinel is wrapped.
	q := newPool(t, resolve(t, nil), 4, time.Hour, nil)
	if _, _, err := q.Ledger(ctx, "beta", false); !errors.Is(err, ErrNoProject) {
		t.Errorf("default sentinel: %v", err)
	}
}

// TestEvictsLeastRecentlyUsed fills the pool and checks that room is made
// by closing the project used longest ago (by release, not by open), and
// that the server's own project neither counts nor is closed.
func TestEvictsLeastRecentlyUsed(t *testing.T) {
	cfg := resolve(t, nil)
	own, err := project.Open(cfg, project.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { own.Close() })
	c := newClock()
	p := New(Options{Config: cfg, Own: own.Ledger(), Max: 2, Idle: time.Hour, Now: c.now})
	t.Cleanup(p.Close)
	step := func(name string) { c.advance(time.Second); use(t, p, name) }
	step("a")
	step("b")
	step("a") // a is now the more recent
	if l := use(t, p, cfg.Project); l != own.Ledger() {
		t.Errorf("the server's own project is not its own ledger")
	}
	step("c")
	if got := openNames(p); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("after c: open %v, want [a c] (b was used longest ago)", got)
	}
	step("d")
	if got := openNames(p); !slices.Equal(got, []string{"c", "d"}) {
		t.Errorf("after d: open %v, want [c d]", got)
	}
	if _, err := own.Ledger().List(context.Background()); err != nil {
		t.Errorf("the server's own project was closed: %v", err)
	}
}

// TestHeldAreKept checks that a project a call holds is never closed, for
// room or for idleness, that idle ones are, and that a full pool of held
// projects refuses another with an error naming the setting.
func TestHeldAreKept(t *testing.T) {
	c := newClock()
	p := newPool(t, resolve(t, nil), 2, time.Minute, c.now)
	ctx := context.Background()
	la, releaseA, err := p.Ledger(ctx, "a", true)
	if err != nil {
		t.Fatal(err)
	}
	_, releaseB, err := p.Ledger(ctx, "b", true)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = p.Ledger(ctx, "c", true)
	if err == nil || !strings.Contains(err.Error(), "2 projects are open and in use") || !strings.Contains(err.Error(), "THOUGHTBOX_MAX_OPEN_PROJECTS") {
		t.Fatalf("a third project with two held and a cap of 2: %v", err)
	}
	if names, _ := p.o.Config.Projects(); slices.Contains(names, "c") {
		t.Errorf("a refused project was created: %v", names)
	}
	releaseB()
	c.advance(2 * time.Minute)
	p.CloseIdle()
	if got := openNames(p); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("after the idle sweep: open %v, want [a] (b idle, a held)", got)
	}
	if _, err := la.List(ctx); err != nil {
		t.Errorf("held project unusable: %v", err)
	}
	releaseA()
	releaseA() // a second release is harmless
	if n := p.open["a"].users; n != 0 {
		t.Errorf("users = %d after release", n)
	}
	// Released just now: not idle yet.
	p.CloseIdle()
	if got := openNames(p); !slices.Equal(got, []string{"a"}) {
		t.Errorf("a project released just now was closed: open %v", got)
	}
	c.advance(2 * time.Minute)
	p.CloseIdle()
	if n := p.Open(); n != 0 {
		t.Errorf("%d projects open after both went idle", n)
	}
}

// TestMemoryStorageKeepsEverything: with memory storage a closed project
// would lose its sessions, so none is closed for idleness or for room;
// past the cap a new one is refused instead.
func TestMemoryStorageKeepsEverything(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	p := newPool(t, resolve(t, map[string]string{config.EnvStorage: "memory"}), 1, time.Minute, c.now)
	l := use(t, p, "a")
	s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "kept in memory"}, ledger.Author{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c.advance(time.Hour)
	p.CloseIdle()
	if _, _, err := p.Ledger(ctx, "b", true); err == nil || !strings.Contains(err.Error(), "THOUGHTBOX_MAX_OPEN_PROJECTS") {
		t.Errorf("a second project past the cap with memory storage: %v", err)
	}
	if got := openNames(p); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("open %v, want [a]", got)
	}
	l2 := use(t, p, "a")
	if l2 != l {
		t.Errorf("project a was reopened, not kept")
	}
	if _, err := l2.Load(ctx, s.ID); err != nil {
		t.Errorf("the session written in memory is gone: %v", err)
	}
	if _, ok, err := p.CodeRoot(ctx, t.TempDir()); ok || err != nil {
		t.Errorf("CodeRoot with memory storage = %v, %v; want not ok", ok, err)
	}
}

// TestSweepClosesIdle runs the background sweep and waits for it to
// close a project left idle.
func TestSweepClosesIdle(t *testing.T) {
	p := newPool(t, resolve(t, nil), 4, time.Millisecond, nil)
	use(t, p, "a")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Sweep(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for p.Open() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if n := p.Open(); n != 0 {
		t.Errorf("%d projects still open after the sweep", n)
	}
}

// TestCloseClosesHeld: Close (the server stopping) closes every project
// the pool opened, held or not, and a project opened again afterwards
// reads what was written.
func TestCloseClosesHeld(t *testing.T) {
	ctx := context.Background()
	cfg := resolve(t, nil)
	p := New(Options{Config: cfg, Max: 4, Idle: time.Hour})
	l, _, err := p.Ledger(ctx, "a", true)
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "outlives the pool"}, ledger.Author{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if n := p.Open(); n != 0 {
		t.Errorf("%d projects open after Close", n)
	}
	q := newPool(t, cfg, 4, time.Hour, nil)
	l2, release, err := q.Ledger(ctx, "a", false)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, err := l2.Load(ctx, s.ID); err != nil {
		t.Errorf("the session written before Close: %v", err)
	}
}

// TestCodeRootOutsideARepository: a folder in no Git repository is no
// code root, and the pool remembers nothing of it.
func TestCodeRootOutsideARepository(t *testing.T) {
	t.Setenv("GIT_CEILING_DIRECTORIES", os.TempDir())
	p := newPool(t, resolve(t, nil), 4, time.Hour, nil)
	name, ok, err := p.CodeRoot(context.Background(), t.TempDir())
	if ok || err != nil || name != "" {
		t.Errorf("CodeRoot(a plain folder) = %q, %v, %v", name, ok, err)
	}
	if len(p.code) != 0 {
		t.Errorf("code roots remembered: %v", p.code)
	}
}

// TestCodeRootOpensTheRepositorysLedger: a folder inside an enabled
// worktree is known as code:<worktree>, opened without create (its ledger
// lives in the repository, not the data directory), and its repository is
// what CodeRepo answers; a worktree not enabled is no code root.
func TestCodeRootOpensTheRepositorysLedger(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ctx := context.Background()
	work := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", work).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	sub := filepath.Join(work, "src")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	p := newPool(t, resolve(t, nil), 4, time.Hour, nil)
	if _, ok, err := p.CodeRoot(ctx, sub); ok || err != nil {
		t.Fatalf("CodeRoot before enable = %v, %v; want not ok", ok, err)
	}
	r, err := coderepo.Find(ctx, work)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Enable(ctx); err != nil {
		t.Fatal(err)
	}
	name, ok, err := p.CodeRoot(ctx, sub)
	if !ok || err != nil || name != CodeProjectPrefix+r.Worktree {
		t.Fatalf("CodeRoot = %q, %v, %v; want %q", name, ok, err, CodeProjectPrefix+r.Worktree)
	}
	l, release, err := p.Ledger(ctx, name, false)
	if err != nil {
		t.Fatalf("opening the code root's ledger: %v", err)
	}
	defer release()
	if _, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "in the code"}, ledger.Author{Name: "test"}); err != nil {
		t.Fatal(err)
	}
	if got := p.CodeRepo(name, func(string) *coderepo.Repo { return nil }); got == nil || got.Worktree != r.Worktree {
		t.Errorf("CodeRepo(%q) = %+v", name, got)
	}
	if names, _ := p.o.Config.Projects(); len(names) != 0 {
		t.Errorf("the code root's ledger went into the data directory: %v", names)
	}
}
