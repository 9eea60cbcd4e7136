package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// buildOnce builds the real thoughtbox binary for the tests that run it as
// a server process, the way an MCP client launches it.
var buildOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "thoughtbox-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "thoughtbox")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", &buildError{string(out), err}
	}
	return bin, nil
})

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

func thoughtboxBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	bin, err := buildOnce()
	if err != nil {
		t.Fatalf("go build: %v", err)
	}
	return bin
}

type gatewayResult struct {
	text    string
	isError bool
}

func callGateway(t *testing.T, s *mcp.ClientSession, op string, args map[string]any) gatewayResult {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{
		Name:      "thoughtbox_gateway",
		Arguments: map[string]any{"operation": op, "args": args},
	})
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return gatewayResult{b.String(), res.IsError}
}

// reason drives one short session through a connected client and returns
// its id.
func reason(t *testing.T, s *mcp.ClientSession) string {
	t.Helper()
	start := callGateway(t, s, "start_new", map[string]any{"sessionTitle": "Why is the API slow?", "tags": []string{"perf"}})
	if start.isError {
		t.Fatalf("start_new: %s", start.text)
	}
	if r := callGateway(t, s, "cipher", map[string]any{}); r.isError {
		t.Fatalf("cipher: %s", r.text)
	}
	var id string
	for i, text := range []string{"S1|O|p99 latency doubled after Tuesday's deploy", "S2|H|S1|the new ORM skips the users.email index", "S3|C|S2|add the index back"} {
		r := callGateway(t, s, "thought", map[string]any{"thought": text, "nextThoughtNeeded": i < 2})
		if r.isError {
			t.Fatalf("thought %d: %s", i+1, r.text)
		}
		var reply struct {
			SessionID     string `json:"sessionId"`
			ThoughtNumber int    `json:"thoughtNumber"`
		}
		if err := json.Unmarshal([]byte(r.text), &reply); err != nil {
			t.Fatalf("thought reply %q: %v", r.text, err)
		}
		if reply.ThoughtNumber != i+1 {
			t.Fatalf("thought %d numbered %d", i+1, reply.ThoughtNumber)
		}
		id = reply.SessionID
	}
	// The last thought closed the session (seed 004): name it.
	read := callGateway(t, s, "read_thoughts", map[string]any{"last": 2, "sessionId": id})
	if read.isError || !strings.Contains(read.text, "users.email index") {
		t.Fatalf("read_thoughts: %s", read.text)
	}
	// The knowledge zone is wired into the server.
	k := callGateway(t, s, "knowledge", map[string]any{"operation": "create", "title": "Check the index after ORM upgrades",
		"description": "ORMs may drop hints", "content": "Run EXPLAIN on the hot queries after an upgrade."})
	if k.isError {
		t.Fatalf("knowledge create: %s", k.text)
	}
	return id
}

// checkLedger checks with plain git that the session's thoughts are commits
// authored by the client.
func checkLedger(t *testing.T, dataDir, id, author string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Log("git CLI not installed; not reading the ledger with git")
		return
	}
	repo := filepath.Join(dataDir, "projects", "_default.git")
	out, err := exec.Command("git", "--git-dir", repo, "log", "--format=%an|%s", "sessions/"+id+"/main").CombinedOutput()
	if err != nil {
		t.Fatalf("git log: %v\n%s", err, out)
	}
	want := author + "|Thought 3: S3|C|S2|add the index back\n" +
		author + "|Thought 2: S2|H|S1|the new ORM skips the users.email index\n" +
		author + "|Thought 1: S1|O|p99 latency doubled after Tuesday's deploy\n"
	if !strings.HasPrefix(string(out), want) {
		t.Errorf("git log:\n%s\nwant it to start with:\n%s", out, want)
	}
}

