package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gitEnv is a git without the machine's configuration, with an identity.
var gitEnv = []string{"GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
	"GIT_AUTHOR_NAME=Dev", "GIT_AUTHOR_EMAIL=dev@example.com", "GIT_COMMITTER_NAME=Dev", "GIT_COMMITTER_EMAIL=dev@example.com"}

// runIn runs a program in dir with gitEnv and env, and returns its stdout.
func runIn(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), gitEnv...), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// newCodeRepo makes a Git repository with one commit of lib.go.
func newCodeRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := filepath.Join(t.TempDir(), "code")
	runIn(t, filepath.Dir(dir), nil, "git", "init", "-q", "-b", "main", dir)
	writeFile(t, filepath.Join(dir, "lib.go"), "package lib\n\nfunc Fetch() {}\n")
	runIn(t, dir, nil, "git", "add", "lib.go")
	runIn(t, dir, nil, "git", "commit", "-q", "-m", "Start lib")
	return dir
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// stdioIn starts `thoughtbox mcp` in dir, as a client launches it, and
// connects client to it.
func stdioIn(t *testing.T, bin, dir string, client *mcp.Client, env ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(bin, "mcp")
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), gitEnv...), env...)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// ok calls an operation that must succeed and decodes its reply.
func ok(t *testing.T, s *mcp.ClientSession, op string, args map[string]any) map[string]any {
	t.Helper()
	r := callGateway(t, s, op, args)
	if r.isError {
		t.Fatalf("%s: %s", op, r.text)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(r.text), &out); err != nil {
		t.Fatalf("%s: %v\n%s", op, err, r.text)
	}
	return out
}

// TestBindRootPicksTheCodeRepository: a client of a local (stdio) server
// started outside any repository offers an enabled worktree as its root;
// bind_root moves the connection to that repository's own ledger, so the
// session it records is under the repository's refs/thoughtbox/v1/, is its
// worktree's active session, and is not in the data directory. A root
// that is a worktree not enabled keeps today's project by name; over HTTP
// the reply's note says the root is not looked at.
func TestBindRootPicksTheCodeRepository(t *testing.T) {
	bin := thoughtboxBinary(t)
	repo := newCodeRepo(t)
	plainRepo := newCodeRepo(t)
	data := t.TempDir()
	env := []string{"THOUGHTBOX_DATA_DIR=" + data, "DISABLE_THOUGHT_LOGGING=1"}
	runIn(t, repo, env, bin, "enable")

	client := agent("roots-agent", "1")
	client.AddRoots(&mcp.Root{URI: "file://" + filepath.ToSlash(repo), Name: "code"}, &mcp.Root{URI: "file://" + filepath.ToSlash(plainRepo)})
	s := stdioIn(t, bin, t.TempDir(), client, env...)
	b := ok(t, s, "bind_root", map[string]any{"rootUri": "file://" + filepath.ToSlash(repo)})
	if b["codeRepository"] != repo || b["project"] != "code:"+repo || !strings.Contains(b["note"].(string), "enabled Git worktree") {
		t.Fatalf("bind_root = %v", b)
	}
	ok(t, s, "start_new", map[string]any{"sessionTitle": "Where Fetch should retry"})
	if r := callGateway(t, s, "cipher", map[string]any{}); r.isError {
		t.Fatalf("cipher: %s", r.text)
	}
	th := ok(t, s, "thought", map[string]any{"thought": "Fetch in lib.go gives up at once.", "nextThoughtNeeded": true,
		"code": []map[string]any{{"path": "lib.go", "from": 3}}})
	id, _ := th["sessionId"].(string)
	if id == "" {
		t.Fatalf("thought = %v", th)
	}
	active := runIn(t, repo, nil, "git", "rev-parse", "--git-path", "thoughtbox/active-session")
	if got, err := os.ReadFile(filepath.Join(repo, active)); err != nil || strings.TrimSpace(string(got)) != id {
		t.Errorf("active session file: %q, %v; want %s", got, err, id)
	}
	if w := ok(t, s, "why", map[string]any{"path": "lib.go", "from": 3}); len(w["lines"].([]any)) != 1 {
		t.Errorf("why on the bound repository's file = %v", w)
	}
	if _, err := os.Stat(filepath.Join(data, "projects", "_default.git", "refs", "heads", "sessions", id)); err == nil {
		t.Errorf("the session went to the data directory too")
	}

	other := ok(t, s, "bind_root", map[string]any{"rootUri": "file://" + filepath.ToSlash(plainRepo), "create": true})
	if other["project"] != "code" || other["codeRepository"] != nil {
		t.Errorf("bind_root to a worktree not enabled = %v", other)
	}
	// The server publishes its log to plain Git at the latest when it
	// stops: then git itself sees the session among the repository's refs.
	s.Close()
	if refs := runIn(t, repo, nil, "git", "for-each-ref", "--format=%(refname)", "refs/thoughtbox/v1/sessions/"); !strings.Contains(refs, "refs/thoughtbox/v1/sessions/"+id+"/main") {
		t.Errorf("the repository's refs lack the session %s:\n%s", id, refs)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, _ := startServeHTTP(t, ctx, bin, env...)
	hc := agent("http-roots-agent", "1")
	hc.AddRoots(&mcp.Root{URI: "file://" + filepath.ToSlash(repo)})
	hs, err := hc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	hb := ok(t, hs, "bind_root", map[string]any{"rootUri": "file://" + filepath.ToSlash(repo), "create": true})
	if hb["project"] != "code" || hb["codeRepository"] != nil || !strings.Contains(hb["note"].(string), "Over HTTP the root is a folder on the client's machine") {
		t.Errorf("bind_root over HTTP = %v", hb)
	}
}
