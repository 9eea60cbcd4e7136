package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

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
	// writes marks an operation that changes the ledger; one with
	// sub-operations says it per sub-operation (subOp.writes).
	writes bool
	// params is the type of the operation's arguments, or subOps its
	// sub-operations: its "args:" line and its tool's schema are made from
	// them (see schema.go). argsNote is said after the generated line.
	params   reflect.Type
	subOps   []subOp
	argsNote string
	// summary describes the operation in the gateway tool's description.
	summary string
	// tool, if set, is a tool of its own that progressive disclosure adds
	// once the connection reaches minStage; it takes the operation's
	// arguments directly, with schema (made by newOperations) as its input
	// schema. openSchema leaves other properties allowed in it.
	tool       string
	schema     string
	openSchema bool
	// describeTool, if set, gives the tool's description for the
	// connection's current state; the tool is announced again when it
	// changes.
	describeTool func(c *conn) string
	// configured, if set, says whether the server can serve the
	// operation; its tool is not offered when it cannot (the operation
	// itself then fails saying so).
	configured func(g *Gateway) bool
}

// servable says whether the server can serve op (see configured).
func (op *operation) servable(g *Gateway) bool { return op.configured == nil || op.configured(g) }

// operationTable is the one table of operations, in the order the gateway
// description lists them.
type operationTable struct {
	list   []*operation
	byName map[string]*operation

	// The gateway tool's description and input schema, made once: every
	// new connection (each HTTP session) announces the tool, and building
	// them from the operations' types took ~1 ms of processor time a
	// session.
	toolOnce           sync.Once
	toolDesc, toolSpec string
}

// newOperations builds the table. Every operation of the gateway is here,
// with the stage it needs and the stage it advances to; dispatch is the one
// place that reads them.
func newOperations() *operationTable {
	list := []*operation{
		{name: "get_state", minStage: StageEntry, advancesTo: stageNone, handler: typed(getState), params: paramsOf(getState),
			summary: "where this connection stands: stage, active session, domain, bound root, what to call next"},
		{name: "start_new", minStage: StageEntry, advancesTo: StageInitComplete, handler: typed(startNew), params: paramsOf(startNew), writes: true,
			summary: "begin new work; with sessionTitle the session is created now, otherwise by your first thought"},
		{name: "load_context", minStage: StageEntry, advancesTo: StageInitComplete, handler: typed(loadContext), params: paramsOf(loadContext),
			summary: "resume a session; replies with restorationInfo (\"Next thought will be #N\")"},
		{name: "list_sessions", minStage: StageEntry, advancesTo: stageNone, handler: typed(listSessions), params: paramsOf(listSessions),
			summary: "recent sessions, most recently updated first"},
		{name: "navigate", minStage: StageEntry, advancesTo: stageNone, handler: typed(navigate), params: paramsOf(navigate),
			summary: "set the working context; a domain (e.g. debugging, planning) narrows mental models and, once the cipher is loaded, enters stage 3"},
		{name: "list_roots", minStage: StageEntry, advancesTo: stageNone, handler: typed(listRoots), params: paramsOf(listRoots),
			summary: "ask your client for its workspace roots"},
		{name: "bind_root", minStage: StageEntry, advancesTo: stageNone, handler: typed(bindRoot), params: paramsOf(bindRoot),
			summary: "bind one of the roots as this connection's project scope; on a local server a root in an enabled Git worktree keeps the reasoning in that repository"},
		{name: "cipher", minStage: StageInitComplete, advancesTo: StageCipherLoaded, handler: typed(loadCipher), params: paramsOf(loadCipher),
			summary: "the cipher notation guide (S{n}|{type}|{refs}|{content}); unlocks stage 2",
			tool:    "thoughtbox_cipher",
			describeTool: func(*conn) string {
				return "Load the Thoughtbox cipher notation guide and unlock thought recording (stage 2)."
			}},
		{name: "session", minStage: StageInitComplete, advancesTo: stageNone, handler: sessionOp,
			subOps: sessionOps, argsNote: sessionArgsNote,
			summary: "find, read, resume, export and analyse sessions; discovery hides or shows tools; resume of a different session from stage 2 or 3 goes back to stage 1 (call cipher again)"},
		{name: "thought", minStage: StageCipherLoaded, advancesTo: stageNone, handler: typed(recordThought), params: paramsOf(recordThought), writes: true,
			summary:      "record one reasoning step (numbered for you if you omit thoughtNumber); creates a session if none is active",
			tool:         "thoughtbox_thought",
			describeTool: func(*conn) string { return thoughtToolDescription }},
		{name: "read_thoughts", minStage: StageCipherLoaded, advancesTo: stageNone, handler: typed(readThoughts), params: paramsOf(readThoughts),
			argsNote: "give at most one of thoughtNumber, last and range. thoughtNumber and range read the main chain, or the branch that branchId names; branchId alone reads that branch; last reads the most recent thoughts of every chain. total counts what the query selects; a long session reads in pages with limit and offset",
			summary:  "read recorded thoughts back; with no query, the main chain"},
		{name: "get_structure", minStage: StageCipherLoaded, advancesTo: stageNone, handler: typed(getStructure), params: paramsOf(getStructure),
			summary: "the shape of a session: main chain, branches, revisions"},
		{name: "deep_analysis", minStage: StageCipherLoaded, advancesTo: stageNone, handler: typed(deepAnalysis), params: paramsOf(deepAnalysis),
			summary: "reasoning patterns, cognitive load and decision points of a session, with insights and their confidence"},
		{name: "mental_models", minStage: StageCipherLoaded, advancesTo: stageNone, handler: mentalModelsOp,
			subOps:       mentalModelOps,
			summary:      "structured reasoning frameworks; at stage 3 list_models is narrowed to your domain",
			tool:         "thoughtbox_mental_models",
			describeTool: describeMentalModelsTool},
		{name: "notebook", minStage: StageCipherLoaded, advancesTo: stageNone, handler: notebookOp,
			subOps: notebookOps, argsNote: notebookArgsNote, summary: notebookSummary,
			tool: "thoughtbox_notebook", openSchema: true,
			describeTool: func(*conn) string { return notebookToolDescription },
			configured:   func(g *Gateway) bool { return g.opts.Notebooks != nil }},
		{name: "why", minStage: StageInitComplete, advancesTo: stageNone, handler: typed(whyOp), params: paramsOf(whyOp),
			argsNote: "give commit, or path (with from and to for some of its lines); only where the project's ledger is kept in the code's Git repository (thoughtbox enable)",
			summary:  "the reasoning behind code: for a commit or range A..B, the sessions linked to it (its Thoughtbox-Session trailers, and the links the commit hooks and relink record), their conclusion, the thoughts about its files, revisions and branches tried; for a path, the same per run of lines git blame gives. Ask before you change a file"},
		{name: "knowledge", minStage: StageInitComplete, advancesTo: stageNone, handler: knowledge, subOps: knowledgeOps, summary: knowledgeSummary},
	}
	t := &operationTable{list: list, byName: map[string]*operation{}}
	for _, op := range list {
		t.byName[op.name] = op
		switch {
		case op.tool == "":
		case op.subOps != nil:
			op.schema = schemaText(unionSchema(op.subOps, !op.openSchema))
		default:
			op.schema = schemaText(schemaOf(op.params))
		}
	}
	return t
}

