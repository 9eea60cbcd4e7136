package gitstore_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/ledger/storetest"
)

// codeRepo makes a non-bare repository with one commit on main, as a
// user's project looks, and returns its worktree and its .git folder.
func codeRepo(t *testing.T) (work, gitDir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed; this test needs it")
	}
	work = t.TempDir()
	codeGit(t, work, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(work, "a.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	codeGit(t, work, "add", "a.go")
	codeGit(t, work, "commit", "-q", "-m", "first")
	return work, filepath.Join(work, ".git")
}

// git runs the git CLI in dir with an identity and no user or system
// configuration, and returns its output.
func codeGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func openInCode(t *testing.T, gitDir string) *gitstore.Store {
	t.Helper()
	s, err := gitstore.Open(gitDir, gitstore.Options{Layout: gitstore.InCode, FlushInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStoreContractInCode runs the store contract on the code layout, in
// the .git folder of a repository with a worktree and commits of its own.
func TestStoreContractInCode(t *testing.T) {
	storetest.Run(t, func(t *testing.T) ledger.Store {
		_, gitDir := codeRepo(t)
		s := openInCode(t, gitDir)
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestInCodeSurvivesGitMaintenance records a session in a code repository,
// runs git's own gc, repack and maintenance between thoughts (the store
// stays open), and checks that nothing is lost, that fsck --strict is
// clean, that no branch shows and that a clone carries no reasoning.
func TestInCodeSurvivesGitMaintenance(t *testing.T) {
	work, gitDir := codeRepo(t)
	ctx := context.Background()
	s := openInCode(t, gitDir)
	defer s.Close()
	l := ledger.New(s, ledger.Options{})
	sess, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "Why a.go"}, ledger.Author{Name: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	maintenance := [][]string{
		{"gc", "--aggressive", "--prune=now", "-q"},
		{"repack", "-a", "-d", "-q"},
		{"maintenance", "run"},
		{"pack-refs", "--all"},
		{"gc", "-q"},
	}
	n := 0
	for _, m := range maintenance {
		for range 3 {
			n++
			if _, err := l.AddThought(ctx, sess.ID, ledger.ThoughtInput{Thought: fmt.Sprintf("thought %d", n), NextThoughtNeeded: true}, ledger.Author{Name: "agent"}); err != nil {
				t.Fatalf("thought %d after git %s: %v", n, m[0], err)
			}
		}
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		codeGit(t, work, m...)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	codeGit(t, work, "fsck", "--strict", "--no-dangling")
	main := "refs/thoughtbox/v1/sessions/" + sess.ID + "/main"
	if got := strings.Count(codeGit(t, work, "log", "--format=%s", main), "\n"); got != n+1 {
		t.Errorf("git log %s: %d commits, want %d thoughts and the session's start", main, got, n+1)
	}
	if b := codeGit(t, work, "branch", "-a"); strings.TrimSpace(b) != "* main" {
		t.Errorf("git branch -a shows more than main:\n%s", b)
	}
	if refs := codeGit(t, work, "for-each-ref", "--format=%(refname)", "refs/heads/"); strings.TrimSpace(refs) != "refs/heads/main" {
		t.Errorf("refs/heads holds more than main:\n%s", refs)
	}

	// A second store (another process) reads it all back from what git left.
	s.Close()
	s2 := openInCode(t, gitDir)
	defer s2.Close()
	v, err := ledger.New(s2, ledger.Options{}).Load(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Session.ThoughtCount; got != n {
		t.Errorf("reloaded %d thoughts, want %d", got, n)
	}

	clone := filepath.Join(t.TempDir(), "clone")
	codeGit(t, work, "clone", "-q", "file://"+work, clone)
	if refs := codeGit(t, clone, "for-each-ref", "--format=%(refname)"); strings.Contains(refs, "thoughtbox") {
		t.Errorf("a clone fetched reasoning refs:\n%s", refs)
	}
	tip := strings.TrimSpace(codeGit(t, work, "rev-parse", main))
	if err := exec.Command("git", "-C", clone, "cat-file", "-e", tip).Run(); err == nil {
		t.Errorf("a clone holds the session's tip %s", tip)
	}
}
