package coderepo

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestWorktrees: a linked worktree shares the common dir (and so the
// setting and the ledger) but keeps its own active session; the hooks'
// reading of the git dir, without git, agrees with git's.
func TestWorktrees(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	ctx := context.Background()
	root := t.TempDir()
	main := filepath.Join(root, "main")
	git(t, root, "init", "-q", "-b", "main", main)
	git(t, main, "commit", "-q", "--allow-empty", "-m", "first")
	git(t, main, "worktree", "add", "-q", filepath.Join(root, "linked"))

	if _, err := Find(ctx, root); !errors.Is(err, ErrNotARepository) {
		t.Fatalf("Find outside a worktree: %v", err)
	}
	m, err := Find(ctx, main)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(main, "sub"), 0o755)
	l, err := Find(ctx, filepath.Join(root, "linked"))
	if err != nil {
		t.Fatal(err)
	}
	if m.CommonDir != l.CommonDir || m.GitDir == l.GitDir {
		t.Fatalf("main %+v, linked %+v: want one common dir and two git dirs", m, l)
	}
	if changed, err := m.Enable(ctx); err != nil || !changed {
		t.Fatalf("Enable: %v, %v", changed, err)
	}
	if changed, err := l.Enable(ctx); err != nil || changed {
		t.Fatalf("Enable from the linked worktree: %v, %v; want already enabled", changed, err)
	}
	if err := l.SetActiveSession("abc-1"); err != nil {
		t.Fatal(err)
	}
	if a, _ := m.ActiveSession(); a != "" {
		t.Errorf("main worktree's active session %q, want none", a)
	}
	for _, r := range []*Repo{m, l} {
		gd, err := HookGitDir(r.Worktree, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ActiveSessionIn(gd), map[*Repo]string{m: "", l: "abc-1"}[r]; got != want {
			t.Errorf("%s: the hook reads %q, want %q", r.Worktree, got, want)
		}
	}
	if rel, err := m.RelPath(filepath.Join(main, "sub"), "../a/./b.go"); err != nil || rel != "a/b.go" {
		t.Errorf("RelPath: %q, %v", rel, err)
	}
	if _, err := m.RelPath(main, "../x.go"); err == nil {
		t.Error("RelPath took a path outside the worktree")
	}
	if _, err := m.ResolveCommit(ctx, "deadbeef"); !errors.Is(err, ErrNoCommit) {
		t.Errorf("ResolveCommit of an unknown id: %v", err)
	}
	if changed, err := l.Disable(ctx); err != nil || !changed {
		t.Fatalf("Disable: %v, %v", changed, err)
	}
	if on, err := m.Enabled(ctx); err != nil || on {
		t.Fatalf("Enabled after Disable: %v, %v", on, err)
	}
}
