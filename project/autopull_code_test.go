package project

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// openCodeProject makes a Git worktree, enables it, binds its reasoning
// to bound (when not empty) and opens its ledger with the settings env
// gives, as the CLI does inside the worktree.
func openCodeProject(t *testing.T, bound string, env map[string]string) *Project {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	git := exec.Command("git", "init", "-q", "-b", "main", dir)
	git.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	r, err := coderepo.Find(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Enable(ctx); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{config.EnvDataDir: t.TempDir()}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.Resolve(config.Flags{}, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open(cfg.InCode(config.CodeRepo{Worktree: r.Worktree, GitDir: r.GitDir, CommonDir: r.CommonDir}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if bound != "" {
		if _, err := p.Bind(ctx, bound); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestAutoPullInACodeRepository: with THOUGHTBOX_AUTO_PULL naming the
// bound remote, what a teammate's clone pushes reaches this ledger
// without a fetch; named at another remote, auto-pull takes nothing and
// says the reasoning is bound elsewhere, as thoughtbox pull would.
func TestAutoPullInACodeRepository(t *testing.T) {
	remoteDir := bareRemote(t)
	ctx := context.Background()
	a := openCodeProject(t, remoteDir, nil)
	b := openCodeProject(t, remoteDir, map[string]string{config.EnvAutoPull: remoteDir, config.EnvAutoPullInterval: "1s"})

	var log syncBuffer
	p, err := startAutoPull(b, log.logger())
	if err != nil || p == nil {
		t.Fatalf("auto-pull in a code repository: %v, %v", p, err)
	}
	defer p.close()
	s, err := a.Ledger().StartSession(ctx, ledger.CreateSessionParams{Title: "Why the retry waits"}, ledger.Author{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	a.think(t, s.ID, "Backoff doubles from 100 ms.")
	if _, err := a.Push(ctx, "", PushOptions{}); err != nil {
		t.Fatalf("push to the bound remote: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		pulledAfterNow(p)
		if v, err := b.Ledger().View(ctx, s.ID); err == nil && v.Graph.Len() == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B never saw A's session; log:\n%s", log.String())
		}
	}

	other := bareRemote(t)
	c := openCodeProject(t, remoteDir, map[string]string{config.EnvAutoPull: other, config.EnvAutoPullInterval: "1s"})
	var clog syncBuffer
	q, err := startAutoPull(c, clog.logger())
	if err != nil || q == nil {
		t.Fatalf("auto-pull: %v, %v", q, err)
	}
	defer q.close()
	pulledAfterNow(q)
	if got := clog.String(); !strings.Contains(got, "bound to") {
		t.Errorf("auto-pull from an unbound remote logged %q, want the binding's refusal", got)
	}
	if list, err := c.Ledger().List(ctx); err != nil || len(list) != 0 {
		t.Errorf("C's ledger after refused pulls: %v, %v", list, err)
	}
	if _, err := boundTarget(ctx, codeRepo(c), other, "pull"); !errors.Is(err, ErrNotBoundURL) {
		t.Errorf("boundTarget(%s): %v, want ErrNotBoundURL", other, err)
	}
}
