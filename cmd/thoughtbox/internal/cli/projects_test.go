package cli

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/gateway"
)

func newProjects(t *testing.T, max int, idle time.Duration, now func() time.Time) *projectLedgers {
	t.Helper()
	dir := t.TempDir()
	cfg, err := config.Resolve(config.Flags{DataDir: dir}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	p := &projectLedgers{cfg: cfg, log: slog.New(slog.DiscardHandler), max: max, idle: idle, now: now, open: map[string]*projectLedger{}}
	t.Cleanup(p.close)
	return p
}

func openFDs(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd to count descriptors")
	}
	return len(entries)
}

// TestProjectsBounded navigates to many new projects, as a hostile client
// would, and checks that the open projects and descriptors stay bounded
// while every project's data stays on disk.
func TestProjectsBounded(t *testing.T) {
	p := newProjects(t, 4, time.Hour, time.Now)
	ctx := context.Background()
	// Warm up (the first open loads shared state), then count.
	_, release, err := p.ledger(ctx, "warm", true)
	if err != nil {
		t.Fatal(err)
	}
	release()
	before := openFDs(t)
	for i := range 60 {
		name := "p" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		_, release, err := p.ledger(ctx, name, true)
		if err != nil {
			t.Fatalf("project %d: %v", i, err)
		}
		release()
	}
	if n := p.count(); n > 4 {
		t.Errorf("%d projects open, want at most 4", n)
	}
	if after := openFDs(t); after > before+4*8 {
		t.Errorf("descriptors grew from %d to %d after 60 projects", before, after)
	}
	names, _ := p.cfg.Projects()
	if len(names) != 61 {
		t.Errorf("%d projects on disk, want 61", len(names))
	}
	// Closed projects open again.
	if _, release, err := p.ledger(ctx, "paa", false); err != nil {
		t.Errorf("reopening a closed project: %v", err)
	} else {
		release()
	}
}

// TestProjectsNotCreatedUnlessAsked checks the error for a missing project
// names the existing ones and creates nothing.
func TestProjectsNotCreatedUnlessAsked(t *testing.T) {
	p := newProjects(t, 4, time.Hour, time.Now)
	ctx := context.Background()
	_, release, err := p.ledger(ctx, "alpha", true)
	if err != nil {
		t.Fatal(err)
	}
	release()
	_, _, err = p.ledger(ctx, "alhpa", false)
	if !errors.Is(err, gateway.ErrNoProject) || !strings.Contains(err.Error(), "existing projects: alpha") {
		t.Errorf("missing project: %v", err)
	}
	if names, _ := p.cfg.Projects(); len(names) != 1 {
		t.Errorf("projects on disk: %v", names)
	}
}

// TestProjectsHeldAreKept checks that a project a call holds is never
// closed, for room or for idleness, and that idle ones are.
func TestProjectsHeldAreKept(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newProjects(t, 2, time.Minute, func() time.Time { return clock })
	ctx := context.Background()
	la, releaseA, err := p.ledger(ctx, "a", true)
	if err != nil {
		t.Fatal(err)
	}
	_, releaseB, err := p.ledger(ctx, "b", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.ledger(ctx, "c", true); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("a third project with two held and a cap of 2: %v", err)
	}
	releaseB()
	clock = clock.Add(2 * time.Minute)
	p.closeIdle()
	if _, ok := p.open["b"]; ok {
		t.Errorf("idle project b still open")
	}
	if _, ok := p.open["a"]; !ok {
		t.Fatalf("held project a was closed")
	}
	if _, err := la.List(ctx); err != nil {
		t.Errorf("held project unusable: %v", err)
	}
	releaseA()
	releaseA() // a second release is harmless
	if p.open["a"].users != 0 {
		t.Errorf("users = %d after release", p.open["a"].users)
	}
}

// TestReadLimits checks the defaults and that a bad value names its
// variable.
func TestReadLimits(t *testing.T) {
	env := map[string]string{}
	cfgWith := func() *config.Config {
		cfg, err := config.Resolve(config.Flags{DataDir: t.TempDir()}, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	l, err := readLimits(cfgWith())
	if err != nil || l.readTimeout != 30*time.Second || l.maxConns != 512 || l.rootsTimeout != 10*time.Second || l.maxProjects != 16 {
		t.Fatalf("defaults: %+v, %v", l, err)
	}
	env[EnvHTTPMaxConns], env[EnvAllowedOrigins] = "64", "https://a.example, http://b.example:8080"
	if l, err = readLimits(cfgWith()); err != nil || l.maxConns != 64 || len(l.origins) != 2 {
		t.Errorf("set: %+v, %v", l, err)
	}
	for k, v := range map[string]string{EnvHTTPReadTimeout: "soon", EnvHTTPMaxConns: "0", EnvAllowedOrigins: "https://a.example/path", EnvRootsTimeout: "-1s"} {
		env = map[string]string{k: v}
		if _, err := readLimits(cfgWith()); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
}