// paramsOf is the type of the arguments fn takes.
func paramsOf[P any](func(context.Context, *call, *P) (any, error)) reflect.Type {
	return reflect.TypeFor[P]()
}

// args is the operation's "args:" line: made from its parameters or its
// sub-operations, then its note; empty for an operation without arguments.
func (op *operation) args() string {
	var line string
	switch {
	case op.subOps != nil:
		line = subOpsLine(op.subOps)
	case op.params != nil:
		line = argsLine(op.params)
	}
	if op.argsNote != "" {
		if line != "" {
			line += "; "
		}
		line += op.argsNote
	}
	return line
}

// gatewayArgs are the gateway tool's own arguments; the operation's may
// also come flat beside operation, so the schema allows other properties.
type gatewayArgs struct {
	Operation string         `json:"operation" jsonschema:"The operation to run."`
	Args      map[string]any `json:"args,omitempty" jsonschema:"The operation's arguments (see the tool description); they may also be given flat, beside operation."`
}

func (t *operationTable) names() []string {
	out := make([]string, len(t.list))
	for i, op := range t.list {
		out[i] = op.name
	}
	return out
}

// gatewayTool is the always-on router tool.
// Each call returns a Tool of its own (with its own schema bytes), for a
// server of its own.
func (t *operationTable) gatewayTool() *mcp.Tool {
	t.toolOnce.Do(func() {
		s := schemaOf(reflect.TypeFor[gatewayArgs]())
		s.AdditionalProperties = nil
		s.Properties["args"].AdditionalProperties = nil
		for _, name := range t.names() {
			s.Properties["operation"].Enum = append(s.Properties["operation"].Enum, name)
		}
		t.toolDesc, t.toolSpec = t.description(), schemaText(s)
	})
	return &mcp.Tool{
		Name:        gatewayToolName,
		Title:       "Thoughtbox gateway",
		Description: t.toolDesc,
		InputSchema: json.RawMessage(t.toolSpec),
	}
}

