package gateway_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/notebook"
)

// promise is an operation or sub-operation a text of the server names,
// with the stage the text says it opens at.
type promise struct {
	op, sub string
	stage   int
	source  string
}

func (p promise) String() string {
	return strings.TrimSpace(p.op+" "+p.sub) + fmt.Sprintf(" at stage %d (%s)", p.stage, p.source)
}

// descriptionPromises reads the gateway tool's description: "- name (N):
// summary. args: operation: a {…} | b {…}".
func descriptionPromises(desc string) []promise {
	var out []promise
	opLine := regexp.MustCompile(`(?m)^- ([a-z_]+) \((\d)\): (.*)$`)
	subName := regexp.MustCompile(`(?:operation: | \| )([a-z_]+)`)
	for _, m := range opLine.FindAllStringSubmatch(desc, -1) {
		st, _ := strconv.Atoi(m[2])
		out = append(out, promise{op: m[1], stage: st, source: "the gateway description"})
		for _, s := range subName.FindAllStringSubmatch(m[3], -1) {
			out = append(out, promise{op: m[1], sub: s[1], stage: st, source: "the gateway description"})
		}
	}
	return out
}

// initPromises reads thoughtbox://init's stage table: "| N | name |
// reached by | opens up |", each operation in backquotes, sub-operations
// in parentheses after theirs.
func initPromises(text string) []promise {
	var out []promise
	row := regexp.MustCompile("(?m)^\\| (\\d) \\| [^|]+\\|[^|]+\\| (.*) \\|$")
	item := regexp.MustCompile("`([a-z_]+)`(?: \\(([a-z_, ]+)\\))?")
	for _, m := range row.FindAllStringSubmatch(text, -1) {
		st, _ := strconv.Atoi(m[1])
		for _, it := range item.FindAllStringSubmatch(m[2], -1) {
			out = append(out, promise{op: it[1], stage: st, source: "thoughtbox://init"})
			for _, s := range strings.Split(it[2], ",") {
				if s = strings.TrimSpace(s); s != "" {
					out = append(out, promise{op: it[1], sub: s, stage: st, source: "thoughtbox://init"})
				}
			}
		}
	}
	return out
}

// promptPromises reads the list_mcp_assets prompt (see promptStages).
func promptPromises(text string) []promise {
	var out []promise
	for name, st := range promptStages(text) {
		op, sub, _ := strings.Cut(name, " ")
		out = append(out, promise{op: op, sub: sub, stage: st, source: "the list_mcp_assets prompt"})
	}
	return out
}

// TestEveryPromiseKept walks every operation and sub-operation that the
// gateway's description, thoughtbox://init and the list_mcp_assets prompt
// name, each at the stage the text gives it, on a fresh connection brought
// to exactly that stage: the server must know the name and must not refuse
// it for its stage. One stage lower, an operation that names no session
// must be refused for its stage (the texts promise the stage is needed).
// Arguments are left out: a refusal for a missing argument is a kept
// promise, the operation exists and is open.
func TestEveryPromiseKept(t *testing.T) {
	e := &env{store: newStore(t), log: &syncBuffer{}, events: &eventSink{}}
	e.l = ledger.New(e.store, ledger.Options{})
	work := t.TempDir()
	e.g = gateway.New(e.l, gateway.Options{
		Knowledge: ledger.NewKnowledge(e.store.Store, ledger.KnowledgeOptions{}),
		Notebooks: func(project string, store ledger.NotebookStore) *notebook.Service {
			return notebook.NewService(store, notebook.Options{WorkDir: filepath.Join(work, project)})
		}})
	t.Cleanup(func() { e.g.Close() })
	probe := e.connect(t, clientOpts{})
	initText, err := probe.read("thoughtbox://init")
	if err != nil {
		t.Fatal(err)
	}
	res, err := probe.cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "list_mcp_assets"})
	if err != nil {
		t.Fatal(err)
	}
	var all []promise
	all = append(all, descriptionPromises(probe.tools()["thoughtbox_gateway"].Description)...)
	all = append(all, initPromises(initText)...)
	all = append(all, promptPromises(res.Messages[0].Content.(*mcp.TextContent).Text)...)
	count := map[string]int{}
	for _, p := range all {
		count[p.source]++
	}
	for _, src := range []string{"the gateway description", "thoughtbox://init", "the list_mcp_assets prompt"} {
		if count[src] < 10 {
			t.Fatalf("read only %d promises from %s; the test reads it wrongly", count[src], src)
		}
	}
	// The fresh connection at each stage: 0 as connected, 1 after
	// start_new, 2 after cipher too. Each promise gets its own, so that
	// one call cannot move the next.
	at := func(stage int) *client {
		c := e.connect(t, clientOpts{})
		if stage >= 1 {
			c.ok("start_new", map[string]any{"sessionTitle": "walk"})
		}
		if stage >= 2 {
			c.ok("cipher", nil)
		}
		return c
	}
	for _, p := range all {
		args := map[string]any{}
		if p.sub != "" {
			args["operation"] = p.sub
		}
		r := at(p.stage).gw(p.op, args)
		needsSub := false
		if r.isError {
			body := r.json(t)
			details, _ := body["details"].(map[string]any)
			needsSub = p.sub == "" && details["field"] == "operation" && details["problem"] == "missing"
			msg, _ := body["message"].(string)
			if code := body["code"]; code == string(ledger.CodeStageRequirementNotMet) || code == string(ledger.CodeInvalidOperation) ||
				strings.Contains(msg, "unknown") && strings.Contains(msg, "operation") {
				t.Errorf("%v: refused: %s", p, r.texts[0])
				continue
			}
		}
		// Stage 3 opens nothing new (the texts say it narrows mental
		// models), so only stages 1 and 2 are checked from below.
		// An operation named without its sub-operation is refused as a
		// malformed call before its stage is looked at (one resolver
		// decides the route first); its sub-operations are promises of
		// their own and are checked from below.
		if needsSub {
			continue
		}
		if p.stage == 0 || p.stage == 3 || p.sub == "list" || p.sub == "search" || p.sub == "list_deleted" || p.sub == "restore" {
			continue // nothing below stage 0; listings and restore go ahead below their stage by design
		}
		if r := at(p.stage-1).gw(p.op, args); !r.isError || r.json(t)["code"] != string(ledger.CodeStageRequirementNotMet) {
			t.Errorf("%v: one stage lower it is not refused for its stage: %s", p, r.texts[0])
		}
	}
}
