package gateway_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestThoughtCodeRefs records code references through a real MCP client:
// they are normalized and kept with the thought; a bad one is refused
// naming code[i], and nothing is recorded.
func TestThoughtCodeRefs(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	id := c.ready("Code refs")
	c.think("The parser", map[string]any{"code": []map[string]any{
		{"path": "./cmd//main.go", "from": 4, "to": 9},
		{"commit": "ABCDEF1234567"},
	}})
	body := c.fail("thought", map[string]any{"thought": "bad", "nextThoughtNeeded": true,
		"code": []map[string]any{{"path": "ok.go"}, {"path": "../up.go"}}}, ledger.CodeInvalidPayload)
	if msg, _ := body["message"].(string); !contains(msg, "code[1]: path \"../up.go\" is outside the repository") {
		t.Errorf("message %q", msg)
	}
	v, err := e.l.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if v.Session.ThoughtCount != 1 {
		t.Fatalf("%d thoughts recorded, want 1", v.Session.ThoughtCount)
	}
	n := v.Graph.MainChain()[0]
	want := []ledger.CodeRef{{Path: "cmd/main.go", From: 4, To: 9}, {Commit: "abcdef1234567"}}
	if diff := cmp.Diff(want, n.Data.Code); diff != "" {
		t.Errorf("stored code refs (-want +got):\n%s", diff)
	}
}
