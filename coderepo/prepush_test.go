package coderepo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitOutput(context.Background(), dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "A", "GIT_COMMITTER_EMAIL": "a@example.com"} {
		t.Setenv(k, v)
	}
}

// TestPrePushHookInput: the pre-push hook we install hands git's input
// to the user's chained hook and to thoughtbox alike; thoughtbox's
// refusal status stops the push, any other failure of ours is a warning
// and the push goes on.
func TestPrePushHookInput(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	root := t.TempDir()
	bare, work := filepath.Join(root, "bare.git"), filepath.Join(root, "work")
	git(t, root, "init", "-q", "--bare", bare)
	git(t, root, "init", "-q", "-b", "main", work)
	git(t, work, "commit", "-q", "--allow-empty", "-m", "first")
	git(t, work, "remote", "add", "origin", bare)
	hooks := filepath.Join(work, ".git", "hooks")
	os.MkdirAll(hooks, 0o755)
	mine := "#!/bin/sh\necho \"$1 $2\" >" + filepath.Join(root, "user-args") + "\ncat >" + filepath.Join(root, "user-in") + "\n"
	if err := os.WriteFile(filepath.Join(hooks, "pre-push"), []byte(mine), 0o755); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(root, "fake-thoughtbox")
	script := "#!/bin/sh\necho \"$@\" >" + filepath.Join(root, "ours-args") + "\ncat >" + filepath.Join(root, "ours-in") + "\nexit $(cat " + filepath.Join(root, "status") + ")\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := Find(ctx, work)
	if err != nil {
		t.Fatal(err)
	}
	installed, err := r.InstallHooks(ctx, fake)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(installed, func(h InstalledHook) bool { return h.Name == "pre-push" }); i < 0 || installed[i].Chained == "" {
		t.Fatalf("installed %+v: want pre-push, chaining the user's", installed)
	}

	os.WriteFile(filepath.Join(root, "status"), []byte("1"), 0o644)
	cmd := exec.Command("git", "-C", work, "push", "-q", "origin", "main")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("push with our hook failing: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "pre-push hook failed; the push goes on") {
		t.Fatalf("push output %q: want the warning", out)
	}
	head := gitOut(t, work, "rev-parse", "HEAD")
	want := "refs/heads/main " + head + " refs/heads/main " + strings.Repeat("0", 40) + "\n"
	for _, f := range []string{"user-in", "ours-in"} {
		got, _ := os.ReadFile(filepath.Join(root, f))
		if string(got) != want {
			t.Fatalf("%s = %q, want %q", f, got, want)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(root, "ours-args")); string(got) != "hook pre-push origin "+bare+"\n" {
		t.Fatalf("thoughtbox ran with %q", got)
	}
	if gitOut(t, bare, "rev-parse", "main") != head {
		t.Fatal("the push did not reach the remote")
	}

	git(t, work, "commit", "-q", "--allow-empty", "-m", "second")
	os.WriteFile(filepath.Join(root, "status"), []byte("3"), 0o644)
	if out, err := exec.Command("git", "-C", work, "push", "-q", "origin", "main").CombinedOutput(); err == nil {
		t.Fatalf("push went on though thoughtbox refused it:\n%s", out)
	}
	if gitOut(t, bare, "rev-parse", "main") != head {
		t.Fatal("a refused push moved the remote")
	}
}

// TestPushedSessions: the sessions a push names are those of the commits
// the remote lacks, read from the final trailer block only.
func TestPushedSessions(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	root := t.TempDir()
	bare, work := filepath.Join(root, "bare.git"), filepath.Join(root, "work")
	git(t, root, "init", "-q", "--bare", bare)
	git(t, root, "init", "-q", "-b", "main", work)
	git(t, work, "remote", "add", "origin", bare)
	git(t, work, "commit", "-q", "--allow-empty", "-m", "one\n\nThoughtbox-Session: s-1")
	git(t, work, "push", "-q", "origin", "main")
	old := gitOut(t, work, "rev-parse", "HEAD")
	git(t, work, "commit", "-q", "--allow-empty", "-m", "two\n\nThoughtbox-Session: s-2\nThoughtbox-Session: s-3")
	git(t, work, "commit", "-q", "--allow-empty", "-m", "three\n\nThoughtbox-Session: s-2 in prose, not a trailer\n\nSigned-off-by: A")
	git(t, work, "commit", "-q", "--allow-empty", "-m", "four\n\nThoughtbox-Session: s-3")
	head := gitOut(t, work, "rev-parse", "HEAD")
	r, err := Find(ctx, work)
	if err != nil {
		t.Fatal(err)
	}
	in := "refs/heads/main " + head + " refs/heads/main " + old + "\n"
	updates, err := ParsePrePush(strings.NewReader(in))
	if err != nil || len(updates) != 1 {
		t.Fatalf("ParsePrePush: %+v, %v", updates, err)
	}
	for _, remote := range []string{"origin", bare} {
		got, err := r.PushedSessions(ctx, remote, updates)
		if err != nil || !slices.Equal(got, []string{"s-3", "s-2"}) {
			t.Fatalf("PushedSessions(%s) = %v, %v; want [s-3 s-2]", remote, got, err)
		}
	}
	// A new branch: its remote sha is zeros; the remote-tracking branch
	// still says what the remote has.
	newBranch := []RefUpdate{{LocalRef: "refs/heads/topic", LocalSHA: head, RemoteRef: "refs/heads/topic", RemoteSHA: strings.Repeat("0", 40)}}
	if got, _ := r.PushedSessions(ctx, "origin", newBranch); !slices.Equal(got, []string{"s-3", "s-2"}) {
		t.Fatalf("new branch: %v", got)
	}
	if got, _ := r.PushedSessions(ctx, bare, newBranch); !slices.Equal(got, []string{"s-3", "s-2", "s-1"}) {
		t.Fatalf("new branch to a URL: %v, want every commit's", got)
	}
	// A remote tip this clone has never seen is no error.
	unknown := []RefUpdate{{LocalRef: "refs/heads/main", LocalSHA: head, RemoteRef: "refs/heads/main", RemoteSHA: strings.Repeat("ab", 20)}}
	if _, err := r.PushedSessions(ctx, "origin", unknown); err != nil {
		t.Fatal(err)
	}
	deleting := []RefUpdate{{LocalRef: "(delete)", LocalSHA: strings.Repeat("0", 40), RemoteRef: "refs/heads/x", RemoteSHA: old}}
	if got, err := r.PushedSessions(ctx, "origin", deleting); err != nil || len(got) != 0 {
		t.Fatalf("a deletion names %v, %v", got, err)
	}
	if _, err := ParsePrePush(strings.NewReader("refs/heads/main nothex refs/heads/main " + old + "\n")); err == nil || !strings.Contains(err.Error(), "expected <local ref>") {
		t.Fatalf("bad input: %v", err)
	}
}

// TestPushURL: the URL of this run of the hook, as the config spells it,
// for a remote with two push URLs and an insteadOf rewrite.
func TestPushURL(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	root := t.TempDir()
	work := filepath.Join(root, "work")
	git(t, root, "init", "-q", "-b", "main", work)
	git(t, work, "remote", "add", "origin", "team:app.git")
	git(t, work, "remote", "set-url", "--add", "--push", "origin", "team:app.git")
	git(t, work, "remote", "set-url", "--add", "--push", "origin", "/srv/mirror.git")
	git(t, work, "config", "url./srv/team/.insteadOf", "team:")
	r, err := Find(ctx, work)
	if err != nil {
		t.Fatal(err)
	}
	for url, want := range map[string]string{"/srv/team/app.git": "team:app.git", "/srv/mirror.git": "/srv/mirror.git", "/elsewhere.git": "/elsewhere.git"} {
		if got, err := r.PushURL(ctx, "origin", url); err != nil || got != want {
			t.Fatalf("PushURL(origin, %s) = %q, %v; want %q", url, got, err, want)
		}
	}
	if got, _ := r.PushURL(ctx, "/x.git", "/x.git"); got != "/x.git" {
		t.Fatalf("a URL given directly: %q", got)
	}
}

// TestPushQueue: queued sessions are listed once, in order, and leave
// the queue when sent; an empty queue leaves no file.
func TestPushQueue(t *testing.T) {
	r := &Repo{CommonDir: t.TempDir()}
	if q, err := r.PushQueue(); err != nil || q != nil {
		t.Fatalf("empty queue: %v, %v", q, err)
	}
	r.Queue([]string{"a", "b"})
	r.Queue([]string{"b", "c"})
	if q, _ := r.PushQueue(); !slices.Equal(q, []string{"a", "b", "c"}) {
		t.Fatalf("queue %v", q)
	}
	r.Unqueue([]string{"b"})
	if q, _ := r.PushQueue(); !slices.Equal(q, []string{"a", "c"}) {
		t.Fatalf("after unqueue b: %v", q)
	}
	r.Unqueue(nil)
	if _, err := os.Stat(r.queueFile()); !os.IsNotExist(err) {
		t.Fatalf("an empty queue left its file: %v", err)
	}
}