// TestServeStdio runs `thoughtbox serve --transport stdio` as a subprocess
// and drives it with the go-sdk client over its stdin and stdout.
func TestServeStdio(t *testing.T) {
	bin := thoughtboxBinary(t)
	data := t.TempDir()
	eventsFile := filepath.Join(t.TempDir(), "events.jsonl")
	s, _, stderr := serveStdio(t, bin, agent("stdio-test-agent", "1.2.3"), "THOUGHTBOX_DATA_DIR="+data,
		"THOUGHTBOX_EVENTS_ENABLED=1", "THOUGHTBOX_EVENTS_DEST="+eventsFile)
	id := reason(t, s)
	if err := s.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	// The thought log goes to stderr, never stdout (which carries MCP).
	if !strings.Contains(stderr.String(), "users.email index") {
		t.Errorf("stderr has no thought log:\n%s", stderr.String())
	}
	checkLedger(t, data, id, "stdio-test-agent 1.2.3")

	// The last thought (nextThoughtNeeded false) closed the session and
	// exported it under the data directory.
	exports, _ := filepath.Glob(filepath.Join(data, "exports", id+"-*.json"))
	if len(exports) != 1 {
		t.Errorf("exports for %s: %v, want one", id, exports)
	}
	// The event stream has the session's events as JSON lines.
	ev, err := os.ReadFile(eventsFile)
	if err != nil {
		t.Fatalf("event stream: %v", err)
	}
	for _, want := range []string{`"session_started"`, `"cipher_loaded"`, `"stage_changed"`, `"thought_added"`, `"session_exported"`} {
		if !strings.Contains(string(ev), want) {
			t.Errorf("event stream lacks %s:\n%s", want, ev)
		}
	}
}

// TestServeHTTP runs `thoughtbox serve` on its default transport (Streamable
// HTTP) on a port it picks, requires a bearer token, and drives it with the
// go-sdk client.
func TestServeHTTP(t *testing.T) {
	bin := thoughtboxBinary(t)
	data := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, cmd := startServeHTTP(t, ctx, bin, "THOUGHTBOX_DATA_DIR="+data,
		"THOUGHTBOX_AUTH_TOKEN=s3cret", "DISABLE_THOUGHT_LOGGING=1", "THOUGHTBOX_AGENT_NAME=http-agent")

	// Without the token: 401.
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST without a token: %d, want 401", resp.StatusCode)
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "http-test-agent", Version: "0.9"}, nil)
	transport := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{"s3cret"}}}
	s, err := client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	id := reason(t, s)
	s.Close()
	cancel() // SIGINT: the server shuts down and flushes
	cmd.Wait()
	checkLedger(t, data, id, "http-agent")
}

