package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeStdioAutoPull runs the server over stdio with
// THOUGHTBOX_AUTO_PULL: a session another data directory pushed while the
// server runs shows in its session list and read_thoughts, and the agent
// goes on with it at the next number.
func TestServeStdioAutoPull(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	bin := thoughtboxBinary(t)
	remote := filepath.Join(t.TempDir(), "team.git")
	if out, err := exec.Command("git", "init", "--bare", "-q", remote).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	s, _, stderr := serveStdio(t, bin, agent("pulling-agent", "1"), "THOUGHTBOX_DATA_DIR="+t.TempDir(), "DISABLE_THOUGHT_LOGGING=1",
		"THOUGHTBOX_AUTO_PULL="+remote, "THOUGHTBOX_AUTO_PULL_INTERVAL=1s")
	callGateway(t, s, "start_new", map[string]any{"sessionTitle": "Local work"})
	callGateway(t, s, "cipher", map[string]any{})

	// Another member of the team writes and pushes with the CLI.
	env := append(os.Environ(), "THOUGHTBOX_DATA_DIR="+t.TempDir())
	cli := func(args ...string) string {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Env = env
		out, err := c.Output()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	id := cli("start", "Pulled question")
	cli("add", id, "Measured on the other machine")
	cli("push", remote)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r := callGateway(t, s, "session", map[string]any{"operation": "list"})
		if strings.Contains(r.text, id) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pushed session never showed in the server's list; stderr:\n%s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := callGateway(t, s, "read_thoughts", map[string]any{"sessionId": id})
	if r.isError || !strings.Contains(r.text, "Measured on the other machine") {
		t.Fatalf("read_thoughts of the pulled session: %s", r.text)
	}
	r = callGateway(t, s, "load_context", map[string]any{"sessionId": id})
	if r.isError {
		t.Fatalf("load_context: %s", r.text)
	}
	r = callGateway(t, s, "thought", map[string]any{"thought": "Continued here", "nextThoughtNeeded": false})
	if r.isError || !strings.Contains(r.text, `"thoughtNumber":2`) {
		t.Errorf("next thought on the pulled session: %s", r.text)
	}
	if strings.Contains(stderr.String(), "auto-pull") {
		t.Errorf("the server logged about auto-pull:\n%s", stderr.String())
	}
}