func (t *operationTable) description() string {
	var b strings.Builder
	b.WriteString(`Thoughtbox reasoning ledger: record, branch, revise and read back your reasoning; every thought is a Git commit.
Call as {"operation": "<name>", "args": {...}} (or with the arguments flat beside "operation"). Operations unlock in stages; go in this order:
  1. start_new (new work) or load_context (resume a session)  -> stage 1
  2. cipher (read the notation guide once)                      -> stage 2
  3. thought, again and again; read_thoughts / get_structure to look back; mental_models for a framework; notebook to check a claim with code that runs
  navigate with a domain at stage 2 -> stage 3 (mental models narrowed to it). get_state always tells you the stage.
  session resume of a different session at stage 2 or 3 -> back to stage 1: call cipher again before the next thought.
A call that names an existing session (sessionId, also taken by knowledge and mental_models) skips the stages it needs, and so do session list/search/list_deleted: clients that reconnect for every call pass sessionId each time.
Example: {"operation": "thought", "args": {"thought": "S1|H|The cache is stale", "nextThoughtNeeded": true}}
Operations (minimum stage):
`)
	for _, op := range t.list {
		fmt.Fprintf(&b, "- %s (%d): %s", op.name, op.minStage, op.summary)
		if args := op.args(); args != "" {
			fmt.Fprintf(&b, ". args: %s", args)
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
	// route is the operation and sub-operation the call runs.
	route route
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

// handleGateway is the thoughtbox_gateway tool. It takes an operation's
// arguments in both shapes the seeds show: under "args" (seeds 001, 004)
// or flat beside "operation" (seed 000).
func (c *conn) handleGateway(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	opName, args, err := splitGatewayArgs(req.Params.Arguments)
	if err != nil {
		return errorResult(err), nil
	}
	if opName == nil {
		e := ledger.InvalidField("operation", "is required; one of %s", strings.Join(c.g.ops.names(), ", "))
		e.Details["problem"] = "missing"
		e.Details["expected"] = c.g.ops.names()
		return errorResult(e), nil
	}
	op := c.g.ops.byName[*opName]
	if op == nil {
		e := ledger.Errorf(ledger.CodeInvalidOperation, "unknown operation %q; expected one of %s", *opName, strings.Join(c.g.ops.names(), ", "))
		e.Details = map[string]any{"operation": *opName, "operations": c.g.ops.names()}
		return errorResult(e), nil
	}
	return c.dispatch(ctx, req.Session, op, args), nil
}

// splitGatewayArgs reads the gateway tool's arguments: the operation's name,
// and its arguments, gathered from "args" and from the keys beside
// "operation". A key given both ways must have the same value in both.
func splitGatewayArgs(raw json.RawMessage) (op *string, args json.RawMessage, err error) {
	members, err := objectMembers(raw, "arguments")
	if err != nil {
		return nil, nil, err
	}
	var nested, flat []member
	for _, m := range members {
		switch m.key {
		case "operation":
			if name, ok := plainString(m.value); ok {
				op = &name
				continue
			}
			var name string
			if err := json.Unmarshal(m.value, &name); err != nil {
				e := ledger.InvalidField("operation", "expected string, got %s", jsonKind(m.value))
				e.Details["expected"] = "string"
				return nil, nil, e
			}
			op = &name
		case "args":
			if nested, err = objectMembers(m.value, "args"); err != nil {
				return nil, nil, err
			}
		default:
			flat = append(flat, m)
		}
	}
	if len(flat) == 0 {
		return op, encodeMembers(nested), nil
	}
	merged := nested
	for _, f := range flat {
		i := slices.IndexFunc(merged, func(m member) bool { return m.key == f.key })
		if i < 0 {
			merged = append(merged, f)
			continue
		}
		if !sameJSON(merged[i].value, f.value) {
			e := fieldError(f.key, "given twice with different values, beside operation (%s) and inside args (%s); give it once, in either place", f.value, merged[i].value)
			e.Details["problem"] = "conflict"
			return nil, nil, e
		}
	}
	return op, encodeMembers(merged), nil
}

// member is one key of a JSON object, with its value as written.
type member struct {
	key   string
	value json.RawMessage
}

// objectMembers lists the members of the JSON object raw in order (null or
// nothing is the empty object); a repeated key keeps its last value, as
// encoding/json does. field names raw in errors.
func objectMembers(raw json.RawMessage, field string) ([]member, error) {
	raw = bytes.Trim(raw, " \t\r\n")
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '{' {
		e := ledger.InvalidField(field, "expected object, got %s", jsonKind(raw))
		e.Details["expected"] = "object"
		return nil, e
	}
	if json.Valid(raw) {
		if out, ok := scanMembers(raw); ok {
			return out, nil
		}
	}
	return decodeMembers(raw, field)
}

// decodeMembers is objectMembers through encoding/json, for what
// scanMembers leaves to it (and its errors).
func decodeMembers(raw json.RawMessage, field string) ([]member, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, ledger.InvalidField(field, "invalid JSON: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.Token() // {
	var out []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, ledger.InvalidField(field, "invalid JSON: %v", err)
		}
		key, _ := t.(string)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, ledger.InvalidField(field, "invalid JSON: %v", err)
		}
		if slices.ContainsFunc(out, func(m member) bool { return m.key == key }) {
			continue
		}
		out = append(out, member{key: key, value: obj[key]})
	}
	return out, nil
}

// encodeMembers writes members back as one JSON object.
func encodeMembers(ms []member) json.RawMessage {
	n := 2
	for _, m := range ms {
		n += len(m.key) + len(m.value) + 4
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendKey(b, m.key)
		b = append(b, ':')
		b = append(b, m.value...)
	}
	return append(b, '}')
}

// sameJSON reports whether two JSON values are equal as values (key order
// and spacing aside).
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// toolHandler is the handler of an operation's own tool.
func (c *conn) toolHandler(op *operation) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return c.dispatch(ctx, req.Session, op, req.Params.Arguments), nil
	}
}