// startServeHTTP starts `thoughtbox serve` over Streamable HTTP on a free
// loopback port, with env added to this process's environment, and
// returns its MCP endpoint once it listens. The server is interrupted
// (SIGINT) when ctx ends, and at the latest when the test ends.
func startServeHTTP(t *testing.T, ctx context.Context, bin string, env ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Env = append(append(os.Environ(), "PORT=0", "HOST=127.0.0.1"), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	url := startAnnounced(t, cmd, 30*time.Second, regexp.MustCompile(`listening on (http://\S+/mcp)`))[0]
	return url, cmd
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeSampling drives critique and RLM through the real server binary
// over stdio: the client's model is scripted, answering the critic with a
// critique and the RLM root with a REPL block and FINAL.
func TestServeSampling(t *testing.T) {
	bin := thoughtboxBinary(t)
	data := t.TempDir()
	var mu sync.Mutex
	var rlmTurns int
	handler := func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		text := "Unstated assumption: the index was there before the deploy."
		if strings.Contains(req.Params.SystemPrompt, "JavaScript REPL") { // the RLM root
			mu.Lock()
			rlmTurns++
			turn := rlmTurns
			mu.Unlock()
			text = "```repl\nconst n = context.thoughts.length\nprint(n)\n```"
			if turn > 1 {
				text = "FINAL_VAR(n)"
			}
		}
		return &mcp.CreateMessageResult{Model: "scripted-model-1", Role: "assistant", Content: &mcp.TextContent{Text: text}}, nil
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "sampling-agent", Version: "1"}, &mcp.ClientOptions{CreateMessageHandler: handler})
	s, _, _ := serveStdio(t, bin, client, "THOUGHTBOX_DATA_DIR="+data, "DISABLE_THOUGHT_LOGGING=1")
	callGateway(t, s, "start_new", map[string]any{"sessionTitle": "sampling through the binary"})
	callGateway(t, s, "cipher", map[string]any{})
	callGateway(t, s, "thought", map[string]any{"thought": "The deploy dropped the users.email index.", "nextThoughtNeeded": true})
	r := callGateway(t, s, "thought", map[string]any{"thought": "Restore the index.", "nextThoughtNeeded": true, "critique": true})
	if r.isError || !strings.Contains(r.text, "Unstated assumption") {
		t.Fatalf("critique reply: %s", r.text)
	}
	r = callGateway(t, s, "thought", map[string]any{"thought": "How many thoughts so far?", "nextThoughtNeeded": true,
		"rlm": true, "rlmQuery": "Count the thoughts in this session."})
	var reply struct {
		RLM *struct {
			Status, Answer string
		} `json:"rlm"`
	}
	if err := json.Unmarshal([]byte(r.text), &reply); err != nil || r.isError || reply.RLM == nil || reply.RLM.Answer != "2" {
		t.Fatalf("rlm reply: %s", r.text)
	}
	s.Close() // the server exits and flushes
	if _, err := exec.LookPath("git"); err != nil {
		return
	}
	out, err := exec.Command("git", "--git-dir", filepath.Join(data, "projects", "_default.git"),
		"log", "--all", "--format=%an|%s").CombinedOutput()
	if err != nil {
		t.Fatalf("git log: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "scripted-model-1|Critique of thought 2") {
		t.Errorf("no critique commit authored by the model in git log:\n%s", out)
	}
}

// TestServeAutoPush runs the server with THOUGHTBOX_AUTO_PUSH: the thought
// that closes a session pushes it to the remote.
func TestServeAutoPush(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed; this test reads the remote with it")
	}
	bin := thoughtboxBinary(t)
	data := t.TempDir()
	remote := filepath.Join(t.TempDir(), "team.git")
	if out, err := exec.Command("git", "init", "--bare", "-q", remote).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	env := append(os.Environ(), "THOUGHTBOX_DATA_DIR="+data)
	add := exec.Command(bin, "remote", "add", "origin", remote)
	add.Env = env
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("remote add: %v\n%s", err, out)
	}
	s, _, stderr := serveStdio(t, bin, agent("pushing-agent", "1.0"), append(env, "THOUGHTBOX_AUTO_PUSH=origin", "DISABLE_THOUGHT_LOGGING=1")...)
	id := reason(t, s)
	s.Close() // the server exits, finishing the push it started
	out, err := exec.Command("git", "--git-dir", remote, "log", "--format=%an: %s", "sessions/"+id+"/main").CombinedOutput()
	if err != nil {
		t.Fatalf("the remote lacks the closed session: %v\n%s\nserver stderr:\n%s", err, out, stderr.String())
	}
	if !strings.Contains(string(out), "pushing-agent 1.0: Thought ") {
		t.Errorf("remote log:\n%s", out)
	}
	if strings.Contains(stderr.String(), "auto-push") {
		t.Errorf("server stderr mentions auto-push:\n%s", stderr.String())
	}
}

// TestServeMemoryWritesNothing: with THOUGHTBOX_STORAGE=memory the server
// keeps its promise to write nothing to the data directory, not even the
// export of a completed session.
func TestServeMemoryWritesNothing(t *testing.T) {
	bin := thoughtboxBinary(t)
	data := filepath.Join(t.TempDir(), "data")
	s, cmd, _ := serveStdio(t, bin, agent("memory-agent", "1"), "THOUGHTBOX_DATA_DIR="+data, "THOUGHTBOX_STORAGE=memory", "DISABLE_THOUGHT_LOGGING=1")
	reason(t, s) // ends with a thought that completes the session
	s.Close()
	cmd.Wait()
	wantNoDataDir(t, data)
}

