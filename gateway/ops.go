package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// Stage is how far a connection has come in the progressive disclosure of
// seed 000: each stage unlocks more operations.
type Stage int

// The stages.
const (
	StageEntry        Stage = 0 // connected
	StageInitComplete Stage = 1 // start_new or load_context done
	StageCipherLoaded Stage = 2 // cipher done
	StageDomainActive Stage = 3 // cipher done and a domain chosen
	// stageNone marks an operation that does not advance the stage.
	stageNone Stage = -1
)

const gatewayToolName = "thoughtbox_gateway"

// The gateway's own events (seed 002, ThoughtboxEvent).
const (
	stageChangedEvent ledger.EventType = "stage_changed"
	cipherLoadedEvent ledger.EventType = "cipher_loaded"
)

var stageNames = [...]string{"entry", "init_complete", "cipher_loaded", "domain_active"}

func (s Stage) String() string {
	if s < 0 || int(s) >= len(stageNames) {
		return fmt.Sprintf("stage(%d)", int(s))
	}
	return stageNames[s]
}

// unlock names the call that takes a connection from stage s-1 to s.
func (s Stage) unlock() string {
	switch s {
	case StageInitComplete:
		return "start_new (or load_context)"
	case StageCipherLoaded:
		return "cipher"
	case StageDomainActive:
		return "navigate with a domain"
	}
	return ""
}

// handlerFunc runs one operation. It returns a reply (marshalled as JSON,
// unless it is a reply with its own contents) or an error (reported as an
// isError result through ledger.AsError).
type handlerFunc func(ctx context.Context, c *call) (any, error)

// operation is one row of the operation table.
type operation struct {
	name string
	// minStage is the stage the connection must have reached.
	minStage Stage
	// advancesTo is the stage a successful call brings the connection to
	// at least (stageNone: no change). Independently, a connection that has
	// loaded the cipher and has a domain is at stage 3 (see conn.advance).
	advancesTo Stage
	handler    handlerFunc
	// args and summary describe the operation in the gateway tool's
	// description.
	args, summary string
	// tool, if set, is a tool of its own that progressive disclosure adds
	// once the connection reaches minStage; it takes the operation's
	// arguments directly, with schema as its input schema.
	tool   string
	schema string
	// describeTool, if set, gives the tool's description for the
	// connection's current state; the tool is announced again when it
	// changes.
	describeTool func(c *conn) string
}

// operationTable is the one table of operations, in the order the gateway
// description lists them.
type operationTable struct {
	list   []*operation
	byName map[string]*operation
}

// newOperations builds the table. Every operation of the gateway is here,
// with the stage it needs and the stage it advances to; dispatch is the one
// place that reads them.
func newOperations() *operationTable {
	list := []*operation{
		{name: "get_state", minStage: StageEntry, advancesTo: stageNone, handler: typed(getState),
			summary: "where this connection stands: stage, active session, domain, bound root, what to call next"},
		{name: "start_new", minStage: StageEntry, advancesTo: StageInitComplete, handler: typed(startNew),
			args:    "sessionTitle?, tags?, domain?, description?",
			summary: "begin new work; with sessionTitle the session is created now, otherwise by your first thought"},
		{name: "load_context", minStage: StageEntry, advancesTo: StageInitComplete, handler: typed(loadContext),
			args:    "sessionId (a unique prefix will do)",
			summary: "resume a session; replies with restorationInfo (\"Next thought will be #N\")"},
		{name: "list_sessions", minStage: StageEntry, advancesTo: stageNone, handler: typed(listSessions),
			args:    "limit? (20), tag?",
			summary: "recent sessions, most recently updated first"},
		{name: "navigate", minStage: StageEntry, advancesTo: stageNone, handler: typed(navigate),
			args:    "project?, task?, aspect?, domain?",
			summary: "set the working context; a domain (e.g. debugging, planning) narrows mental models and, once the cipher is loaded, enters stage 3"},
		{name: "list_roots", minStage: StageEntry, advancesTo: stageNone, handler: typed(listRoots),
			summary: "ask your client for its workspace roots"},
		{name: "bind_root", minStage: StageEntry, advancesTo: stageNone, handler: typed(bindRoot),
			args:    "rootUri, project?",
			summary: "bind one of the roots as this connection's project scope"},
		{name: "cipher", minStage: StageInitComplete, advancesTo: StageCipherLoaded, handler: typed(loadCipher),
			summary: "the cipher notation guide (S{n}|{type}|{refs}|{content}); unlocks stage 2",
			tool:    "thoughtbox_cipher", schema: `{"type":"object","properties":{},"additionalProperties":false}`,
			describeTool: func(*conn) string {
				return "Load the Thoughtbox cipher notation guide and unlock thought recording (stage 2)."
			}},
		{name: "session", minStage: StageInitComplete, advancesTo: stageNone, handler: sessionOp,
			args:    sessionArgs,
			summary: "find, read, resume, export and analyse sessions; discovery hides or shows tools"},
		{name: "thought", minStage: StageCipherLoaded, advancesTo: stageNone, handler: typed(recordThought),
			args:    "thought, nextThoughtNeeded, thoughtNumber?, totalThoughts?, isRevision?, revisesThought?, branchFromThought?, branchId?, needsMoreThoughts?, includeGuide?, sessionTitle?, sessionTags?, verbose?, critique?, rlm? + rlmQuery?",
			summary: "record one reasoning step (numbered for you if you omit thoughtNumber); creates a session if none is active",
			tool:    "thoughtbox_thought", schema: thoughtSchema,
			describeTool: func(*conn) string { return thoughtToolDescription }},
		{name: "read_thoughts", minStage: StageCipherLoaded, advancesTo: stageNone, handler: typed(readThoughts),
			args:    "one of thoughtNumber | last | range {start, end} | branchId; sessionId? (default: the active session)",
			summary: "read recorded thoughts back; with no query, the main chain"},
		{name: "get_structure", minStage: StageCipherLoaded, advancesTo: stageNone, handler: typed(getStructure),
			args:    "sessionId?",
			summary: "the shape of a session: main chain, branches, revisions"},
		{name: "deep_analysis", minStage: StageCipherLoaded, advancesTo: stageNone, handler: typed(deepAnalysis),
			args:    "sessionId?, analysisType? patterns|cognitive_load|decision_points|full (default)",
			summary: "reasoning patterns, cognitive load and decision points of a session, with insights and their confidence"},
		{name: "mental_models", minStage: StageCipherLoaded, advancesTo: stageNone, handler: typed(mentalModels),
			args:    "operation: get_model {modelId} | list_models {tag?} | list_tags",
			summary: "structured reasoning frameworks; at stage 3 list_models is narrowed to your domain",
			tool:    "thoughtbox_mental_models", schema: mentalModelsSchema,
			describeTool: describeMentalModelsTool},
		{name: "knowledge", minStage: StageInitComplete, advancesTo: stageNone, handler: knowledge, args: knowledgeArgs, summary: knowledgeSummary},
	}
	t := &operationTable{list: list, byName: map[string]*operation{}}
	for _, op := range list {
		t.byName[op.name] = op
	}
	return t
}

