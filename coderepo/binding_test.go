package coderepo

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestBinding: the binding is read from the repository's own config only
// (a global value binds nothing), replaced by a second bind and removed
// by unbind; a remote's push URLs are its pushurls, or its url.
func TestBinding(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	ctx := context.Background()
	root := t.TempDir()
	global := filepath.Join(root, "global")
	if err := os.WriteFile(global, []byte("[thoughtbox]\n\tremote = /elsewhere.git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	dir := filepath.Join(root, "app")
	git(t, root, "init", "-q", "-b", "main", dir)
	r, err := Find(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := r.Binding(ctx); err != nil || b != "" {
		t.Fatalf("Binding with only a global value: %q, %v; want none", b, err)
	}
	if err := r.Bind(ctx, "/a.git"); err != nil {
		t.Fatal(err)
	}
	if err := r.Bind(ctx, "/b.git"); err != nil {
		t.Fatal(err)
	}
	if b, err := r.Binding(ctx); err != nil || b != "/b.git" {
		t.Fatalf("Binding: %q, %v; want /b.git", b, err)
	}
	if changed, err := r.Unbind(ctx); err != nil || !changed {
		t.Fatalf("Unbind: %v, %v", changed, err)
	}
	if changed, err := r.Unbind(ctx); err != nil || changed {
		t.Fatalf("second Unbind: %v, %v; want nothing to do", changed, err)
	}

	git(t, dir, "remote", "add", "origin", "/team.git")
	fetch, push, err := r.RemoteURLs(ctx, "origin")
	if err != nil || !slices.Equal(fetch, []string{"/team.git"}) || !slices.Equal(push, fetch) {
		t.Fatalf("RemoteURLs: %v %v %v", fetch, push, err)
	}
	git(t, dir, "remote", "set-url", "--add", "--push", "origin", "/one.git")
	git(t, dir, "remote", "set-url", "--add", "--push", "origin", "/two.git")
	if _, push, err = r.RemoteURLs(ctx, "origin"); err != nil || !slices.Equal(push, []string{"/one.git", "/two.git"}) {
		t.Fatalf("push URLs %v, %v", push, err)
	}
	for _, name := range []string{"nosuch", "-c", "a=b"} {
		if _, _, err := r.RemoteURLs(ctx, name); !errors.Is(err, ErrNoGitRemote) {
			t.Errorf("RemoteURLs(%q): %v; want ErrNoGitRemote", name, err)
		}
	}
}

// TestPrivateSessions: the list is shared by the worktrees, keeps each id
// once, and marking twice changes nothing.
func TestPrivateSessions(t *testing.T) {
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
	m, err := Find(ctx, main)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Find(ctx, filepath.Join(root, "linked"))
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		r       *Repo
		id      string
		private bool
		changed bool
		want    []string
	}{
		{m, "a", true, true, []string{"a"}},
		{l, "b", true, true, []string{"a", "b"}},
		{m, "a", true, false, []string{"a", "b"}},
		{l, "a", false, true, []string{"b"}},
		{m, "c", false, false, []string{"b"}},
	} {
		changed, err := step.r.SetPrivate(step.id, step.private)
		if err != nil || changed != step.changed {
			t.Fatalf("SetPrivate(%s, %v): %v, %v; want changed %v", step.id, step.private, changed, err, step.changed)
		}
		for _, r := range []*Repo{m, l} {
			if got, err := r.PrivateSessions(); err != nil || !slices.Equal(got, step.want) {
				t.Fatalf("after SetPrivate(%s, %v): %v, %v; want %v", step.id, step.private, got, err, step.want)
			}
		}
	}
}