// TestServeStdioMalformedInput pipes malformed lines between good requests
// into the real binary: each bad line is answered with its JSON-RPC error,
// every request before EOF is answered, and the server exits 0.
func TestServeStdioMalformedInput(t *testing.T) {
	bin := thoughtboxBinary(t)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`garbage`,
		`{}`,
		strings.Repeat("[", 1001) + strings.Repeat("]", 1001),
		`{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":9}`,
	}, "\r\n") + "\r\n"
	cmd := exec.Command(bin, "serve", "--transport", "stdio")
	cmd.Env = append(os.Environ(), "THOUGHTBOX_DATA_DIR="+t.TempDir(), "DISABLE_THOUGHT_LOGGING=1")
	cmd.Stdin = strings.NewReader(in)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("serve exited with %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), out)
	}
	want := []string{
		`"id":1,"result":{`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: field jsonrpc`,
		`"message":"parse error: the message nests deeper than 1000 levels"`,
		`"message":"invalid request: field id: 18446744073709551615 cannot be echoed exactly`,
		`"id":3,"result":{`,
		`{"jsonrpc":"2.0","id":4,"result":{}}`,
		`{"jsonrpc":"2.0","id":9,"error":{"code":-32600,"message":"invalid request: a message with an id needs a method`,
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines out, want %d:\n%s", len(lines), len(want), out)
	}
	// Answers are written as each is ready, not in the order asked.
	for _, w := range want {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, w) }) {
			t.Errorf("no line contains %s:\n%s", w, out)
		}
	}
}

