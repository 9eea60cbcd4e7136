package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func notebookCall(t *testing.T, s *mcp.ClientSession, args map[string]any) map[string]any {
	t.Helper()
	r := callGateway(t, s, "notebook", args)
	if r.isError {
		t.Fatalf("notebook %v: %s", args, r.text)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(r.text), &m); err != nil {
		t.Fatalf("notebook %v: %v\n%s", args, err, r.text)
	}
	return m
}

// TestServeNotebooks runs the real server over HTTP with a tokens file:
// a writer creates a notebook in its project, a runaway cell is stopped at
// THOUGHTBOX_NOTEBOOK_TIMEOUT and the server goes on, a reader may look
// but not run (a run commits), and the commits carry the token's identity.
func TestServeNotebooks(t *testing.T) {
	bin := thoughtboxBinary(t)
	data := t.TempDir()
	tokensFile := filepath.Join(t.TempDir(), "tokens")
	const alice, bob = "alice-token-0123456789", "bob-token-0123456789ab"
	os.WriteFile(tokensFile, []byte(alice+" alice@team.example write:alpha\n"+bob+" bob read:alpha\n"), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url, cmd := startServeHTTP(t, ctx, bin, "THOUGHTBOX_DATA_DIR="+data,
		"THOUGHTBOX_AUTH_TOKENS_FILE="+tokensFile, "DISABLE_THOUGHT_LOGGING=1", "THOUGHTBOX_NOTEBOOK_TIMEOUT=1s")
	connect := func(token, name string) *mcp.ClientSession {
		t.Helper()
		s, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
		if err != nil {
			t.Fatalf("connect %s: %v", name, err)
		}
		return s
	}

	a := connect(alice, "spoofed-name")
	defer a.Close()
	for _, step := range []struct {
		op   string
		args map[string]any
	}{
		{"navigate", map[string]any{"project": "alpha", "create": true}},
		{"start_new", map[string]any{"sessionTitle": "alpha notebooks"}},
		{"cipher", nil},
	} {
		if r := callGateway(t, a, step.op, step.args); r.isError {
			t.Fatalf("%s: %s", step.op, r.text)
		}
	}
	notebookCall(t, a, map[string]any{"operation": "create", "name": "Loops", "language": "javascript"})
	loop := notebookCall(t, a, map[string]any{"operation": "add_cell", "notebookId": "loops", "type": "code", "content": "for (;;) {}", "filename": "spin.js"})
	run := notebookCall(t, a, map[string]any{"operation": "run_cell", "notebookId": "loops", "cellId": "spin.js"})
	if run["status"] != "failed" || !strings.Contains(run["error"].(string), "1s") {
		t.Errorf("runaway cell: %v", run)
	}
	notebookCall(t, a, map[string]any{"operation": "update_cell", "notebookId": "loops", "cellId": loop["cell"].(map[string]any)["id"], "content": "export const n = 40 + 2;"})
	notebookCall(t, a, map[string]any{"operation": "add_cell", "notebookId": "loops", "type": "code", "content": "import { n } from './spin.js';\nconsole.log(n);", "filename": "use.js"})
	run = notebookCall(t, a, map[string]any{"operation": "run_cell", "notebookId": "loops", "cellId": "use.js"})
	if run["output"] != "42\n" || run["status"] != "completed" {
		t.Errorf("after the runaway: %v", run)
	}

	b := connect(bob, "bob-client")
	defer b.Close()
	var sess struct{ SessionID string }
	st := callGateway(t, a, "get_state", nil)
	json.Unmarshal([]byte(st.text), &sess)
	for _, step := range []struct {
		op   string
		args map[string]any
	}{
		{"navigate", map[string]any{"project": "alpha"}},
		{"load_context", map[string]any{"sessionId": sess.SessionID}},
		{"cipher", nil},
	} {
		if r := callGateway(t, b, step.op, step.args); r.isError {
			t.Fatalf("bob %s: %s", step.op, r.text)
		}
	}
	if got := notebookCall(t, b, map[string]any{"operation": "list"}); got["total"] != float64(1) {
		t.Errorf("bob lists %v", got)
	}
	if r := callGateway(t, b, "notebook", map[string]any{"operation": "run_cell", "notebookId": "loops", "cellId": "use.js"}); !r.isError || !strings.Contains(r.text, `"PERMISSION_DENIED"`) {
		t.Errorf("bob running a cell with a read-only token: %s", r.text)
	}
	a.Close()
	b.Close()
	cancel()
	cmd.Wait()

	if _, err := os.Stat(filepath.Join(data, "notebooks", "alpha", "loops")); err != nil {
		t.Errorf("the notebook's work folder: %v", err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return
	}
	out, err := exec.Command("git", "--git-dir", filepath.Join(data, "projects", "alpha.git"), "log", "--format=%an|%s", "notebooks/loops").CombinedOutput()
	if err != nil {
		t.Fatalf("git log: %v\n%s", err, out)
	}
	want := "alice@team.example|Run cell 06-use.js: completed\n" +
		"alice@team.example|Add cell 06-use.js\n" +
		"alice@team.example|Update cell 05-spin.js\n" +
		"alice@team.example|Run cell 05-spin.js: failed\n" +
		"alice@team.example|Add cell 05-spin.js\n"
	if !strings.HasPrefix(string(out), want) || strings.Count(string(out), "\n") != 6 {
		t.Errorf("git log of the notebook:\n%s\nwant it to start with:\n%s", out, want)
	}
}

// TestServeMemoryNotebooks: with memory storage, notebooks work and nothing
// is written to the data directory.
func TestServeMemoryNotebooks(t *testing.T) {
	bin := thoughtboxBinary(t)
	data := filepath.Join(t.TempDir(), "data")
	s, cmd, _ := serveStdio(t, bin, agent("memory-agent", "1"), "THOUGHTBOX_DATA_DIR="+data, "THOUGHTBOX_STORAGE=memory", "DISABLE_THOUGHT_LOGGING=1")
	callGateway(t, s, "start_new", map[string]any{"sessionTitle": "memory"})
	callGateway(t, s, "cipher", nil)
	notebookCall(t, s, map[string]any{"operation": "create", "name": "Scratch"})
	notebookCall(t, s, map[string]any{"operation": "add_cell", "notebookId": "scratch", "type": "code", "content": "enum Color { Red, Green }\nconsole.log(Color.Green)", "filename": "enum.ts"})
	if run := notebookCall(t, s, map[string]any{"operation": "run_cell", "notebookId": "scratch", "cellId": "enum.ts"}); run["output"] != "1\n" {
		t.Errorf("run: %v", run)
	}
	s.Close()
	cmd.Wait()
	wantNoDataDir(t, data)
}