// dispatch resolves the sub-operation, checks the stage and the token's
// scope, runs the operation and, if it succeeded, advances the stage.
// Every check reads the one resolved route, the one that runs. Calls on
// one connection run one at a time.
func (c *conn) dispatch(ctx context.Context, ss *mcp.ServerSession, op *operation, args json.RawMessage) *mcp.CallToolResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	rt, err := resolveRoute(op, args)
	if err != nil {
		return errorResult(err)
	}
	var resumed *resumeNote
	if c.stage < op.minStage {
		if resumed, err = c.resume(ctx, rt); err != nil {
			return errorResult(err)
		}
	}
	if op.name == "knowledge" || op.name == "mental_models" {
		if rt.args, err = c.takeSessionArg(ctx, rt.args); err != nil {
			return errorResult(err)
		}
	}
	cl := &call{conn: c, session: ss, args: rt.args, route: rt}
	defer cl.releaseAll()
	if err := cl.checkScope(); err != nil {
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
	res := replyResult(reply)
	if resumed != nil {
		b, _ := json.Marshal(resumed)
		res.Content = append(res.Content, &mcp.TextContent{Text: string(b)})
	}
	return res
}

// resumeNote is what a connection that skipped the stage flow is told, once:
// what the skipped calls would have taught.
type resumeNote struct {
	Resumed   string            `json:"resumed"`
	SessionID string            `json:"sessionId,omitempty"`
	Cipher    string            `json:"cipher"`
	Markers   map[string]string `json:"markers"`
	Next      string            `json:"next"`
}

// readsWithoutSession lists the sub-operations that only list what the
// ledger holds, as list_sessions does at stage 0: a call below its stage may
// run them without naming a session (see conn.resume).
var readsWithoutSession = map[string][]string{
	"session": {"list", "search", "list_deleted"},
}

