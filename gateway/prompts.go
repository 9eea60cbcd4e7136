package gateway

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway/content"
)

// addPrompts registers the prompts of package content. A missing required
// argument is an invalid-params error naming it; undeclared ones are
// ignored.
func (c *conn) addPrompts() {
	for _, p := range content.Prompts() {
		args := make([]*mcp.PromptArgument, len(p.Args))
		for i, a := range p.Args {
			args[i] = &mcp.PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required}
		}
		c.server.AddPrompt(&mcp.Prompt{Name: p.Name, Description: p.Description, Arguments: args}, promptHandler(p))
	}
}

func promptHandler(p content.Prompt) mcp.PromptHandler {
	return func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		given := req.Params.Arguments
		var missing []string
		for _, a := range p.Args {
			if a.Required && strings.TrimSpace(given[a.Name]) == "" {
				missing = append(missing, a.Name)
			}
		}
		if len(missing) > 0 {
			return nil, &jsonrpc.Error{
				Code:    jsonrpc.CodeInvalidParams,
				Message: fmt.Sprintf("prompt %s: missing required argument %s", p.Name, strings.Join(missing, ", ")),
			}
		}
		text, err := p.Render(given)
		if err != nil {
			return nil, err
		}
		return &mcp.GetPromptResult{
			Description: p.Description,
			Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
		}, nil
	}
}
