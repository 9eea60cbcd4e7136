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

// TestSessionCommits: the commits whose final trailer block names a
// session are listed from branches, tags and remote
// branches; a message that only quotes the id, a commit reachable only
// from refs/thoughtbox and another session's commits are not; limit
// bounds the list and says there is more.
func TestSessionCommits(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "code")
	git(t, filepath.Dir(dir), "init", "-q", "-b", "main", dir)
	r, err := Find(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, more, err := r.SessionCommits(ctx, "s-1", 10); err != nil || len(got) != 0 || more {
		t.Fatalf("in an empty repository: %v, %v, %v", got, more, err)
	}
	commit := func(subject, body string) string {
		t.Helper()
		git(t, dir, "commit", "-q", "--allow-empty", "-m", subject, "-m", body)
		out, err := r.git(ctx, "rev-parse", "HEAD")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	first := commit("first", "Thoughtbox-Session: s-1")
	commit("quotes it", "We talked about s-1 here.\n\nReviewed-by: someone")
	commit("other", "Thoughtbox-Session: s-2")
	second := commit("second", "Thoughtbox-Session: s-2\nThoughtbox-Session: s-1")
	git(t, dir, "checkout", "-q", "-b", "side")
	onSide := commit("on a branch", "Thoughtbox-Session: s-1")
	git(t, dir, "checkout", "-q", "main")
	git(t, dir, "update-ref", "refs/remotes/origin/feature", onSide)
	git(t, dir, "branch", "-q", "-D", "side")
	git(t, dir, "checkout", "-q", "--detach")
	tagged := commit("tagged", "Thoughtbox-Session: s-1")
	git(t, dir, "tag", "v1")
	hidden := commit("ledger only", "Thoughtbox-Session: s-1")
	git(t, dir, "update-ref", "refs/thoughtbox/v1/sessions/s-1/main", hidden)
	git(t, dir, "checkout", "-q", "main")

	got, more, err := r.SessionCommits(ctx, "s-1", 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range got {
		ids = append(ids, c.ID)
	}
	// The commits were made within a second, so git's order among them
	// is its own: compare them as sets.
	slices.Sort(ids)
	want := []string{tagged, onSide, second, first}
	slices.Sort(want)
	if strings.Join(ids, " ") != strings.Join(want, " ") || more {
		t.Errorf("s-1: %q (more %v), want %q", ids, more, want)
	}
	got, more, err = r.SessionCommits(ctx, "s-1", 2)
	if err != nil || len(got) != 2 || !more {
		t.Errorf("limit 2: %+v, more %v, %v", got, more, err)
	}
	for _, bad := range []string{"", "-x", "a\nb"} {
		if _, _, err := r.SessionCommits(ctx, bad, 10); err == nil {
			t.Errorf("session id %q: no error", bad)
		}
	}
}
