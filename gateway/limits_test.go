package gateway_test

import (
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestThoughtSizeLimit: a thought over the ledger's limit is refused over
// MCP with INVALID_PAYLOAD naming the field and the limit, before any
// session is created for it, and one at the limit is recorded.
func TestThoughtSizeLimit(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.ok("start_new", nil)
	c.ok("cipher", nil)

	// No session yet: the refused thought must not create one.
	big := strings.Repeat("x", ledger.DefaultMaxThoughtBytes+1)
	body := c.fail("thought", map[string]any{"thought": big, "nextThoughtNeeded": true}, ledger.CodeInvalidPayload)
	msg, _ := body["message"].(string)
	if !strings.Contains(msg, "thought: is 1048577 bytes; the limit is 1048576 bytes") {
		t.Errorf("message = %q, want the size and the limit", msg)
	}
	if d, _ := body["details"].(map[string]any); num(d["limit"]) != ledger.DefaultMaxThoughtBytes || d["field"] != "thought" {
		t.Errorf("details = %v, want field thought and the limit", body["details"])
	}
	sessions, err := e.l.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 0 {
		t.Fatalf("a refused thought created %d sessions", len(sessions))
	}

	at := strings.Repeat("y", ledger.DefaultMaxThoughtBytes)
	r := c.think(at, nil)
	if num(r["thoughtNumber"]) != 1 {
		t.Fatalf("a thought at the limit was not recorded: %v", r)
	}
}