func (t *operationTable) names() []string {
	out := make([]string, len(t.list))
	for i, op := range t.list {
		out[i] = op.name
	}
	return out
}

// gatewayTool is the always-on router tool.
func (t *operationTable) gatewayTool() *mcp.Tool {
	names, _ := json.Marshal(t.names())
	schema := `{"type":"object","required":["operation"],"additionalProperties":false,"properties":{` +
		`"operation":{"type":"string","enum":` + string(names) + `,"description":"The operation to run."},` +
		`"args":{"type":"object","description":"The operation's arguments (see the tool description)."}}}`
	return &mcp.Tool{
		Name:        gatewayToolName,
		Title:       "Thoughtbox gateway",
		Description: t.description(),
		InputSchema: json.RawMessage(schema),
	}
}

func (t *operationTable) description() string {
	var b strings.Builder
	b.WriteString(`Thoughtbox reasoning ledger: record, branch, revise and read back your reasoning; every thought is a Git commit.
Call as {"operation": "<name>", "args": {...}}. Operations unlock in stages; go in this order:
  1. start_new (new work) or load_context (resume a session)  -> stage 1
  2. cipher (read the notation guide once)                      -> stage 2
  3. thought, again and again; read_thoughts / get_structure to look back; mental_models for a framework
  navigate with a domain at stage 2 -> stage 3 (mental models narrowed to it). get_state always tells you the stage.
Example: {"operation": "thought", "args": {"thought": "S1|H|The cache is stale", "nextThoughtNeeded": true}}
Operations (minimum stage):
`)
	for _, op := range t.list {
		fmt.Fprintf(&b, "- %s (%d): %s", op.name, op.minStage, op.summary)
		if op.args != "" {
			fmt.Fprintf(&b, ". args: %s", op.args)
		}
		b.WriteString("\n")
	}
	b.WriteString(`Failures come back as isError results with {"code", "message", "details"}; the message says what to fix.`)
	return b.String()
}

// call is one invocation of an operation on a connection.
type call struct {
	*conn
	session *mcp.ServerSession
	args    json.RawMessage
	// holds release the projects this call opened (see Gateway.project).
	holds []func()
}

// typed adapts a handler with typed parameters: the arguments are decoded
// strictly (see decodeArgs) before it runs.
func typed[P any](fn func(ctx context.Context, c *call, p *P) (any, error)) handlerFunc {
	return func(ctx context.Context, c *call) (any, error) {
		p := new(P)
		if err := decodeArgs(c.args, p); err != nil {
			return nil, err
		}
		return fn(ctx, c, p)
	}
}

