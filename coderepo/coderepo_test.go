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

// TestCommitsFiles: the files Commits lists for each commit are those git
// diff-tree lists (the root commit's, a rename as two paths, none for a
// merge), for one commit and for a range, and the trailers still parse.
func TestCommitsFiles(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "code")
	git(t, filepath.Dir(dir), "init", "-q", "-b", "main", dir)
	put := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("a.txt", "a\n")
	put("lib/b.go", "package b\n")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "root")
	put("a.txt", "a2\n")
	put("lib/c.go", "package b\n\nconst C = 1\n")
	git(t, dir, "rm", "-q", "lib/b.go")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "change", "-m", "Thoughtbox-Session: s-1\nThoughtbox-Session: s-2")
	git(t, dir, "mv", "a.txt", "renamed.txt")
	git(t, dir, "commit", "-q", "-m", "rename")
	git(t, dir, "checkout", "-q", "-b", "side", "HEAD~1")
	put("side.txt", "side\n")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "side")
	git(t, dir, "checkout", "-q", "main")
	git(t, dir, "merge", "-q", "--no-edit", "side")

	r, err := Find(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	all, err := r.Commits(ctx, "main~9..main")
	if err == nil {
		t.Fatalf("a range from a commit that does not exist: %d commits, no error", len(all))
	}
	out, _ := r.git(ctx, "rev-list", "main")
	ids := strings.Fields(out)
	all, err = r.Commits(ctx, ids[len(ids)-1]+"..main")
	if err != nil || len(all) != len(ids)-1 {
		t.Fatalf("range: %d commits, %v; want %d", len(all), err, len(ids)-1)
	}
	for _, id := range ids {
		one, err := r.Commits(ctx, id)
		if err != nil || len(one) != 1 || one[0].ID != id {
			t.Fatalf("Commits(%s) = %+v, %v", id, one, err)
		}
		out, err := r.git(ctx, "diff-tree", "--no-commit-id", "--name-only", "-r", "--root", "--no-renames", id)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Fields(out)
		if strings.Join(one[0].Files, " ") != strings.Join(want, " ") {
			t.Errorf("%s %q: files %q, git diff-tree lists %q", id[:8], one[0].Subject, one[0].Files, want)
		}
		for _, c := range all {
			if c.ID == id && strings.Join(c.Files, " ") != strings.Join(want, " ") {
				t.Errorf("%s in the range: files %q, want %q", id[:8], c.Files, want)
			}
		}
		if one[0].Subject == "change" && strings.Join(one[0].Sessions, " ") != "s-1 s-2" {
			t.Errorf("change: sessions %q, want s-1 s-2", one[0].Sessions)
		}
	}
}
