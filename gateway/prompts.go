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
		c.server.AddPrompt(&mcp.Prompt{Name: p.Name, Description: p.Description, Arguments: args}, promptHandler(p, c.g.ops.inventory))
	}
}

func promptHandler(p content.Prompt, operations func() string) mcp.PromptHandler {
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
		text = strings.ReplaceAll(text, content.OperationsMarker, operations())
		return &mcp.GetPromptResult{
			Description: p.Description,
			Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
		}, nil
	}
}

// inventory lists every operation and sub-operation under the stage that
// opens it, read from the operation table, so that list_mcp_assets cannot
// name an operation at a stage where the server refuses it.
func (t *operationTable) inventory() string {
	var b strings.Builder
	for st := StageEntry; st <= StageDomainActive; st++ {
		first := true
		for _, op := range t.list {
			if op.minStage != st {
				continue
			}
			if first {
				if b.Len() > 0 {
					b.WriteString("\n")
				}
				fmt.Fprintf(&b, "**From stage %d (%s)**\n", int(st), st)
				first = false
			}
			fmt.Fprintf(&b, "- `%s`: %s", op.name, op.summary)
			if op.advancesTo != stageNone && !strings.Contains(op.summary, fmt.Sprintf("stage %d", int(op.advancesTo))) {
				fmt.Fprintf(&b, "; moves to stage %d", int(op.advancesTo))
			}
			if op.subOps != nil {
				names := subOpNames(op.subOps)
				for i, n := range names {
					names[i] = "`" + n + "`"
				}
				fmt.Fprintf(&b, ". Sub-operations (in `args.operation`): %s", strings.Join(names, ", "))
			}
			if op.tool != "" {
				fmt.Fprintf(&b, ". Also its own tool, `%s`", op.tool)
			}
			b.WriteString(".\n")
		}
	}
	return b.String()
}
