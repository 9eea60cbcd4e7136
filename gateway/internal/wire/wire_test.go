package wire

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestDecode: each way a message can be wrong gets its own code and
// message, and the id is echoed only when it was read; well-formed
// requests and responses come back as the SDK's types.
func TestDecode(t *testing.T) {
	cases := []struct {
		in       string
		code     int64
		echo     string // the id echoed in the refusal ("" for null)
		contains string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":`, jsonrpc.CodeParseError, "", "parse error"},
		{`[1,2]`, jsonrpc.CodeInvalidRequest, "", "expected a JSON-RPC message object"},
		{`{"jsonrpc":"2.0","id":1.5,"method":"m"}`, jsonrpc.CodeInvalidRequest, "", "field id"},
		{`{"jsonrpc":"2.0","id":9007199254740993,"method":"m"}`, jsonrpc.CodeInvalidRequest, "", "cannot be echoed exactly"},
		{`{"jsonrpc":"1.0","id":"a","method":"m"}`, jsonrpc.CodeInvalidRequest, `"a"`, "field jsonrpc"},
		{`{"jsonrpc":"2.0","id":7,"method":3}`, jsonrpc.CodeInvalidRequest, "7", "field method must be a string"},
		{`{"jsonrpc":"2.0"}`, jsonrpc.CodeInvalidRequest, "", "needs a method"},
		{`{"jsonrpc":"2.0","id":4}`, jsonrpc.CodeInvalidRequest, "4", NoMethod},
		{`{"jsonrpc":"2.0","id":4,"result":{},"error":{"code":1,"message":"x"}}`, jsonrpc.CodeInvalidRequest, "4", NoMethod},
		{`{"jsonrpc":"2.0","id":1,"method":"m"} x`, jsonrpc.CodeParseError, "", "trailing data"},
	}
	for _, c := range cases {
		m, err := Decode([]byte(c.in))
		if err == nil {
			t.Errorf("%s: decoded as %#v, want a refusal", c.in, m)
			continue
		}
		if err.Code != c.code || string(err.ID) != c.echo || !strings.Contains(err.Message, c.contains) {
			t.Errorf("%s: refused with %d %q id %q, want %d containing %q id %q", c.in, err.Code, err.Message, err.ID, c.code, c.contains, c.echo)
		}
		if enc := string(err.Encode()); !strings.HasPrefix(enc, `{"jsonrpc":"2.0","id":`) {
			t.Errorf("%s: encoded as %s", c.in, enc)
		}
	}

	m, err := Decode([]byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"a":1}}`))
	if req, ok := m.(*jsonrpc.Request); err != nil || !ok || req.Method != "tools/call" || req.ID.Raw() != "x" || string(req.Params) != `{"a":1}` {
		t.Errorf("request: %#v, %v", m, err)
	}
	m, err = Decode([]byte(`{"jsonrpc":"2.0","id":3,"result":{"ok":true}}`))
	if resp, ok := m.(*jsonrpc.Response); err != nil || !ok || resp.ID.Raw() != int64(3) || string(resp.Result) != `{"ok":true}` {
		t.Errorf("response: %#v, %v", m, err)
	}
}

// TestSplitBatchAndDepth: an empty batch and one that is not JSON are
// refused; nesting past MaxDepth is caught before any decoding.
func TestSplitBatchAndDepth(t *testing.T) {
	if _, err := SplitBatch([]byte(`[]`)); err == nil || err.Code != jsonrpc.CodeInvalidRequest {
		t.Errorf("empty batch: %v", err)
	}
	if _, err := SplitBatch([]byte(`[{"a":`)); err == nil || err.Code != jsonrpc.CodeParseError {
		t.Errorf("broken batch: %v", err)
	}
	raws, err := SplitBatch([]byte(`[{"jsonrpc":"2.0","method":"a"}, {"b":1}]`))
	if err != nil || len(raws) != 2 {
		t.Fatalf("batch: %v %v", raws, err)
	}
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	if !TooDeep([]byte(deep)) || TooDeep([]byte(deep[1:len(deep)-1])) {
		t.Error("TooDeep does not stop at MaxDepth")
	}
	if TooDeep([]byte(`"` + strings.Repeat("[", MaxDepth+5) + `"`)) {
		t.Error("brackets inside a string counted")
	}
	if !IsBatch([]byte(" \t[1]")) || IsBatch([]byte("{}")) {
		t.Error("IsBatch")
	}
}
