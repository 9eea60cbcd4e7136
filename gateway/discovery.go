package gateway

// session discovery: list the tools a connection can have, and hide or
// show the per-stage ones. A hidden tool leaves that connection's
// tools/list (the client is told with tools/list_changed) and stays hidden
// when the stage machine would disclose it; its operation is still
// callable through thoughtbox_gateway.

import (
	"context"
	"slices"
	"strings"

	"github.com/thoughtbox/thoughtbox/ledger"
)

type discoveryParams struct {
	// Action is list (the default), hide or show.
	Action string   `json:"action,omitempty" schema:"enum=list|hide|show"`
	Tools  []string `json:"tools,omitempty"`
	Tool   string   `json:"tool,omitempty" schema:"alias"` // one of tools
}

func (p *discoveryParams) check() error {
	if p.Tool != "" {
		p.Tools = append(p.Tools, p.Tool)
	}
	switch p.Action {
	case "", "list":
		p.Action = "list"
	case "hide", "show":
		if len(p.Tools) == 0 {
			return ledger.InvalidField("tools", "is required for %s: the names of the tools (discovery list shows them)", p.Action)
		}
	default:
		return ledger.InvalidField("action", "must be list, hide or show, got %q", p.Action)
	}
	return nil
}

// toolInfo describes one tool of the connection.
type toolInfo struct {
	Name        string `json:"name"`
	Operation   string `json:"operation,omitempty"`
	Description string `json:"description"`
	// Stage is the stage that discloses the tool.
	Stage int `json:"stage"`
	// Listed is whether the tool is in the connection's tools/list now.
	Listed   bool `json:"listed"`
	Hidden   bool `json:"hidden"`
	Hideable bool `json:"hideable"`
}

type discoveryReply struct {
	Action  string     `json:"action"`
	Tools   []toolInfo `json:"tools"`
	Changed []string   `json:"changed"`
	Note    string     `json:"note,omitempty"`
}

func sessionDiscovery(_ context.Context, c *call, p *discoveryParams) (any, error) {
	known := c.toolOps()
	for _, name := range p.Tools {
		if name == gatewayToolName {
			return nil, ledger.InvalidField("tools", "%s cannot be hidden or shown: it is how every operation, discovery included, is called", gatewayToolName)
		}
		if known[name] == nil {
			names := make([]string, 0, len(known))
			for n := range known {
				names = append(names, n)
			}
			slices.Sort(names)
			e := ledger.InvalidField("tools", "unknown tool %q; one of %s", name, strings.Join(names, ", "))
			e.Details["tools"] = names
			return nil, e
		}
	}
	r := &discoveryReply{Action: p.Action, Changed: []string{}}
	switch p.Action {
	case "hide":
		var remove []string
		for _, name := range p.Tools {
			if !c.hidden[name] {
				c.hidden[name] = true
				r.Changed = append(r.Changed, name)
			}
			if _, listed := c.toolDesc[name]; listed {
				delete(c.toolDesc, name)
				remove = append(remove, name)
			}
		}
		if len(remove) > 0 {
			c.server.RemoveTools(remove...)
		}
		r.Note = "Hidden tools leave this connection's tools/list; their operations still work through thoughtbox_gateway."
	case "show":
		for _, name := range p.Tools {
			if c.hidden[name] {
				delete(c.hidden, name)
				r.Changed = append(r.Changed, name)
			}
		}
		c.syncTools()
		r.Note = "Shown tools are listed once this connection reaches their stage."
	}
	r.Tools = c.toolInfos()
	return r, nil
}

// toolOps maps each per-stage tool to its operation.
func (c *conn) toolOps() map[string]*operation {
	out := map[string]*operation{}
	for _, op := range c.g.ops.list {
		if op.tool != "" && op.servable(c.g) {
			out[op.tool] = op
		}
	}
	return out
}

// toolInfos describes the gateway tool and every per-stage tool.
func (c *conn) toolInfos() []toolInfo {
	out := []toolInfo{{Name: gatewayToolName, Description: "The router for every operation.", Listed: true}}
	for _, op := range c.g.ops.list {
		if op.tool == "" || !op.servable(c.g) {
			continue
		}
		_, listed := c.toolDesc[op.tool]
		out = append(out, toolInfo{
			Name: op.tool, Operation: op.name, Description: op.describeTool(c), Stage: int(op.minStage),
			Listed: listed, Hidden: c.hidden[op.tool], Hideable: true,
		})
	}
	return out
}