// handleGateway is the thoughtbox_gateway tool.
func (c *conn) handleGateway(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Operation *string         `json:"operation"`
		Args      json.RawMessage `json:"args"`
	}
	if err := decodeArgs(req.Params.Arguments, &in); err != nil {
		if e := ledger.AsError(err); e.Details["field"] != "operation" && e.Details["field"] != "args" && e.Details["problem"] == "unknown" {
			e.Message += `; the gateway takes {"operation": "...", "args": {...}}: put the operation's arguments inside args`
		}
		return errorResult(err), nil
	}
	if in.Operation == nil {
		return errorResult(ledger.InvalidField("operation", "is required; one of %s", strings.Join(c.g.ops.names(), ", "))), nil
	}
	op := c.g.ops.byName[*in.Operation]
	if op == nil {
		e := ledger.Errorf(ledger.CodeInvalidOperation, "unknown operation %q; expected one of %s", *in.Operation, strings.Join(c.g.ops.names(), ", "))
		e.Details = map[string]any{"operation": *in.Operation, "operations": c.g.ops.names()}
		return errorResult(e), nil
	}
	return c.dispatch(ctx, req.Session, op, in.Args), nil
}

// toolHandler is the handler of an operation's own tool.
func (c *conn) toolHandler(op *operation) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return c.dispatch(ctx, req.Session, op, req.Params.Arguments), nil
	}
}

// dispatch checks the stage, runs the operation and, if it succeeded,
// advances the stage. Calls on one connection run one at a time.
func (c *conn) dispatch(ctx context.Context, ss *mcp.ServerSession, op *operation, args json.RawMessage) *mcp.CallToolResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stage < op.minStage {
		return errorResult(stageError(op, c.stage))
	}
	cl := &call{conn: c, session: ss, args: args}
	defer cl.releaseAll()
	if err := cl.checkScope(op.name); err != nil {
		return errorResult(err)
	}
	if err := cl.holdCurrent(ctx); err != nil {
		return errorResult(err)
	}
	reply, err := op.handler(ctx, cl)
	if err != nil {
		return errorResult(err)
	}
	c.advance(op)
	if r, ok := reply.(stageReporter); ok {
		r.reportStage(c.stage)
	}
	return replyResult(reply)
}

func stageError(op *operation, current Stage) *ledger.Error {
	var steps []string
	for s := current + 1; s <= op.minStage; s++ {
		steps = append(steps, s.unlock())
	}
	e := ledger.Errorf(ledger.CodeStageRequirementNotMet,
		"operation %s needs stage %d (%s); this connection is at stage %d (%s). Call %s first",
		op.name, op.minStage, op.minStage, current, current, strings.Join(steps, ", then "))
	e.Details = map[string]any{
		"operation":     op.name,
		"currentStage":  int(current),
		"requiredStage": int(op.minStage),
		"unlockWith":    steps,
	}
	return e
}

// advance moves the connection on after a successful op: to op.advancesTo
// at least, and to stage 3 whenever the cipher is loaded and a domain is
// active. Stages never go back. New tools are announced by the SDK with
// tools/list_changed.
func (c *conn) advance(op *operation) {
	prev := c.stage
	next := max(c.stage, op.advancesTo)
	if next >= StageCipherLoaded && c.domain != "" {
		next = StageDomainActive
	}
	c.stage = next
	if op.name == "cipher" {
		c.publish(cipherLoadedEvent, map[string]any{"stage": int(next)})
	}
	if next != prev {
		c.publish(stageChangedEvent, map[string]any{
			"previousStage": int(prev), "newStage": int(next), "trigger": op.name,
		})
	}
	c.syncTools()
}

// syncTools adds the per-stage tools the connection has reached, and
// re-adds those whose description changed (the domain narrows mental
// models).
func (c *conn) syncTools() {
	for _, op := range c.g.ops.list {
		if op.tool == "" || c.stage < op.minStage || c.hidden[op.tool] {
			continue
		}
		desc := op.describeTool(c)
		if have, ok := c.toolDesc[op.tool]; ok && have == desc {
			continue
		}
		c.toolDesc[op.tool] = desc
		c.server.AddTool(&mcp.Tool{
			Name:        op.tool,
			Description: desc,
			InputSchema: json.RawMessage(op.schema),
		}, c.toolHandler(op))
	}
}

// availableOps lists the operations callable at the connection's stage.
func (c *conn) availableOps() []string {
	var out []string
	for _, op := range c.g.ops.list {
		if op.minStage <= c.stage {
			out = append(out, op.name)
		}
	}
	return out
}

// tools lists the connection's tools, the gateway first.
func (c *conn) tools() []string {
	out := []string{gatewayToolName}
	for name := range c.toolDesc {
		out = append(out, name)
	}
	slices.Sort(out[1:])
	return out
}

// stageReporter is a reply that carries the connection's stage after the
// call.
type stageReporter interface{ reportStage(Stage) }

// stageInfo is embedded in replies of operations that may change the stage.
type stageInfo struct {
	Stage     int    `json:"stage"`
	StageName string `json:"stageName"`
}

func (s *stageInfo) reportStage(st Stage) { s.Stage, s.StageName = int(st), st.String() }
