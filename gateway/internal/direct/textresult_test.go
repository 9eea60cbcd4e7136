package direct

import (
	"strings"
	"testing"

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
