package observatory_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/observatory"
	"github.com/thoughtbox/thoughtbox/project"
)

// codeFixture is an Observatory over the ledger of an enabled code
// repository, opened as the CLI opens it inside the worktree.
type codeFixture struct {
	t    *testing.T
	dir  string
	repo *coderepo.Repo
	l    *ledger.Ledger
	srv  *server
	ctx  context.Context
}

// gitIn runs git in dir with its own identity and no global config, and
// returns its output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Dev", "GIT_AUTHOR_EMAIL=dev@example.com", "GIT_COMMITTER_NAME=Dev", "GIT_COMMITTER_EMAIL=dev@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func newCodeFixture(t *testing.T, cfg observatory.Config) *codeFixture {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "code")
	gitIn(t, filepath.Dir(dir), "init", "-q", "-b", "main", dir)
	repo, err := coderepo.Find(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Enable(ctx); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"THOUGHTBOX_DATA_DIR": t.TempDir()}
	base, err := config.Resolve(config.Flags{}, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{}
	proj, err := project.Open(base.InCode(config.CodeRepo{Worktree: repo.Worktree, GitDir: repo.GitDir, CommonDir: repo.CommonDir}), project.Options{Events: r})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Code = repo
	cfg.Authors = proj
	obs := observatory.New(proj.Ledger(), cfg)
	r.o.Store(obs)
	srv := serve(t, obs)
	t.Cleanup(func() {
		obs.Close()
		srv.Close()
		proj.Close()
	})
	return &codeFixture{t: t, dir: dir, repo: repo, l: proj.Ledger(), srv: srv, ctx: ctx}
}

func (f *codeFixture) write(name, text string) {
	f.t.Helper()
	p := filepath.Join(f.dir, filepath.FromSlash(name))
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// commit commits everything, its message ending with the trailers git
// writes for --trailer (the hooks' own path is tested in gateway and cmd).
func (f *codeFixture) commit(subject string, trailers ...string) string {
	f.t.Helper()
	args := []string{"commit", "-q", "-m", subject}
	for _, tr := range trailers {
		args = append(args, "--trailer", tr)
	}
	gitIn(f.t, f.dir, "add", "-A")
	gitIn(f.t, f.dir, args...)
	return gitIn(f.t, f.dir, "rev-parse", "HEAD")
}

// reasonedCommit records a session about lib.go's lines 2-3, then a
// commit linked to it (the file's second version), and returns both ids.
func (f *codeFixture) reasonedCommit() (session, commit string) {
	f.t.Helper()
	f.write("lib.go", "package lib\n\nfunc Old() {}\n")
	f.commit("Start lib")
	s, err := f.l.StartSession(f.ctx, ledger.CreateSessionParams{Title: "Why Retry backs off"}, agent)
	if err != nil {
		f.t.Fatal(err)
	}
	add := func(in ledger.ThoughtInput) {
		if _, err := f.l.AddThought(f.ctx, s.ID, in, agent); err != nil {
			f.t.Fatal(err)
		}
	}
	add(ledger.ThoughtInput{Thought: "Retries hammer the server when it is down.", NextThoughtNeeded: true})
	add(ledger.ThoughtInput{Thought: "Retry in lib.go should wait longer each time.", NextThoughtNeeded: true,
		Code: []ledger.CodeRef{{Path: "lib.go", From: 3, To: 4}}})
	add(ledger.ThoughtInput{Thought: "Tried a fixed delay first: it still synchronises clients.", NextThoughtNeeded: true,
		BranchID: "fixed-delay", BranchFromThought: ptr(2)})
	add(ledger.ThoughtInput{Thought: "Conclusion: exponential backoff with jitter, capped at a minute.", NextThoughtNeeded: false})
	f.write("lib.go", "package lib\n\n// Retry waits twice as long each time, with jitter.\nfunc Retry() {}\n")
	return s.ID, f.commit("Retry with exponential backoff", coderepo.SessionTrailer+": "+s.ID)
}

// codeGet fetches path and decodes the body; it returns the status.
func codeGet(t *testing.T, url string, out any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("GET %s: %s, not JSON: %v\n%s", url, resp.Status, err, body)
	}
	return resp.StatusCode
}

