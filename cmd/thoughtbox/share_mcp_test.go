package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeWhyFetches: an agent's why, through `thoughtbox serve` in a
// clone of the code that holds no reasoning, fetches the one session the
// commit names from the remote the branch tracks, and answers with it.
func TestServeWhyFetches(t *testing.T) {
	bin := thoughtboxBinary(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	env := append(os.Environ(), "THOUGHTBOX_DATA_DIR="+filepath.Join(root, "data"), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Dev", "GIT_AUTHOR_EMAIL=dev@example.com", "GIT_COMMITTER_NAME=Dev", "GIT_COMMITTER_EMAIL=dev@example.com")
	run := func(dir, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	team, alice, bob := filepath.Join(root, "team.git"), filepath.Join(root, "alice"), filepath.Join(root, "bob")
	run(root, "git", "init", "-q", "--bare", "-b", "main", team)
	run(root, "git", "init", "-q", "-b", "main", alice)
	run(alice, "git", "remote", "add", "origin", team)
	run(alice, bin, "enable")
	run(alice, bin, "remote", "bind", "origin")
	run(alice, bin, "start", "Why x.txt")
	id, err := os.ReadFile(filepath.Join(alice, ".git", "thoughtbox", "active-session"))
	if err != nil {
		t.Fatal(err)
	}
	sid := strings.TrimSpace(string(id))
	run(alice, bin, "add", sid, "x.txt holds the retry limit")
	run(alice, "git", "commit", "-q", "--allow-empty", "-m", "Add x", "-m", "Thoughtbox-Session: "+sid)
	run(alice, bin, "start", "Unrelated")
	other, err := os.ReadFile(filepath.Join(alice, ".git", "thoughtbox", "active-session"))
	if err != nil {
		t.Fatal(err)
	}
	run(alice, "git", "push", "-q", "-u", "origin", "main")
	run(alice, bin, "push", "-q")
	run(root, "git", "clone", "-q", "--no-local", team, bob)
	run(bob, bin, "enable")
	if out := run(bob, "git", "for-each-ref", "refs/thoughtbox"); out != "" {
		t.Fatalf("the clone has reasoning refs:\n%s", out)
	}

	cmd := exec.Command(bin, "serve", "--transport", "stdio")
	cmd.Dir, cmd.Env = bob, env
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := agent("why-agent", "1.0").Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer s.Close()
	if r := callGateway(t, s, "start_new", map[string]any{"sessionTitle": "Reading the code"}); r.isError {
		t.Fatalf("start_new: %s", r.text)
	}
	r := callGateway(t, s, "why", map[string]any{"commit": "HEAD"})
	if r.isError || !strings.Contains(r.text, "x.txt holds the retry limit") || !strings.Contains(r.text, `"fetched"`) {
		t.Fatalf("why: %s\nstderr:\n%s", r.text, stderr.String())
	}
	// The server publishes refs from its log in the background; closed, it
	// has published them all.
	s.Close()
	cmd.Wait()
	refs := run(bob, "git", "for-each-ref", "--format=%(refname)", "refs/thoughtbox/v1/sessions/")
	if !strings.Contains(refs, sid) || strings.Contains(refs, strings.TrimSpace(string(other))) {
		t.Fatalf("refs after why:\n%s\nwant %s, not alice's other session", refs, sid)
	}
}
