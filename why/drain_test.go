package why

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@example.com")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// lockedLinks is fakeLinks safe for concurrent use.
type lockedLinks struct {
	mu sync.Mutex
	f  fakeLinks
}

func (l *lockedLinks) AddLinks(ctx context.Context, s string, links []ledger.CodeLink) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.AddLinks(ctx, s, links)
}

func (l *lockedLinks) ReadLinks(ctx context.Context, s string) ([]ledger.CodeLink, string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.ReadLinks(ctx, s)
}

func (l *lockedLinks) LinkTips(ctx context.Context) (map[string]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.LinkTips(ctx)
}

// TestDrainOnceAtOnce: two drains of the same events at once record each
// link once; the same event drained again adds nothing; a rewrite event
// carries the link to the new commit; a commit naming an unknown session
// is a warning and no link.
func TestDrainOnceAtOnce(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ctx := context.Background()
	store, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(store, ledger.Options{})
	sess, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "Drained"}, ledger.Author{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddThought(ctx, sess.ID, ledger.ThoughtInput{Thought: "a.go", NextThoughtNeeded: false, Code: []ledger.CodeRef{{Path: "a.go"}}}, ledger.Author{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n"), 0o644)
	gitIn(t, dir, "add", "a.go")
	gitIn(t, dir, "commit", "-q", "-m", "A", "-m", "Thoughtbox-Session: "+sess.ID)
	first := gitIn(t, dir, "rev-parse", "HEAD")
	gitIn(t, dir, "commit", "-q", "--amend", "-m", "A again")
	second := gitIn(t, dir, "rev-parse", "HEAD")
	gitIn(t, dir, "commit", "-q", "--allow-empty", "-m", "Forged", "-m", "Thoughtbox-Session: 00000000-0000-4000-8000-00000000dead")
	forged := gitIn(t, dir, "rev-parse", "HEAD")
	repo, err := coderepo.Find(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	pending := filepath.Join(repo.GitDir, "thoughtbox", "pending")
	event := func(name, data string) {
		os.MkdirAll(pending, 0o755)
		if err := os.WriteFile(filepath.Join(pending, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	event("c-1", "commit "+first+"\naction commit\n")
	event("c-3", "commit "+forged+"\naction commit\n")
	links := &lockedLinks{f: fakeLinks{links: map[string][]ledger.CodeLink{}, tips: map[string]string{}}}
	var wg sync.WaitGroup
	warned := make([]int, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := &Asker{Repo: repo, Sessions: l, Links: links}
			res, err := a.Drain(ctx, true)
			if err != nil {
				t.Error(err)
				return
			}
			warned[i] = len(res.Warnings)
		}()
	}
	wg.Wait()
	if got := links.f.links[sess.ID]; len(got) != 1 || got[0].Commit != first || got[0].Via != ledger.ViaCommit || len(got[0].Thoughts) != 1 || got[0].PatchID == "" {
		t.Fatalf("links after two drains at once: %+v", got)
	}
	if warned[0]+warned[1] != 1 || len(links.f.links) != 1 {
		t.Errorf("the forged trailer: %v warnings, links of %d sessions", warned, len(links.f.links))
	}
	if repo.HasPending() {
		t.Errorf("events left")
	}
	event("c-1", "commit "+first+"\naction commit\n")
	event("r-2", "rewrite amend\n"+first+" "+second+"\n")
	a := &Asker{Repo: repo, Sessions: l, Links: links}
	if _, err := a.Drain(ctx, true); err != nil {
		t.Fatal(err)
	}
	got := links.f.links[sess.ID]
	if len(got) != 2 || got[1].Commit != second || got[1].Via != ledger.ViaAmend || got[1].From != first {
		t.Fatalf("links after the amend: %+v", got)
	}
	ans, err := a.Commits(ctx, "HEAD~1")
	if err != nil || len(ans.Commits[0].Sessions) != 1 || ans.Commits[0].Sessions[0].LinkedBy != "amend" {
		t.Fatalf("why of the amended commit: %+v, %v", ans, err)
	}
}