// TestServeHTTPTokens runs the server with a tokens file and two real MCP
// clients over HTTP: each token's identity is the author in git log
// whatever the client calls itself, a read-only token cannot write, and a
// project outside a token's scope is refused.
func TestServeHTTPTokens(t *testing.T) {
	bin := thoughtboxBinary(t)
	data := t.TempDir()
	tokensFile := filepath.Join(t.TempDir(), "tokens")
	const alice, bob = "alice-token-0123456789", "bob-token-0123456789ab"
	os.WriteFile(tokensFile, []byte("# token identity scopes\n"+
		alice+" alice@team.example write:alpha read:beta\n"+
		bob+" bob read:alpha\n"), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url, cmd := startServeHTTP(t, ctx, bin, "THOUGHTBOX_DATA_DIR="+data,
		"THOUGHTBOX_AUTH_TOKENS_FILE="+tokensFile, "DISABLE_THOUGHT_LOGGING=1")
	connect := func(token, name string) *mcp.ClientSession {
		t.Helper()
		client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
		s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
		if err != nil {
			t.Fatalf("connect %s: %v", name, err)
		}
		return s
	}
	if _, err := mcp.NewClient(&mcp.Implementation{Name: "x"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{"not-a-token-at-all-xx"}}}, nil); err == nil {
		t.Error("an unknown token connected")
	}
	denied := func(r gatewayResult, what string) {
		t.Helper()
		if !r.isError || !strings.Contains(r.text, `"PERMISSION_DENIED"`) {
			t.Errorf("%s: want PERMISSION_DENIED, got %s", what, r.text)
		}
	}

	a := connect(alice, "spoofed-name")
	// Resources read the ledger too: the server's own project is in
	// neither token's scope.
	if _, err := a.ReadResource(ctx, &mcp.ReadResourceParams{URI: "thoughtbox://thoughts/00000000-0000-4000-8000-000000000000/range/1-1"}); err == nil || !strings.Contains(err.Error(), "may not read project") {
		t.Errorf("a resource read outside the token's scope: %v, want a refusal", err)
	}
	defer a.Close()
	denied(callGateway(t, a, "list_sessions", nil), "alice reading the default project")
	if r := callGateway(t, a, "navigate", map[string]any{"project": "alpha", "create": true}); r.isError {
		t.Fatalf("alice navigate alpha: %s", r.text)
	}
	start := callGateway(t, a, "start_new", map[string]any{"sessionTitle": "alpha work"})
	if start.isError {
		t.Fatalf("start_new: %s", start.text)
	}
	callGateway(t, a, "cipher", nil)
	th := callGateway(t, a, "thought", map[string]any{"thought": "written by alice", "nextThoughtNeeded": true})
	if th.isError {
		t.Fatalf("thought: %s", th.text)
	}
	var reply struct{ SessionID string }
	json.Unmarshal([]byte(th.text), &reply)
	denied(callGateway(t, a, "navigate", map[string]any{"project": "beta", "create": true}), "alice creating beta (read only)")
	denied(callGateway(t, a, "navigate", map[string]any{"project": "gamma", "create": true}), "alice creating gamma (out of scope)")

	b := connect(bob, "also-spoofed")
	defer b.Close()
	if r := callGateway(t, b, "navigate", map[string]any{"project": "alpha"}); r.isError {
		t.Fatalf("bob navigate alpha: %s", r.text)
	}
	if r := callGateway(t, b, "list_sessions", nil); r.isError || !strings.Contains(r.text, "alpha work") {
		t.Errorf("bob reading alpha: %s", r.text)
	}
	denied(callGateway(t, b, "start_new", map[string]any{"sessionTitle": "bob writes"}), "bob writing with a read-only token")
	if r := callGateway(t, b, "get_state", nil); r.isError || !strings.Contains(r.text, `"author":"bob \u003cbob@agents.thoughtbox.invalid\u003e"`) {
		t.Errorf("bob's author: %s", r.text)
	}
	a.Close()
	b.Close()
	cancel()
	cmd.Wait()
	if _, err := exec.LookPath("git"); err != nil {
		return
	}
	out, err := exec.Command("git", "--git-dir", filepath.Join(data, "projects", "alpha.git"), "log", "--all", "--format=%an <%ae>|%s").CombinedOutput()
	if err != nil {
		t.Fatalf("git log: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "alice@team.example <alice@team.example>|Thought 1: written by alice") || strings.Contains(string(out), "spoofed") {
		t.Errorf("git log of alpha:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(data, "projects", "beta.git")); err == nil {
		t.Error("beta was created by a token that may only read it")
	}
}

// TestReadOnlyDataDir: a ledger whose files this user cannot write (a
// read-only mount, another user's data directory, a disk left full) still
// lists, shows, exports and verifies; a write is refused with a message
// saying why. As root, permissions do not bind, so the commands run as the
// user nobody.
func TestReadOnlyDataDir(t *testing.T) {
	built := thoughtboxBinary(t)
	root, err := os.MkdirTemp("/tmp", "tb-readonly-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { exec.Command("chmod", "-R", "u+w", root).Run(); os.RemoveAll(root) }()
	os.Chmod(root, 0o755)
	// A copy the other user can run.
	bin := filepath.Join(root, "thoughtbox")
	if out, err := exec.Command("cp", built, bin).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	os.Chmod(bin, 0o755)
	asUser := func(args ...string) *exec.Cmd { return exec.Command(bin, args...) }
	if os.Geteuid() == 0 {
		su, err := exec.LookPath("su")
		if err != nil {
			t.Skip("running as root without su: cannot take the write permission away")
		}
		if out, err := exec.Command(su, "nobody", "-s", "/bin/sh", "-c", "true").CombinedOutput(); err != nil {
			t.Skipf("cannot run as nobody: %v %s", err, out)
		}
		asUser = func(args ...string) *exec.Cmd {
			line := bin
			for _, a := range args {
				line += " '" + a + "'"
			}
			return exec.Command(su, "nobody", "-s", "/bin/sh", "-c", line)
		}
	}
	data := filepath.Join(root, "data")
	run := func(cmd *exec.Cmd) (string, error) {
		cmd.Env = append(os.Environ(), "THOUGHTBOX_DATA_DIR="+data, "HOME="+root)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run(exec.Command(bin, "start", "Read me"))
	if err != nil {
		t.Fatalf("start: %v\n%s", err, out)
	}
	id := strings.TrimSpace(out)
	if out, err := run(exec.Command(bin, "add", id, "a thought to read")); err != nil {
		t.Fatalf("add: %v\n%s", err, out)
	}
	if out, err := exec.Command("chmod", "-R", "a+rX,a-w", data).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v %s", err, out)
	}
	for _, args := range [][]string{{"sessions"}, {"show", id}, {"export", id}, {"verify"}} {
		out, err := run(asUser(args...))
		if err != nil || !strings.Contains(out, id[:8]) {
			t.Errorf("%v on a read-only ledger: %v\n%s", args, err, out)
		}
	}
	out, err = run(asUser("add", id, "another"))
	if err == nil || !strings.Contains(out, "read-only") {
		t.Errorf("add on a read-only ledger: %v\n%s", err, out)
	}
}

// TestServeHTTPExportIgnoresClientRoots runs the server over HTTP with an
// allowed export folder (THOUGHTBOX_EXPORT_DIRS) and a client that offers
// a root of its own, binds it, and asks for an export into
// <root>/.ssh/authorized_keys: the export is refused naming destination,
// and nothing is written there. The allowed folder takes an export; a name
// too long for the file system is INVALID_PAYLOAD, not STORAGE_ERROR.
func TestServeHTTPExportIgnoresClientRoots(t *testing.T) {
	bin := thoughtboxBinary(t)
	data, allowed, somewhere := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(somewhere, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url, cmd := startServeHTTP(t, ctx, bin, "THOUGHTBOX_DATA_DIR="+data,
		"THOUGHTBOX_EXPORT_DIRS="+allowed, "DISABLE_THOUGHT_LOGGING=1")
	client := mcp.NewClient(&mcp.Implementation{Name: "far-away", Version: "1"}, nil)
	rootURI := "file://" + filepath.ToSlash(somewhere)
	client.AddRoots(&mcp.Root{URI: rootURI, Name: "somewhere"})
	s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := reason(t, s)
	if r := callGateway(t, s, "bind_root", map[string]any{"rootUri": rootURI, "project": "_default"}); r.isError {
		t.Fatalf("bind_root: %s", r.text)
	}
	export := func(dest string) gatewayResult {
		return callGateway(t, s, "session", map[string]any{"operation": "export", "sessionId": id, "format": "markdown", "destination": dest})
	}
	keys := filepath.Join(somewhere, ".ssh", "authorized_keys")
	r := export(keys)
	if !r.isError || !strings.Contains(r.text, `"code":"INVALID_PAYLOAD"`) || !strings.Contains(r.text, `"field":"destination"`) ||
		!strings.Contains(r.text, "over HTTP the client's roots") || !strings.Contains(r.text, allowed) {
		t.Errorf("export into the client's root: %s", r.text)
	}
	if _, err := os.Stat(keys); !os.IsNotExist(err) {
		t.Fatalf("%s was written (%v)", keys, err)
	}
	if r := export(filepath.Join(allowed, "reasoning.md")); r.isError {
		t.Errorf("export into the allowed folder: %s", r.text)
	} else if b, err := os.ReadFile(filepath.Join(allowed, "reasoning.md")); err != nil || len(b) == 0 {
		t.Errorf("the allowed folder's export: %q, %v", b, err)
	}
	for _, long := range []string{filepath.Join(allowed, strings.Repeat("n", 300)+".md"), strings.Repeat("n", 300) + ".md"} {
		if r := export(long); !r.isError || !strings.Contains(r.text, `"code":"INVALID_PAYLOAD"`) || !strings.Contains(r.text, "at most 255") {
			t.Errorf("a name of 300 bytes: %s", r.text)
		}
	}
	s.Close()
	cancel()
	cmd.Wait()
	if ents, _ := os.ReadDir(filepath.Join(somewhere, ".ssh")); len(ents) != 0 {
		t.Errorf("files appeared in the client's root: %v", ents)
	}
}

// TestServeHTTPMessageWithoutMethod posts, on an initialized MCP session of
// the real server, a message with an id and neither a method nor a result:
// it is answered with -32600 echoing the id, not accepted in silence.
func TestServeHTTPMessageWithoutMethod(t *testing.T) {
	bin := thoughtboxBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url, cmd := startServeHTTP(t, ctx, bin, "THOUGHTBOX_DATA_DIR="+t.TempDir(), "DISABLE_THOUGHT_LOGGING=1")
	defer func() { cancel(); cmd.Wait() }()
	post := func(session, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, _ := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatalf("initialize gave no session: %s", resp.Status)
	}
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp, body := post(session, `{"jsonrpc":"2.0","id":9}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"id":9,"error":{"code":-32600,"message":"invalid request: a message with an id needs a method`) {
		t.Errorf("a message without a method: %s %s", resp.Status, body)
	}
	// A real answer to a request of the server's is still taken.
	if resp, body := post(session, `{"jsonrpc":"2.0","id":10,"result":{}}`); strings.Contains(body, "needs a method") {
		t.Errorf("a response: %s %s", resp.Status, body)
	}
}
