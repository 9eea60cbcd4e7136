package stdio

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway/internal/direct"
)

// TestAnswerAsTheSDK: a direct call's answer written by encodeAnswer is
// byte for byte the SDK's encoding of it, for results as Respond makes
// them (the one-text result and others through encoding/json) and ids
// across the range taken; answers it does not write itself (errors,
// string ids) are left to the SDK.
func TestAnswerAsTheSDK(t *testing.T) {
	results := []any{
		&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a <b> & \"c\"\n\u2028 \xff\x01 é"}}},
		&mcp.CallToolResult{Content: []mcp.Content{}},
		&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}, IsError: true},
		map[string]any{"html": "<&>", "n": 1.5, "list": []any{nil, true, "\u2029"}},
		"plain",
		[]int{},
	}
	ids := []int64{0, 1, -1, 42, 1<<53 - 1, -(1<<53 - 1)}
	for _, res := range results {
		for _, n := range ids {
			id, err := jsonrpc.MakeID(float64(n))
			if err != nil {
				t.Fatal(err)
			}
			resp := direct.Respond(context.Background(), id, func(context.Context) (any, error) { return res, nil })
			got, ok := encodeAnswer(resp)
			if !ok {
				t.Fatalf("encodeAnswer left %v (id %d) to the SDK", res, n)
			}
			want, err := jsonrpc.EncodeMessage(resp)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("id %d:\n got %s\nwant %s", n, got, want)
			}
		}
	}
	sid, _ := jsonrpc.MakeID("s")
	nid, _ := jsonrpc.MakeID(float64(3))
	for _, resp := range []*jsonrpc.Response{
		{ID: sid, Result: []byte(`{}`)},
		{ID: nid, Error: &jsonrpc.Error{Code: 1, Message: "no"}},
	} {
		if _, ok := encodeAnswer(resp); ok {
			t.Errorf("encodeAnswer wrote %+v itself", resp)
		}
	}
}
