package gateway_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway"
)

// connectModelStdio is connectModel over ServeStdio on real pipes, the
// way a client that starts `thoughtbox serve` reaches it. The stdio
// transport answers a plain call on the goroutine that reads the input,
// so a call that samples must hand reading on, or it would wait forever
// for the model's reply.
func (e *env) connectModelStdio(t *testing.T, m *model) *client {
	t.Helper()
	serverIn, clientOut, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	clientIn, serverOut, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.g.ServeStdio(ctx, serverIn, serverOut) }()
	c := &client{t: t, toolsChanged: make(chan struct{}, 16)}
	impl, opts := clientOptions(clientOpts{name: "sampling-agent", version: "2.0"}, c.toolsChanged)
	opts.CreateMessageHandler = m.handle
	c.cs, err = mcp.NewClient(impl, opts).Connect(t.Context(), &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.cs.Close()
		clientOut.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ServeStdio: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("ServeStdio did not return after the client left")
		}
		cancel()
		for _, f := range []*os.File{serverIn, serverOut, clientIn} {
			f.Close()
		}
	})
	return c
}

// TestStdioSamplingDuringDirectCall: critiques and an RLM run with
// sub-queries — calls that ask the client's model, once or several times,
// before they answer — complete over real stdio pipes, and plain calls
// before, between and after them are answered as usual.
func TestStdioSamplingDuringDirectCall(t *testing.T) {
	e, cs := newSamplingEnv(t, gateway.Options{})
	m := &model{root: []string{
		repl(`var verdicts = context.thoughts.map(t => llm_query("Assumption? " + t.thought));`) + "FINAL_VAR(verdicts)",
	}}
	c := e.connectModelStdio(t, m)
	c.ready("stdio sampling")
	c.think("The cache is stale after deploys.", nil)
	for i := 0; i < 3; i++ {
		r := c.think("So we flush it on every write.", map[string]any{"critique": true})
		crit, _ := r["critique"].(map[string]any)
		if crit == nil || crit["text"] != critiqueText {
			t.Fatalf("critique %d: reply %v", i+1, r)
		}
		c.think("Plain.", nil)
	}
	_, res := rlmThought(c, "Classify each thought.")
	if res["status"] != "final" || num(res["subQueries"]) != 7 {
		t.Fatalf("rlm = %v", res)
	}
	r := c.think("After.", nil)
	if num(r["thoughtNumber"]) != 9 {
		t.Errorf("last thought numbered %v, want 9", r["thoughtNumber"])
	}
	if critiques, roots, subs := m.counts(); critiques != 3 || roots != 1 || subs != 7 {
		t.Errorf("sampling requests: %d critiques, %d root, %d sub-queries", critiques, roots, subs)
	}
	if len(cs.critics) != 3 {
		t.Errorf("%d critique commits", len(cs.critics))
	}
	if !strings.Contains(e.log.String(), "llm_query to scripted-sub") {
		t.Errorf("sub-queries not logged:\n%s", e.log.String())
	}
}