// TestCodeEndpoints asks the code endpoints about a real repository whose
// commit names a session: the commit's reasoning, the file's line ranges
// with their commit and session, the session's linked commits; bad input
// is a 400 or 404 naming the field; a standalone ledger has no code pages.
func TestCodeEndpoints(t *testing.T) {
	f := newCodeFixture(t, observatory.Config{HTTPAPI: true})
	f.write("no-newline.txt", "one\ntwo")
	sid, commit := f.reasonedCommit()
	base := f.srv.URL

	var info map[string]bool
	if st := codeGet(t, base+"/ui/code", &info); st != 200 || !info["repository"] {
		t.Errorf("/ui/code: %d %v", st, info)
	}
	for _, prefix := range []string{"/ui/code", "/api/code"} {
		var ans struct {
			Commits []struct {
				Commit   string
				Sessions []struct {
					SessionID  string
					Conclusion struct{ Thought string }
					Touching   []struct{ Thought string }
					Branches   []struct{ BranchID string }
				}
			}
		}
		if st := codeGet(t, base+prefix+"/commit/"+commit[:10], &ans); st != 200 || len(ans.Commits) != 1 || len(ans.Commits[0].Sessions) != 1 {
			t.Fatalf("%s/commit: %d %+v", prefix, st, ans)
		}
		s := ans.Commits[0].Sessions[0]
		if ans.Commits[0].Commit != commit || s.SessionID != sid || !strings.HasPrefix(s.Conclusion.Thought, "Conclusion: exponential") ||
			len(s.Touching) != 1 || len(s.Branches) != 1 || s.Branches[0].BranchID != "fixed-delay" {
			t.Errorf("%s/commit: %+v", prefix, ans)
		}
	}

	var blame struct {
		Path  string
		Lines []struct {
			From, To int
			Commit   string
			Sessions []struct {
				SessionID string
				Touching  []struct{ Thought string }
			}
		}
	}
	if st := codeGet(t, base+"/ui/code/file?path=lib.go", &blame); st != 200 || len(blame.Lines) != 2 {
		t.Fatalf("file: %d %+v", st, blame)
	}
	if l := blame.Lines[0]; l.From != 1 || l.To != 2 || len(l.Sessions) != 0 {
		t.Errorf("lines 1-2 (the first commit's, unlinked): %+v", l)
	}
	if l := blame.Lines[1]; l.From != 3 || l.To != 4 || l.Commit != commit || len(l.Sessions) != 1 || l.Sessions[0].SessionID != sid || len(l.Sessions[0].Touching) != 1 {
		t.Errorf("lines 3-4: %+v", l)
	}
	if st := codeGet(t, base+"/ui/code/file?path=lib.go&from=4", &blame); st != 200 || len(blame.Lines) != 1 || blame.Lines[0].From != 4 || blame.Lines[0].To != 4 {
		t.Errorf("file from=4: %d %+v", st, blame)
	}

	if st := codeGet(t, base+"/ui/code/file?path=no-newline.txt&from=2", &blame); st != 200 || len(blame.Lines) != 1 || blame.Lines[0].To != 2 {
		t.Errorf("the last line of a file without a final newline: %d %+v", st, blame)
	}

	var linked struct {
		SessionID string
		Commits   []struct{ Commit, Subject string }
	}
	if st := codeGet(t, base+"/ui/code/session/"+sid[:8], &linked); st != 200 || linked.SessionID != sid || len(linked.Commits) != 1 ||
		linked.Commits[0].Commit != commit || linked.Commits[0].Subject != "Retry with exponential backoff" {
		t.Errorf("session: %d %+v", st, linked)
	}

	for _, c := range []struct {
		path, field string
		status      int
	}{
		{"/ui/code/commit/0123456789abcdef", "rev", 404},
		{"/ui/code/commit/HEAD~1..HEAD", "rev", 400},
		{"/ui/code/file", "path", 400},
		{"/ui/code/file?path=../outside.go", "path", 400},
		{"/ui/code/file?path=/etc/passwd", "path", 400},
		{"/ui/code/file?path=missing.go", "path", 404},
		{"/ui/code/file?path=lib.go&from=0", "from", 400},
		{"/ui/code/file?path=lib.go&from=two", "from", 400},
		{"/ui/code/file?path=lib.go&to=2", "from", 400},
		{"/ui/code/file?path=lib.go&from=3&to=2", "to", 400},
		{"/ui/code/file?path=lib.go&from=2&to=40", "to", 400},
		{"/ui/code/file?path=lib.go&from=40", "from", 400},
		{"/ui/code/file?path=no-newline.txt&from=2&to=3", "to", 400},
		{"/ui/code/file?path=.", "path", 404},
	} {
		var e observatory.ErrorPayload
		if st := codeGet(t, base+c.path, &e); st != c.status || e.Details["field"] != c.field || !strings.HasPrefix(e.Message, c.field+": ") {
			t.Errorf("%s: %d %+v, want %d naming %s", c.path, st, e, c.status, c.field)
		}
	}
	var e observatory.ErrorPayload
	if st := codeGet(t, base+"/ui/code/session/00000000-0000-4000-8000-000000000000", &e); st != 404 {
		t.Errorf("an unknown session: %d %+v", st, e)
	}

	plain := newFixture(t, observatory.Config{HTTPAPI: true})
	if st := codeGet(t, plain.srv.URL+"/ui/code", &info); st != 200 || info["repository"] {
		t.Errorf("standalone /ui/code: %d %v", st, info)
	}
	if st := codeGet(t, plain.srv.URL+"/api/code/commit/HEAD", &e); st != 404 || !strings.Contains(e.Message, "thoughtbox enable") {
		t.Errorf("standalone commit: %d %+v", st, e)
	}
}
