package gateway

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestGatewayToolMadeOnce: the tool each connection announces is made
// once per gateway, and yet each connection gets bytes of its own: what
// one server does to its tool does not reach the next.
func TestGatewayToolMadeOnce(t *testing.T) {
	ops := newOperations()
	first := ops.gatewayTool()
	want := newOperations().gatewayTool()
	if first.Description != want.Description || !bytes.Equal(first.InputSchema.(json.RawMessage), want.InputSchema.(json.RawMessage)) {
		t.Fatal("the kept tool differs from one made afresh")
	}
	first.InputSchema.(json.RawMessage)[0] = 'X'
	first.Description = "changed"
	second := ops.gatewayTool()
	if second.Description != want.Description || !bytes.Equal(second.InputSchema.(json.RawMessage), want.InputSchema.(json.RawMessage)) {
		t.Fatalf("a change to one connection's tool reached the next: %.40q", second.InputSchema)
	}
}
