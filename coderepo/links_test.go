package coderepo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLinkHooksLeaveEvents: post-commit and post-rewrite (installed over
// a user's post-rewrite, which still gets git's map on its stdin) leave
// one pending event each, read back in order; an amend's commit event
// says it rewrites. The drain they start is a command that does not
// exist here, which changes nothing for the commit.
func TestLinkHooksLeaveEvents(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	ctx := context.Background()
	work := t.TempDir()
	git(t, work, "init", "-q", "-b", "main")
	r, err := Find(ctx, work)
	if err != nil {
		t.Fatal(err)
	}
	hooks := filepath.Join(r.CommonDir, "hooks")
	os.MkdirAll(hooks, 0o755)
	user := "#!/bin/sh\ncat > \"$PWD/user-saw\"\n"
	if err := os.WriteFile(filepath.Join(hooks, "post-rewrite"), []byte(user), 0o755); err != nil {
		t.Fatal(err)
	}
	installed, err := r.InstallHooks(ctx, filepath.Join(t.TempDir(), "no-such-thoughtbox"))
	if err != nil || len(installed) != len(Hooks) || installed[2].Name != "post-rewrite" || installed[2].Chained == "" {
		t.Fatalf("InstallHooks: %+v, %v", installed, err)
	}
	git(t, work, "commit", "-q", "--allow-empty", "-m", "one")
	git(t, work, "commit", "-q", "--amend", "--allow-empty", "-m", "one, amended")

	events, err := r.PendingEvents()
	if err != nil || len(events) != 3 {
		t.Fatalf("PendingEvents: %+v, %v; want the commit, the amended commit and the rewrite", events, err)
	}
	first, amended, rewrite := events[0], events[1], events[2]
	if rewrite.Kind != EventAmend || len(rewrite.Rewritten) != 1 {
		// Equal modification times sort by name: c- before r-.
		t.Fatalf("events %+v", events)
	}
	if first.Kind != EventCommit || first.Rewriting() || !amended.Rewriting() {
		t.Errorf("commit events %+v and %+v: want the second to say it rewrites", first, amended)
	}
	if rewrite.Rewritten[0] != [2]string{first.Commit, amended.Commit} {
		t.Errorf("rewrite %v, want %s -> %s", rewrite.Rewritten, first.Commit, amended.Commit)
	}
	saw, err := os.ReadFile(filepath.Join(work, "user-saw"))
	if err != nil || strings.TrimSpace(string(saw)) != first.Commit+" "+amended.Commit {
		t.Errorf("the user's post-rewrite read %q, %v", saw, err)
	}
	if n := r.PendingCount(); n != 3 {
		t.Errorf("PendingCount %d, want 3", n)
	}
	for _, e := range events {
		if err := e.Done(); err != nil {
			t.Fatal(err)
		}
	}
	if r.HasPending() {
		t.Errorf("events left after Done")
	}

	// In a linked worktree (HEAD there, its branch's ref in the common
	// dir) and on a detached HEAD, the hook reads the new commit's id
	// without git.
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, work, "worktree", "add", "-q", "-b", "wtb", wt)
	git(t, wt, "commit", "-q", "--allow-empty", "-m", "in wt")
	git(t, work, "checkout", "-q", "--detach")
	git(t, work, "commit", "-q", "--allow-empty", "-m", "detached")
	events, err = r.PendingEvents()
	if err != nil || len(events) != 2 {
		t.Fatalf("PendingEvents: %+v, %v", events, err)
	}
	for _, e := range events {
		dir := work
		if strings.Contains(e.Path, "worktrees") {
			dir = wt
		}
		if head := gitOut(t, dir, "rev-parse", "HEAD"); e.Commit != head || e.Action != "commit" {
			t.Errorf("event %+v, want commit %s", e, head)
		}
	}
}

// TestPendingEventsDropsDamage: an old file that is no event is removed;
// a file perhaps still being written (a dot name, or a young one) is left
// alone.
func TestPendingEventsDropsDamage(t *testing.T) {
	dir := t.TempDir()
	r := &Repo{Worktree: dir, GitDir: dir, CommonDir: dir}
	p := filepath.Join(dir, "thoughtbox", "pending")
	os.MkdirAll(p, 0o755)
	id := strings.Repeat("ab", 20)
	files := map[string]string{
		"c-1":     "commit " + id + "\naction cherry-pick\n",
		"r-2":     "rewrite rebase\n" + id + " " + strings.Repeat("cd", 20) + "\nnot a pair\n",
		"bad":     "commit nothex\n",
		"bad2":    "rewrite sideways\n",
		".c-temp": "commit " + id + "\n",
	}
	old := time.Now().Add(-time.Minute)
	for name, data := range files {
		os.WriteFile(filepath.Join(p, name), []byte(data), 0o644)
		os.Chtimes(filepath.Join(p, name), old, old)
	}
	// A file that does not parse yet but was just written: perhaps the
	// hook is still writing it.
	os.WriteFile(filepath.Join(p, "c-young"), nil, 0o644)
	events, err := r.PendingEvents()
	if err != nil || len(events) != 2 {
		t.Fatalf("PendingEvents: %+v, %v", events, err)
	}
	for _, e := range events {
		switch e.Kind {
		case EventCommit:
			if e.Commit != id || e.Action != "cherry-pick" || e.Rewriting() {
				t.Errorf("commit event %+v", e)
			}
		case EventRebase:
			if len(e.Rewritten) != 1 {
				t.Errorf("rewrite event %+v", e)
			}
		default:
			t.Errorf("event %+v", e)
		}
	}
	for _, gone := range []string{"bad", "bad2"} {
		if _, err := os.Stat(filepath.Join(p, gone)); err == nil {
			t.Errorf("%s was left", gone)
		}
	}
	for _, kept := range []string{".c-temp", "c-young"} {
		if _, err := os.Stat(filepath.Join(p, kept)); err != nil {
			t.Errorf("%s, perhaps being written, was removed: %v", kept, err)
		}
	}
}

// TestLockLinks: a second drain does not get the lock while the first
// holds it.
func TestLockLinks(t *testing.T) {
	dir := t.TempDir()
	r := &Repo{Worktree: dir, GitDir: dir, CommonDir: dir}
	ctx := context.Background()
	unlock, ok, err := r.LockLinks(ctx, false)
	if err != nil || !ok {
		t.Fatalf("first: %v, %v", ok, err)
	}
	if _, ok, err := r.LockLinks(ctx, false); err != nil || ok {
		t.Fatalf("second while held: %v, %v", ok, err)
	}
	unlock()
	unlock2, ok, err := r.LockLinks(ctx, true)
	if err != nil || !ok {
		t.Fatalf("after: %v, %v", ok, err)
	}
	unlock2()
}
