package content

import (
	"fmt"
	"strings"
	"sync"
	"text/template"
)

// Prompt is an MCP prompt. Render checks the required arguments (an empty or
// blank value counts as missing) and returns the instruction text; arguments
// it does not declare are ignored.
type Prompt struct {
	Name, Description string
	Args              []PromptArg
	Render            func(args map[string]string) (string, error)
}

// PromptArg is one argument of a Prompt.
type PromptArg struct {
	Name, Description string
	Required          bool
}

// promptSpec is a prompt without its renderer; its text is the template
// prompts/<name>.md. Kept as plain data so that templates can list it.
type promptSpec struct {
	name, description string
	args              []PromptArg
}

var promptSpecs = []promptSpec{
	{
		name:        "list_mcp_assets",
		description: "An overview of everything this server offers: every gateway operation and sub-operation, the stages that unlock them, the resources, resource templates and prompts.",
	},
	{
		name:        "interleaved-thinking",
		description: "Work on a task by alternating recorded reasoning steps with tool calls, so that every action is planned before and interpreted after in the ledger.",
		args: []PromptArg{
			{Name: "task", Description: "What to accomplish.", Required: true},
			{Name: "tools", Description: "The tools you expect to use, if you want to name them (comma-separated)."},
		},
	},
	{
		name:        "subagent-summarize",
		description: "Read a whole session in an isolated context and hand back a compact summary, so the caller never has to load the full chain.",
		args: []PromptArg{
			{Name: "sessionId", Description: "The session to summarise.", Required: true},
			{Name: "focus", Description: "What the summary should concentrate on, e.g. \"open questions\" or \"the final decision\"."},
		},
	},
	{
		name:        "evolution-check",
		description: "Given a new insight, find the earlier thoughts it should revise, extend or contradict, and record those links.",
		args: []PromptArg{
			{Name: "newInsight", Description: "The insight to check against earlier reasoning.", Required: true},
			{Name: "sessionId", Description: "The session to check; the active session when omitted."},
		},
	},
	{
		name:        "test-thoughtbox",
		description: "A step-by-step self-test of the thought tools: numbering, branches, revisions, reading back and completion.",
	},
	{
		name:        "test-memory",
		description: "A step-by-step self-test of the knowledge zone: patterns and scratchpad notes.",
	},
}

// OperationsMarker stands, in a rendered prompt, where the server's list
// of operations by stage goes (list_mcp_assets); the gateway replaces it.
const OperationsMarker = "<!-- thoughtbox: operations by stage -->"

// promptTemplates parses prompts/*.md once. Template names are file names.
var promptTemplates = sync.OnceValue(func() *template.Template {
	funcs := template.FuncMap{
		"resource": mustResource,
		"prompts":  promptInventory,
		"models":   Models,
		// The operations come from the gateway's operation table, which
		// this package cannot see: the template writes OperationsMarker
		// and the gateway puts the list in its place.
		"operations": func() string { return OperationsMarker },
	}
	return template.Must(template.New("prompts").Funcs(funcs).ParseFS(files, "prompts/*.md"))
})

// promptInventory lists the prompts without renderers, for list_mcp_assets.
// (Prompts itself cannot be called from a template: its renderers refer back
// to the templates.)
func promptInventory() []Prompt {
	out := make([]Prompt, len(promptSpecs))
	for i, s := range promptSpecs {
		out[i] = Prompt{Name: s.name, Description: s.description, Args: s.args}
	}
	return out
}

// Prompts returns the six prompts in a fixed order, each with its renderer.
func Prompts() []Prompt {
	out := make([]Prompt, len(promptSpecs))
	for i, s := range promptSpecs {
		out[i] = Prompt{
			Name:        s.name,
			Description: s.description,
			Args:        append([]PromptArg(nil), s.args...),
			Render:      s.render,
		}
	}
	return out
}

func (s promptSpec) render(args map[string]string) (string, error) {
	data := make(map[string]string, len(s.args))
	for _, a := range s.args {
		v := strings.TrimSpace(args[a.Name])
		if a.Required && v == "" {
			return "", fmt.Errorf("prompt %s: missing required argument %q", s.name, a.Name)
		}
		data[a.Name] = v
	}
	var b strings.Builder
	if err := promptTemplates().ExecuteTemplate(&b, s.name+".md", data); err != nil {
		return "", fmt.Errorf("prompt %s: %w", s.name, err)
	}
	return strings.TrimSpace(b.String()) + "\n", nil
}
