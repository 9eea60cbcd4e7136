package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway/internal/stdio"
	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// directScript is what both runs of TestDirectCallsAnswerAsTheSDK send:
// calls the direct path takes (gateway calls, good and bad, one with a
// progress token) and calls it leaves to the SDK (a protocol version in
// _meta, another tool, other methods).
var directScript = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"thoughtbox_gateway","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"thoughtbox_gateway","arguments":{"operation":"nope"}}}`,
	`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"thoughtbox_gateway","arguments":{"operation":"start_new","args":{"sessionTitle":"<same> & title"}}}}`,
	`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"thoughtbox_gateway","arguments":{"operation":"cipher"}}}`,
	`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"thoughtbox_gateway","arguments":{"operation":"thought","args":{"thought":"a <b> & c","nextThoughtNeeded":true}}}}`,
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"thoughtbox_gateway","arguments":{"operation":"thought","args":{"thought":5}}}}`,
	`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"thoughtbox_gateway","arguments":null}}`,
	`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"thoughtbox_gateway"}}`,
	`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"thoughtbox_gateway","arguments":{"operation":"thought","thought":"with meta","nextThoughtNeeded":true}}}`,
	`{"jsonrpc":"2.0","id":"m","method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"},"name":"thoughtbox_gateway","arguments":{"operation":"get_state"}}}`,
	`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`,
	`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"thoughtbox_gateway","arguments":{"operation":"thought","thought":"flat \u00e9","nextThoughtNeeded":false}}}`,
	`{"jsonrpc":"2.0","id":12,"method":"tools/list"}`,
}

// runDirectScript sends directScript over stdio to a fresh gateway on a
// memory store with a fixed clock and returns every line written back,
// with the random session id and what derives from it (commit ids)
// replaced.
func runDirectScript(t *testing.T, direct bool) []string {
	t.Helper()
	store, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	tick := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { tick = tick.Add(time.Second); return tick }
	g := New(ledger.New(store, ledger.Options{Now: now}), Options{ThoughtLog: io.Discard})
	c := g.newConn(nil)

	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.runStdio(ctx, stdio.Transport{In: serverIn, Out: serverOut}, direct) }()

	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(clientIn)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var got []string
	for _, msg := range directScript {
		if _, err := io.WriteString(clientOut, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal([]byte(msg), &m)
		if m.ID == nil {
			continue // a notification: no answer
		}
		for {
			var line string
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("server output ended before the answer to %s", msg)
				}
				line = l
			case <-time.After(10 * time.Second):
				t.Fatalf("no answer to %s", msg)
			}
			var r struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal([]byte(line), &r)
			if r.ID == nil {
				// A notification (tools/list_changed): the SDK sends
				// those after a delay, so when they come is not compared.
				continue
			}
			got = append(got, line)
			if string(r.ID) == string(m.ID) {
				break
			}
		}
	}
	clientOut.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("runStdio: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("runStdio did not return at the end of input")
	}
	uuid := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	oid := regexp.MustCompile(`[0-9a-f]{40}`)
	for i, l := range got {
		got[i] = oid.ReplaceAllString(uuid.ReplaceAllString(l, "<session>"), "<oid>")
	}
	return got
}

// TestDirectCallsAnswerAsTheSDK runs the same exchange with the gateway's
// calls taken from the transport and with all of them going through the
// SDK: every byte written back must be the same.
func TestDirectCallsAnswerAsTheSDK(t *testing.T) {
	viaSDK := runDirectScript(t, false)
	direct := runDirectScript(t, true)
	if len(viaSDK) != len(direct) {
		t.Fatalf("%d lines through the SDK, %d direct:\n%s\n---\n%s", len(viaSDK), len(direct), strings.Join(viaSDK, "\n"), strings.Join(direct, "\n"))
	}
	for i := range viaSDK {
		if viaSDK[i] != direct[i] {
			t.Errorf("line %d differs:\nSDK:    %s\ndirect: %s", i, viaSDK[i], direct[i])
		}
	}
	// The exchange must have reached the ledger: the thoughts were taken.
	if !strings.Contains(strings.Join(direct, "\n"), `thoughtNumber`) {
		t.Errorf("no thought was recorded:\n%s", strings.Join(direct, "\n"))
	}
}

// TestDirectTakes checks which calls the direct path takes and which it
// leaves to the SDK.
func TestDirectTakes(t *testing.T) {
	store, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	g := New(ledger.New(store, ledger.Options{}), Options{ThoughtLog: io.Discard})
	c := g.newConn(nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := c.server.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	call := func(params string) *jsonrpc.Request {
		id, _ := jsonrpc.MakeID(float64(1))
		return &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(params)}
	}
	plain := call(`{"name":"thoughtbox_gateway","arguments":{"operation":"cipher"}}`)
	if c.direct(ss, plain) != nil {
		t.Error("a call before initialize was taken")
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if c.direct(ss, plain) == nil {
		t.Error("a plain call of the gateway tool was not taken")
	}
	if c.direct(ss, call(`{"_meta":{"progressToken":1},"name":"thoughtbox_gateway","arguments":{}}`)) == nil {
		t.Error("a call with a progress token was not taken")
	}
	if c.direct(nil, plain) != nil {
		t.Error("a call with no session yet was taken")
	}
	for _, params := range []string{
		`{"name":"other","arguments":{}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"thoughtbox_gateway","arguments":{}}`,
		`{"_meta":5,"name":"thoughtbox_gateway","arguments":{}}`,
		`{"name":"thoughtbox_gateway","requestState":"x"}`,
		`{"name":"thoughtbox_gateway","inputResponses":{}}`,
		`{"Name":"thoughtbox_gateway"}`,
		`{"name":5}`,
		`[]`,
		``,
	} {
		if c.direct(ss, call(params)) != nil {
			t.Errorf("params %s were taken", params)
		}
	}
	ping := &jsonrpc.Request{ID: plain.ID, Method: "ping"}
	if c.direct(ss, ping) != nil {
		t.Error("ping was taken")
	}
}
