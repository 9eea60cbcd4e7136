package gateway_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway"
)

// BenchmarkThought measures one thought call through a real client over
// in-memory transports, on the in-memory Git store.
func BenchmarkThought(b *testing.B) {
	e := newEnvB(b)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := e.g.NewServer().Connect(b.Context(), st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(), ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	for _, op := range []string{"start_new", "cipher"} {
		args := map[string]any{}
		if op == "start_new" {
			args["sessionTitle"] = "bench"
		}
		if res, err := cs.CallTool(b.Context(), toolCall(op, args)); err != nil || res.IsError {
			b.Fatalf("%s: %v %v", op, err, res)
		}
	}
	params := toolCall("thought", map[string]any{"thought": "S1|H|a step of reasoning", "nextThoughtNeeded": true})
	b.ResetTimer()
	for b.Loop() {
		res, err := cs.CallTool(b.Context(), params)
		if err != nil || res.IsError {
			b.Fatalf("thought: %v %v", err, textOf(res))
		}
	}
}

func newEnvB(b *testing.B) *env {
	s, err := gitstoreMemory()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	e := &env{store: &recordingStore{Store: s}}
	e.l = ledgerNew(e.store)
	e.g = gateway.New(e.l, gateway.Options{})
	return e
}