// resume decides whether a call below its stage may go ahead anyway.
// Clients that open a new MCP session for every call (stateless HTTP
// clients, the Inspector's CLI) could otherwise never get past stage 0.
// The rule:
//   - a call that names an existing session (sessionId, or the seeds'
//     reasoningSessionId) goes ahead; the connection takes that session as
//     its active one and the stage the operation needs;
//   - session restore names a deleted session, which is not among the live
//     ones: it goes ahead and restore itself refuses an id that is not
//     deleted;
//   - a listing that acts on no session (readsWithoutSession) goes ahead,
//     and the stage stays where it is, so thoughts still need the flow or
//     a named session.
//
// Anything else meets the stage rule. The first call on a connection that
// skipped the flow gets a resumeNote.
func (c *conn) resume(ctx context.Context, rt route) (*resumeNote, error) {
	op := rt.op
	var ids struct {
		SessionID          *string `json:"sessionId"`
		ReasoningSessionID *string `json:"reasoningSessionId"`
	}
	json.Unmarshal(rt.args, &ids) // a malformed call is refused by its own decoder
	var arg, sub string
	switch {
	case ids.SessionID != nil && *ids.SessionID != "":
		arg = *ids.SessionID
	case ids.ReasoningSessionID != nil && *ids.ReasoningSessionID != "":
		arg = *ids.ReasoningSessionID
	}
	if rt.sub != nil {
		sub = rt.sub.name
	}
	prev := c.stage
	var why string
	switch {
	case arg != "" && op.name == "session" && sub == "restore":
		why = fmt.Sprintf("session restore names a deleted session (%s)", arg)
	case arg != "":
		id, err := c.ledger.Resolve(ctx, arg)
		if err != nil {
			return nil, err
		}
		c.setSession(id)
		c.stage = op.minStage
		c.publish(stageChangedEvent, map[string]any{
			"previousStage": int(prev), "newStage": int(c.stage), "trigger": op.name + " (resumed session " + id + ")",
		})
		why = "the call named session " + id
	case slices.Contains(readsWithoutSession[op.name], sub):
		why = fmt.Sprintf("%s %s only lists and acts on no session; the stage stays at %d", op.name, sub, prev)
	default:
		return nil, stageError(op, c.stage)
	}
	if c.resumeTaught {
		return nil, nil
	}
	c.resumeTaught = true
	markers := map[string]string{}
	for _, t := range ledger.CipherTypes() {
		markers[string(t)] = t.Name()
	}
	next := "keep passing sessionId on each call if your client reconnects; otherwise the connection now works on this session"
	if c.sessionID == "" {
		next = "to record thoughts, call start_new then cipher on one connection, or pass the sessionId of an existing session on each call"
	}
	return &resumeNote{
		Resumed:   fmt.Sprintf("this connection skipped the stage flow (stage %d -> %d) because %s", prev, c.stage, why),
		SessionID: c.sessionID,
		Cipher:    "thoughts may be written as S{n}|{type}|{refs}|{content}, e.g. S3|E|S1,S2|the logs show the cache was cold; the cipher operation returns the full guide",
		Markers:   markers,
		Next:      next,
	}, nil
}

// takeSessionArg serves operations that take no session of their own
// (knowledge, mental_models): a sessionId (or reasoningSessionId) that a
// reconnecting client passes on every call names the connection's active
// session and is taken out of the arguments the operation decodes. An id
// that names no session is refused.
func (c *conn) takeSessionArg(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	ms, err := objectMembers(args, "args")
	if err != nil {
		return args, nil // the operation's own decoder reports it
	}
	var named []string
	kept := ms[:0:0]
	for _, m := range ms {
		if m.key != "sessionId" && m.key != "reasoningSessionId" {
			kept = append(kept, m)
			continue
		}
		var v string
		if json.Unmarshal(m.value, &v) != nil {
			e := ledger.InvalidField(m.key, "expected string, got %s", jsonKind(m.value))
			e.Details["expected"] = "string"
			return nil, e
		}
		if v != "" {
			named = append(named, v)
		}
	}
	if len(kept) == len(ms) {
		return args, nil
	}
	for _, arg := range named {
		id, err := c.ledger.Resolve(ctx, arg)
		if err != nil {
			return nil, err
		}
		c.setSession(id)
	}
	return encodeMembers(kept), nil
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
// active. advance never lowers the stage (only stepBack does). New tools
// are announced by the SDK with tools/list_changed.
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

// stepBack takes the connection back to stage to (seed 000: a session
// resume of a different session returns to stage 1) and withdraws the
// per-stage tools it no longer reaches. advance never lowers a stage; this
// is the one way down.
func (c *conn) stepBack(to Stage, trigger string) {
	prev := c.stage
	if to >= prev {
		return
	}
	c.stage = to
	var gone []string
	for _, op := range c.g.ops.list {
		if _, ok := c.toolDesc[op.tool]; ok && op.minStage > to {
			gone = append(gone, op.tool)
			delete(c.toolDesc, op.tool)
		}
	}
	if len(gone) > 0 {
		c.server.RemoveTools(gone...)
	}
	c.publish(stageChangedEvent, map[string]any{"previousStage": int(prev), "newStage": int(to), "trigger": trigger})
}

// syncTools adds the per-stage tools the connection has reached, and
// re-adds those whose description changed (the domain narrows mental
// models).
func (c *conn) syncTools() {
	for _, op := range c.g.ops.list {
		if op.tool == "" || c.stage < op.minStage || c.hidden[op.tool] || !op.servable(c.g) {
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
