package events_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/events"
	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestOpen: "" and "stderr" write to the stderr given, never closing it;
// anything else is a file appended to, its folder created.
func TestOpen(t *testing.T) {
	if _, err := events.Open("/proc/nope/events.jsonl", nil); err == nil {
		t.Errorf("a file that cannot be made: no error")
	}
	var stderr bytes.Buffer
	s, err := events.Open("", &stderr)
	if err != nil {
		t.Fatal(err)
	}
	s.Publish(ledger.Event{Type: "stage_changed", Timestamp: time.Unix(0, 0).UTC(), Data: map[string]any{"newStage": 1}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := stderr.String(); got != `{"type":"stage_changed","timestamp":"1970-01-01T00:00:00Z","data":{"newStage":1}}`+"\n" {
		t.Errorf("stderr = %q", got)
	}

	// A file is appended to, its folder created.
	path := filepath.Join(t.TempDir(), "logs", "events.jsonl")
	for i := range 2 {
		s, err := events.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.Publish(ledger.Event{Type: "session_started", SessionID: "s", Data: map[string]any{"i": i}})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if lines := readLines(t, path); len(lines) != 2 || lines[1]["data"].(map[string]any)["i"] != 1.0 {
		t.Errorf("file = %v", lines)
	}
}

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q", sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// gate is a writer that blocks until released, like a stalled reader.
type gate struct {
	release chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (g *gate) Write(p []byte) (int, error) {
	<-g.release
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.Write(p)
}

func TestPublishNeverBlocks(t *testing.T) {
	g := &gate{release: make(chan struct{})}
	s := events.NewJSONL(g, 4)
	done := make(chan struct{})
	go func() {
		for i := range 100 {
			s.Publish(ledger.Event{Type: "thought_added", Data: map[string]any{"n": i}})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Publish blocked on a stalled writer")
	}
	close(g.release)
	err := s.Close()
	if d := s.Dropped(); d == 0 || err == nil || !strings.Contains(err.Error(), "dropped") {
		t.Errorf("dropped %d, Close = %v", d, err)
	}
	// Every event was either written or counted as dropped, and the ones
	// written are in order.
	lines := strings.Split(strings.TrimSpace(g.buf.String()), "\n")
	if int64(len(lines))+s.Dropped() != 100 {
		t.Errorf("%d written + %d dropped, want 100", len(lines), s.Dropped())
	}
	var last float64 = -1
	for _, line := range lines {
		var e struct{ Data map[string]float64 }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e.Data["n"] <= last {
			t.Errorf("out of order: %v after %v", e.Data["n"], last)
		}
		last = e.Data["n"]
	}
	s.Publish(ledger.Event{Type: "after close"}) // dropped, not a panic
}

func TestNilAndTee(t *testing.T) {
	var s *events.JSONL
	s.Publish(ledger.Event{})
	if s.Close() != nil || s.Dropped() != 0 {
		t.Error("a nil sink is not a no-op")
	}
	if events.Tee(nil, s) != nil {
		t.Error("Tee of nothing is not nil")
	}
	var a, b bytes.Buffer
	sa, sb := events.NewJSONL(&a, 0), events.NewJSONL(&b, 0)
	events.Tee(sa, nil, sb).Publish(ledger.Event{Type: "x"})
	sa.Close()
	sb.Close()
	if a.Len() == 0 || a.String() != b.String() {
		t.Errorf("tee wrote %q and %q", a.String(), b.String())
	}
}

// The stream of a real session, through the gateway: every event type of
// seed 002, in the order things happened.
func TestStreamEndToEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	sink, err := events.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	store, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l := ledger.New(store, ledger.Options{Events: sink})
	g := gateway.New(l, gateway.Options{Events: sink, ExportDir: t.TempDir()})

	st, ct := mcp.NewInMemoryTransports()
	ss, err := g.NewServer().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(op string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "thoughtbox_gateway", Arguments: map[string]any{"operation": op, "args": args}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %v", op, err, res)
		}
		var m map[string]any
		_ = json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &m)
		return m
	}
	id := call("start_new", map[string]any{"sessionTitle": "streamed"})["sessionId"].(string)
	call("cipher", nil)
	call("thought", map[string]any{"thought": "one", "nextThoughtNeeded": true})
	call("thought", map[string]any{"thought": "alt", "nextThoughtNeeded": true, "branchFromThought": 1, "branchId": "alt"})
	call("thought", map[string]any{"thought": "fix", "nextThoughtNeeded": true, "isRevision": true, "revisesThought": 1})
	call("thought", map[string]any{"thought": "done", "nextThoughtNeeded": false})
	call("load_context", map[string]any{"sessionId": id})
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}

	var types []string
	for _, e := range readLines(t, path) {
		types = append(types, e["type"].(string))
		if e["timestamp"] == nil || e["data"] == nil {
			t.Errorf("event lacks timestamp or data: %v", e)
		}
		if e["type"] != "stage_changed" && e["type"] != "cipher_loaded" && e["sessionId"] != id {
			t.Errorf("event of another session: %v", e)
		}
	}
	want := []string{"session_started", "stage_changed", "cipher_loaded", "stage_changed",
		"thought_added", "branch_created", "thought_revised", "thought_added", "session_exported", "session_loaded"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}
}
