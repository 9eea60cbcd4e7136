package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lockedBuffer is a stderr that a server's goroutines and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor polls cond until it holds or the wait is over.
func waitFor(t *testing.T, what string, wait time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", wait, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMCPCommandServesStdio: `thoughtbox mcp`, with no flags, is an MCP
// server on stdin and stdout that a go-sdk client lists the tools of and
// calls, even with THOUGHTBOX_TRANSPORT=http in the environment (that
// setting is serve's); it ends when the client closes its stdin.
func TestMCPCommandServesStdio(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &lockedBuffer{}
	vars := map[string]string{"THOUGHTBOX_DATA_DIR": t.TempDir(), "HOME": "/nonexistent", "THOUGHTBOX_TRANSPORT": "http", "DISABLE_THOUGHT_LOGGING": "1"}
	env := Env{Stdin: inR, Stdout: outW, Stderr: stderr, LookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	done := make(chan int, 1)
	go func() {
		code := Main(context.Background(), []string{"mcp"}, env)
		outW.Close()
		done <- code
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-test", Version: "1"}, nil)
	s, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr: %s", err, stderr)
	}
	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "thoughtbox_gateway") {
		t.Fatalf("tools/list: %v, want thoughtbox_gateway among them", names)
	}
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "thoughtbox_gateway", Arguments: map[string]any{"operation": "get_state"}})
	if err != nil || res.IsError {
		t.Fatalf("get_state: %v %+v", err, res)
	}
	s.Close()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Fatalf("thoughtbox mcp exited %d after the client closed; stderr: %s", code, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("thoughtbox mcp still running 30 s after the client closed its stdin")
	}
}

// startServe runs `thoughtbox serve` on a free port in-process with stdin
// as its standard input, and waits until it listens.
func startServe(t *testing.T, stdin io.Reader) (done chan int, stderr *lockedBuffer) {
	t.Helper()
	stderr = &lockedBuffer{}
	vars := map[string]string{"THOUGHTBOX_DATA_DIR": t.TempDir(), "HOME": "/nonexistent", "PORT": "0"}
	env := Env{Stdin: stdin, Stdout: io.Discard, Stderr: stderr, LookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan int, 1)
	go func() { done <- Main(ctx, []string{"serve"}, env) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop when cancelled")
		}
	})
	waitFor(t, "serve to listen", time.Minute, func() bool {
		return strings.Contains(stderr.String(), "MCP server listening on http://")
	})
	return done, stderr
}

// TestServeStopsWhenStdinPipeCloses: an HTTP server whose stdin is a
// pipe (a client started it) stops, exit 0, when that pipe closes, so it
// cannot outlive the client and hold the port.
func TestServeStopsWhenStdinPipeCloses(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	done, stderr := startServe(t, r)
	w.Close()
	select {
	case code := <-done:
		done <- code // for the cleanup
		if code != ExitOK {
			t.Fatalf("exit %d; stderr: %s", code, stderr)
		}
		if !strings.Contains(stderr.String(), "standard input closed") {
			t.Errorf("stderr does not say why the server stopped: %s", stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve still running 30 s after its stdin pipe closed; stderr: %s", stderr)
	}
}

// TestServeKeepsRunningWithoutAPipe: a server started from a shell in the
// background or by systemd has /dev/null (or a terminal) for stdin, which
// reads as ended at once: it keeps serving.
func TestServeKeepsRunningWithoutAPipe(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	done, stderr := startServe(t, null)
	select {
	case code := <-done:
		done <- code
		t.Fatalf("serve with stdin from %s stopped (exit %d); stderr: %s", os.DevNull, code, stderr)
	case <-time.After(time.Second):
	}
}

// TestServePortInUse: a port another process holds is reported as such,
// with that process named where the system tells (Linux), exit 1.
func TestServePortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	vars := map[string]string{"THOUGHTBOX_DATA_DIR": t.TempDir(), "HOME": "/nonexistent"}
	code, _, stderr := run(t, vars, "serve", "--port", fmt.Sprint(port))
	if code != ExitFailure {
		t.Fatalf("exit %d, want %d; stderr: %s", code, ExitFailure, stderr)
	}
	want := fmt.Sprintf(`port %d is already in use`, port)
	if runtime.GOOS == "linux" {
		want += fmt.Sprintf(` by pid %d \(.*\)`, os.Getpid())
	}
	if !regexp.MustCompile(want).MatchString(stderr) {
		t.Errorf("stderr %q does not match %q", stderr, want)
	}
	if !strings.Contains(stderr, "hint: ") || !strings.Contains(stderr, "thoughtbox mcp") {
		t.Errorf("stderr gives no hint: %q", stderr)
	}
}
