package stdio

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTextResultAsTheSDK checks that a one-text result written directly
// comes out byte for byte as the SDK's encoding, and that any other result
// takes the SDK's way.
func TestTextResultAsTheSDK(t *testing.T) {
	texts := []string{
		"",
		`{"sessionId":"s-1","thoughtNumber":3,"nextThoughtNeeded":true}`,
		"<b>&amp;</b> \"quoted\" \\ back\tslash\nnew line \u2028 \u2029",
		"control \x00\x01\x1f and DEL \x7f",
		"not UTF-8: \xff\xfe and a cut rune \xe2\x82",
		"日本語 and 🙂 " + strings.Repeat("long text ", 500),
	}
	for _, text := range texts {
		r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
		got, ok := encodeTextResult(r)
		if !ok {
			t.Fatalf("%q: a one-text result was not written directly", text)
		}
		want, err := encodeAny(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("%q:\ngot  %s\nwant %s", text, got, want)
		}
		if viaResult, err := encodeResult(r); err != nil || string(viaResult) != string(want) {
			t.Fatalf("encodeResult(%q) = %s, %v", text, viaResult, err)
		}
	}
	others := []*mcp.CallToolResult{
		nil,
		{},
		{Content: []mcp.Content{&mcp.TextContent{Text: "a"}}, IsError: true},
		{Content: []mcp.Content{&mcp.TextContent{Text: "a"}}, StructuredContent: map[string]int{"n": 1}},
		{Content: []mcp.Content{&mcp.TextContent{Text: "a"}}, Meta: mcp.Meta{"k": "v"}},
		{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}},
		{Content: []mcp.Content{&mcp.TextContent{Text: "a", Meta: mcp.Meta{"k": "v"}}}},
		{Content: []mcp.Content{&mcp.TextContent{Text: "a", Annotations: &mcp.Annotations{Priority: 1}}}},
		{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}},
		{Content: []mcp.Content{&mcp.TextContent{Text: "a"}}, RequestState: "state"},
	}
	for i, r := range others {
		if b, ok := encodeTextResult(r); ok {
			t.Fatalf("result %d was written directly: %s", i, b)
		}
		got, err := encodeResult(r)
		if err != nil {
			t.Fatal(err)
		}
		want, err := encodeAny(r)
		if err != nil || string(got) != string(want) {
			t.Fatalf("result %d: %s, want %s (%v)", i, got, want, err)
		}
	}
}

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
	ids := []int64{0, 1, -1, 42, maxExactID, -maxExactID}
	for _, res := range results {
		for _, n := range ids {
			id, err := jsonrpc.MakeID(float64(n))
			if err != nil {
				t.Fatal(err)
			}
			resp := Respond(context.Background(), id, func(context.Context) (any, error) { return res, nil })
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
