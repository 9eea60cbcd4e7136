package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
)

var update = flag.Bool("update", false, "rewrite the JSON-RPC transcript goldens under testdata/transcripts")

// step is one exchange of a transcript: a frame sent (a request, a
// notification, or a line that is not JSON) and, unless it is a
// notification, the answer with its id; await names notifications the
// server must send after the answer before the next step.
type step struct {
	note  string
	send  string
	await []string
}

func rpc(id int, method string, params any) string {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		panic(err)
	}
	return string(b)
}

func gatewayCall(id int, op string, args any) string {
	in := map[string]any{"operation": op}
	if args != nil {
		in["args"] = args
	}
	return rpc(id, "tools/call", map[string]any{"name": "thoughtbox_gateway", "arguments": in})
}

func toolCall2(id int, tool string, args any) string {
	return rpc(id, "tools/call", map[string]any{"name": tool, "arguments": args})
}

const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"transcript","version":"1.0.0"}}}`
const initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
const listChanged = "notifications/tools/list_changed"

// TestTranscript drives a real server over the stdio transport, frame by
// frame, and compares what it answers — volatile values (ids, commits,
// times, durations) replaced by placeholders — with the goldens under
// testdata/transcripts. `go test ./gateway -run TestTranscript -update`
// rewrites them; review the diff as a change of the server's surface.
func TestTranscript(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"stages", []step{
			{"initialize", initialize, nil},
			{"", initialized, nil},
			{"stage 0: the gateway tool alone", rpc(1, "tools/list", map[string]any{}), nil},
			{"start_new unlocks stage 1 and the cipher tool", gatewayCall(2, "start_new", map[string]any{"sessionTitle": "Transcript", "tags": []string{"golden"}}), []string{listChanged}},
			{"the cipher unlocks stage 2: thought and mental models tools", toolCall2(3, "thoughtbox_cipher", map[string]any{}), []string{listChanged}},
			{"stage 2 tools", rpc(4, "tools/list", map[string]any{}), nil},
			{"a thought in cipher notation", toolCall2(5, "thoughtbox_thought", map[string]any{"thought": "S1|H|The cache is stale", "nextThoughtNeeded": true}), nil},
			{"a second thought through the gateway", gatewayCall(6, "thought", map[string]any{"thought": "S2|E|S1|Hit rate fell after the deploy", "nextThoughtNeeded": true, "totalThoughts": 4}), nil},
			{"a branch", toolCall2(7, "thoughtbox_thought", map[string]any{"thought": "maybe the TTL", "nextThoughtNeeded": true, "branchFromThought": 1, "branchId": "ttl"}), nil},
			{"a revision", toolCall2(8, "thoughtbox_thought", map[string]any{"thought": "The cache is cold, not stale", "nextThoughtNeeded": true, "isRevision": true, "revisesThought": 1}), nil},
			{"a domain enters stage 3 and narrows mental models", gatewayCall(9, "navigate", map[string]any{"domain": "debugging"}), []string{listChanged}},
			{"mental models of the domain", toolCall2(10, "thoughtbox_mental_models", map[string]any{"operation": "list_models"}), nil},
			{"read back", gatewayCall(11, "read_thoughts", map[string]any{"last": 2}), nil},
			{"the structure", gatewayCall(12, "get_structure", nil), nil},
			{"the session listing", gatewayCall(13, "session", map[string]any{"operation": "list"}), nil},
			{"where the connection stands", gatewayCall(14, "get_state", nil), nil},
		}},
		{"errors", []step{
			{"initialize", initialize, nil},
			{"", initialized, nil},
			{"a thought before its stage", gatewayCall(1, "thought", map[string]any{"thought": "early", "nextThoughtNeeded": true}), nil},
			{"an unknown operation", gatewayCall(2, "teleport", nil), nil},
			{"a call without an operation", rpc(3, "tools/call", map[string]any{"name": "thoughtbox_gateway", "arguments": map[string]any{}}), nil},
			{"start a session", gatewayCall(4, "start_new", map[string]any{"sessionTitle": "Errors"}), []string{listChanged}},
			{"an unknown sub-operation", gatewayCall(5, "session", map[string]any{"operation": "teleport"}), nil},
			{"an argument no sub-operation takes", gatewayCall(6, "knowledge", map[string]any{"operation": "list", "wibble": 1}), nil},
			{"an argument of the wrong type", gatewayCall(7, "session", map[string]any{"operation": "list", "limit": "five"}), nil},
			{"an unknown session", gatewayCall(8, "load_context", map[string]any{"sessionId": "nope"}), nil},
			{"a tool not yet disclosed", toolCall2(9, "thoughtbox_thought", map[string]any{"thought": "x", "nextThoughtNeeded": true}), nil},
			{"a method the server does not have", rpc(10, "teleport/now", map[string]any{}), nil},
			{"a line that is not JSON", `{"jsonrpc":"2.0","id":11,`, nil},
			{"still serving after it", rpc(12, "ping", map[string]any{}), nil},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runTranscript(t, tc.steps)
			path := filepath.Join("testdata", "transcripts", tc.name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("transcript %s differs from %s (-golden +now); if the change is meant, run go test ./gateway -run TestTranscript -update and review the diff:\n%s", tc.name, path, diff)
			}
		})
	}
}

// runTranscript serves one connection over stdio and plays steps on it.
func runTranscript(t *testing.T, steps []step) string {
	e := newEnv(t, gateway.Options{})
	e.g = gateway.New(e.l, gateway.Options{Version: "0.0.0-transcript", ThoughtLog: io.Discard,
		Knowledge: ledger.NewKnowledge(e.store.Store, ledger.KnowledgeOptions{})})
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.g.ServeStdio(ctx, serverIn, serverOut) }()
	defer func() {
		clientOut.Close()
		cancel()
		<-done
	}()

	frames := make(chan []byte, 64)
	go func() {
		r := bufio.NewReaderSize(clientIn, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				frames <- line
			}
			if err != nil {
				close(frames)
				return
			}
		}
	}()
	next := func(what string) map[string]any {
		t.Helper()
		select {
		case f, ok := <-frames:
			if !ok {
				t.Fatalf("the server closed its output while %s", what)
			}
			var m map[string]any
			if err := json.Unmarshal(f, &m); err != nil {
				t.Fatalf("the server wrote %q, which is not a JSON object: %v", f, err)
			}
			return m
		case <-time.After(30 * time.Second):
			t.Fatalf("no frame from the server while %s", what)
		}
		return nil
	}

	n := newNormaliser()
	var out strings.Builder
	for _, s := range steps {
		if s.note != "" {
			fmt.Fprintf(&out, "# %s\n", s.note)
		}
		fmt.Fprintf(&out, "-> %s\n", n.frame([]byte(s.send)))
		if _, err := io.WriteString(clientOut, s.send+"\n"); err != nil {
			t.Fatal(err)
		}
		var sent struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		isCall := json.Unmarshal([]byte(s.send), &sent) == nil && sent.ID != nil
		if !json.Valid([]byte(s.send)) {
			isCall = true // answered with a parse error, id null
		}
		// A list_changed notification is sent 10 ms after the change
		// (the SDK's debounce), usually after the answer but not always on
		// a loaded machine: the answer is written first, then the
		// notifications in the order they came.
		awaiting := append([]string(nil), s.await...)
		var answer, notes [][]byte
		for isCall || len(awaiting) > 0 {
			m := next("waiting for the answer to " + s.send)
			b, _ := json.Marshal(m)
			if method, _ := m["method"].(string); method != "" {
				notes = append(notes, b)
				if len(awaiting) > 0 && awaiting[0] == method {
					awaiting = awaiting[1:]
				}
				continue
			}
			answer = append(answer, b)
			isCall = false
		}
		for _, b := range append(answer, notes...) {
			fmt.Fprintf(&out, "<- %s\n", n.frame(b))
		}
		out.WriteString("\n")
	}
	return out.String()
}

// normaliser replaces volatile values by placeholders numbered in order of
// appearance, so that a transcript still shows which ids are the same.
type normaliser struct {
	seen map[string]string
	n    map[string]int
}

func newNormaliser() *normaliser {
	return &normaliser{seen: map[string]string{}, n: map[string]int{}}
}

var (
	uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	shaRE  = regexp.MustCompile(`\b[0-9a-f]{40}\b`)
	timeRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	// durations and measures that vary run to run, as JSON inside JSON
	// (the tool results' text) or as plain JSON.
	measureRE = regexp.MustCompile(`(\\?"(?:durationMs|duration|elapsedMs|thoughtDensity|timestamp|createdAt|updatedAt|lastAccessedAt)\\?":)\s*-?\d+(\.\d+)?`)
	// the month folder a session is filed under
	partitionRE = regexp.MustCompile(`(\\?"partitionPath\\?":\s*\\?")\d{4}-\d\d`)
)

func (n *normaliser) placeholder(kind, v string) string {
	key := kind + ":" + v
	if p, ok := n.seen[key]; ok {
		return p
	}
	n.n[kind]++
	p := fmt.Sprintf("<%s-%d>", kind, n.n[kind])
	n.seen[key] = p
	return p
}

// frame normalises one frame: volatile values, then key order and spacing
// (through a JSON round trip) for frames that are JSON.
func (n *normaliser) frame(b []byte) string {
	s := uuidRE.ReplaceAllStringFunc(string(b), func(v string) string { return n.placeholder("uuid", v) })
	s = shaRE.ReplaceAllStringFunc(s, func(v string) string { return n.placeholder("sha", v) })
	s = timeRE.ReplaceAllString(s, "<time>")
	s = measureRE.ReplaceAllString(s, "${1}0")
	s = partitionRE.ReplaceAllString(s, "${1}<month>")
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	unfoldTexts(v)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return s
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// unfoldTexts shows a tool result's text that is itself JSON as JSON (under
// "text (JSON)"), so that a change to a reply reads as a change of lines.
func unfoldTexts(v any) {
	switch x := v.(type) {
	case map[string]any:
		if text, ok := x["text"].(string); ok && x["type"] == "text" {
			var inner any
			if t := strings.TrimSpace(text); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Unmarshal([]byte(t), &inner) == nil {
				delete(x, "text")
				x["text (JSON)"] = inner
			}
		}
		for _, e := range x {
			unfoldTexts(e)
		}
	case []any:
		for _, e := range x {
			unfoldTexts(e)
		}
	}
}
