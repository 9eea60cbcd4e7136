package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/why"
)

// runGit runs git in dir with its own identity and no global config.
func runGit(t *testing.T, dir string, args ...string) string {
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

// TestWhy asks the why operation through a real MCP client about commits
// of a real repository whose trailers name a session: by commit, by path
// and lines; a forged trailer is a warning; a standalone project is told
// to run thoughtbox enable.
func TestWhy(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "lib.go"), []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	repo, err := coderepo.Find(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, gateway.Options{CodeRepo: func(string) *coderepo.Repo { return repo }})
	c := e.connect(t, clientOpts{})
	id := c.ready("Why lib.go")
	c.think("lib.go line 2 holds the rule", map[string]any{"code": []map[string]any{{"path": "lib.go", "from": 2}}})
	c.think("Elsewhere entirely", map[string]any{"code": []map[string]any{{"path": "other.go"}}})
	runGit(t, dir, "add", "lib.go")
	runGit(t, dir, "commit", "-q", "-m", "Add lib", "-m", "Thoughtbox-Session: "+id+"\nThoughtbox-Session: 00000000-0000-4000-8000-00000000dead")

	ans := c.ok("why", map[string]any{"commit": "HEAD"})
	commits := list(ans["commits"])
	if len(commits) != 1 {
		t.Fatalf("commits %v", ans["commits"])
	}
	sessions := list(commits[0].(map[string]any)["sessions"])
	if len(sessions) != 1 || sessions[0].(map[string]any)["sessionId"] != id {
		t.Fatalf("sessions %v, want only %s", sessions, id)
	}
	touching := list(sessions[0].(map[string]any)["touching"])
	if len(touching) != 1 || touching[0].(map[string]any)["thought"] != "lib.go line 2 holds the rule" {
		t.Errorf("touching %v", touching)
	}
	if w := list(ans["warnings"]); len(w) != 1 || !contains(w[0].(string), "00000000-0000-4000-8000-00000000dead") {
		t.Errorf("warnings %v", ans["warnings"])
	}

	bl := c.ok("why", map[string]any{"path": "lib.go", "from": 1, "to": 3})
	lines := list(bl["lines"])
	if len(lines) != 1 || num(lines[0].(map[string]any)["from"]) != 1 || num(lines[0].(map[string]any)["to"]) != 3 {
		t.Fatalf("lines %v", bl["lines"])
	}
	bs := list(lines[0].(map[string]any)["sessions"])
	if len(bs) != 1 || len(list(bs[0].(map[string]any)["touching"])) != 1 {
		t.Errorf("blame sessions %v", bs)
	}

	c.fail("why", map[string]any{}, ledger.CodeInvalidPayload)
	c.fail("why", map[string]any{"commit": "HEAD", "path": "lib.go"}, ledger.CodeInvalidPayload)
	c.fail("why", map[string]any{"path": "lib.go", "from": 3, "to": 1}, ledger.CodeInvalidPayload)
	c.fail("why", map[string]any{"commit": "nosuch"}, ledger.CodeInvalidPayload)
	c.fail("why", map[string]any{"path": "../x.go"}, ledger.CodeInvalidPayload)

	plain := newEnv(t, gateway.Options{})
	pc := plain.connect(t, clientOpts{})
	pc.ready("Standalone")
	body := pc.fail("why", map[string]any{"commit": "HEAD"}, ledger.CodeInvalidOperation)
	if msg, _ := body["message"].(string); !contains(msg, "thoughtbox enable") {
		t.Errorf("message %q", msg)
	}
}

// TestWhyFetches: a why whose commit names a session the ledger lacks
// asks FetchSessions for it, once per answer and only for that one; a
// failed fetch is a warning in the answer, not an error.
func TestWhyFetches(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	repo, err := coderepo.Find(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var asked [][]string
	var projects []string
	e := newEnv(t, gateway.Options{
		CodeRepo: func(string) *coderepo.Repo { return repo },
		FetchSessions: func(_ context.Context, project string, ids []string) error {
			asked = append(asked, ids)
			projects = append(projects, project)
			return errors.New("the remote is down")
		},
	})
	c := e.connect(t, clientOpts{})
	id := c.ready("Here already")
	missing := "00000000-0000-4000-8000-0000000000aa"
	runGit(t, dir, "commit", "-q", "--allow-empty", "-m", "Base")
	runGit(t, dir, "commit", "-q", "--allow-empty", "-m", "One", "-m", "Thoughtbox-Session: "+id+"\nThoughtbox-Session: "+missing)
	runGit(t, dir, "commit", "-q", "--allow-empty", "-m", "Two", "-m", "Thoughtbox-Session: "+missing)

	ans := c.ok("why", map[string]any{"commit": "HEAD~2..HEAD"})
	if len(asked) != 1 || len(asked[0]) != 1 || asked[0][0] != missing {
		t.Fatalf("fetch asked for %v, want once for [%s]", asked, missing)
	}
	w := list(ans["warnings"])
	if len(w) == 0 || !contains(w[0].(string), "could not fetch 1 linked session") || !contains(w[0].(string), "the remote is down") {
		t.Fatalf("warnings %v", w)
	}
	commits := list(ans["commits"])
	if len(commits) != 2 || len(list(commits[1].(map[string]any)["sessions"])) != 1 {
		t.Fatalf("commits %v: the session here still answers", commits)
	}
	if projects[0] == "" {
		t.Errorf("fetch asked for project %q", projects[0])
	}
}

// linkEntries is a why.LinkStore holding fixed links.
type linkEntries map[string][]ledger.CodeLink

func (l linkEntries) AddLinks(_ context.Context, s string, links []ledger.CodeLink) (int, error) {
	l[s] = append(l[s], links...)
	return len(links), nil
}

func (l linkEntries) ReadLinks(_ context.Context, s string) ([]ledger.CodeLink, string, error) {
	return l[s], fmt.Sprint(len(l[s])), nil
}

func (l linkEntries) LinkTips(context.Context) (map[string]string, error) {
	out := map[string]string{}
	for s, links := range l {
		out[s] = fmt.Sprint(len(links))
	}
	return out, nil
}

// TestWhyReadsLinkEntries: a commit whose message names no session is
// answered from the ledger's link entries, through the same code as the
// CLI's why, and says how it was linked.
func TestWhyReadsLinkEntries(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	runGit(t, dir, "commit", "-q", "--allow-empty", "-m", "Squashed elsewhere")
	head := runGit(t, dir, "rev-parse", "HEAD")
	repo, err := coderepo.Find(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	links := linkEntries{}
	e := newEnv(t, gateway.Options{CodeRepo: func(string) *coderepo.Repo { return repo },
		CodeLinks: func(string) why.LinkStore { return links }})
	c := e.connect(t, clientOpts{})
	id := c.ready("Linked by an entry")
	c.think("The reasoning behind the squash", nil)
	links[id] = []ledger.CodeLink{{Commit: head, Session: id, Via: ledger.ViaRelink, Files: []string{}}}

	ans := c.ok("why", map[string]any{"commit": "HEAD"})
	sessions := list(list(ans["commits"])[0].(map[string]any)["sessions"])
	if len(sessions) != 1 || sessions[0].(map[string]any)["sessionId"] != id || sessions[0].(map[string]any)["linkedBy"] != "relink" {
		t.Fatalf("sessions %v, want %s linked by relink", sessions, id)
	}
}
