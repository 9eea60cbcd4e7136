// Package mcpcall is the benchmarks' and system tests' one way to call thoughtbox_gateway
// and read its JSON reply.
package mcpcall

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolError is a reply the server marked as an error (a domain refusal,
// such as SESSION_NOT_FOUND), as opposed to a failure of the call itself.
type ToolError struct {
	Op   string
	Text string // the reply's JSON body: {code, message, details}
}

func (e *ToolError) Error() string { return e.Op + ": " + e.Text }

// Call runs one gateway operation, with args under "args", and decodes
// the reply's JSON object.
func Call(ctx context.Context, s *mcp.ClientSession, op string, args map[string]any) (map[string]any, error) {
	in := map[string]any{"operation": op}
	if args != nil {
		in["args"] = args
	}
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "thoughtbox_gateway", Arguments: in})
	if err != nil {
		return nil, err
	}
	text := ""
	if len(res.Content) > 0 {
		if t, ok := res.Content[0].(*mcp.TextContent); ok {
			text = t.Text
		}
	}
	if res.IsError {
		return nil, &ToolError{Op: op, Text: text}
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return nil, fmt.Errorf("%s: reply %q: %v", op, text, err)
	}
	return out, nil
}
