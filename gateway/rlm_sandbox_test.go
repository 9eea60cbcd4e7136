package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/gateway/rlm"
	"github.com/thoughtbox/thoughtbox/sandbox"
)

// TestRLMBlockOutOfMemory: a block that allocates without end used to end
// the server ("fatal error: out of memory") and with it every client's
// connection. Now its sandbox process ends, the model and the agent are
// told why, and the same server goes on serving: the run finishes, and
// the next calls, RLM or not, work (the second run sees the two thoughts
// recorded since).
func TestRLMBlockOutOfMemory(t *testing.T) {
	e, _ := newSamplingEnv(t, gateway.Options{Sampling: gateway.SamplingOptions{RLM: rlm.Options{
		BlockTimeout: time.Hour, // the memory limit, not the clock, must end the block
		Sandbox:      sandbox.Limits{Memory: 64 << 20},
	}}})
	m := &model{root: []string{
		repl("var kept = 1") + repl("const a = []; while (true) a.push(new Array(100000).fill(a.length))"),
		repl("FINAL(typeof kept)"),
		repl("FINAL(context.thoughts.length)"),
	}}
	c := e.connectModel(t, m, false)
	c.ready("allocate")
	_, res := rlmThought(c, "Allocate.")
	if res["status"] != "final" || res["answer"] != "undefined" {
		t.Fatalf("rlm = %v", res)
	}
	block := list(res["transcript"])[2].(map[string]any)
	if block["kind"] != "repl" || !strings.Contains(block["error"].(string), "the sandbox ran out of memory (limit 64 MiB); the REPL was restarted") {
		t.Errorf("block = %v", block)
	}
	if got := m.lastRootPrompt(); !strings.Contains(got, "ran out of memory") {
		t.Errorf("the model was not told:\n%s", got)
	}
	if r := c.think("The server is still here.", nil); r["thoughtNumber"] == nil {
		t.Fatalf("after the run: %v", r)
	}
	if _, res := rlmThought(c, "Count."); res["status"] != "final" || res["answer"] != "2" {
		t.Errorf("a second run: %v", res)
	}
}
