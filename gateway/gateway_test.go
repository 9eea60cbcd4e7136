package gateway_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
)

func TestInitialize(t *testing.T) {
	e := newEnv(t, gateway.Options{Version: "9.9.9"})
	c := e.connect(t, clientOpts{})
	init := c.cs.InitializeResult()
	if !slices.Contains(gateway.ProtocolVersions, init.ProtocolVersion) {
		t.Errorf("negotiated protocol %q, want one of %v", init.ProtocolVersion, gateway.ProtocolVersions)
	}
	if init.ServerInfo.Name != "thoughtbox" || init.ServerInfo.Version != "9.9.9" {
		t.Errorf("server info = %+v", init.ServerInfo)
	}
	if !strings.Contains(init.Instructions, "start_new") {
		t.Errorf("instructions do not tell the order of calls: %q", init.Instructions)
	}
	tools := c.tools()
	if diff := cmp.Diff([]string{"thoughtbox_gateway"}, c.toolNames()); diff != "" {
		t.Fatalf("tools at stage 0 (-want +got):\n%s", diff)
	}
	gw := tools["thoughtbox_gateway"]
	var schema struct {
		Required             []string `json:"required"`
		AdditionalProperties bool     `json:"additionalProperties"`
		Properties           struct {
			Operation struct {
				Enum []string `json:"enum"`
			} `json:"operation"`
		} `json:"properties"`
	}
	b, _ := json.Marshal(gw.InputSchema)
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	wantOps := []string{"get_state", "start_new", "load_context", "list_sessions", "navigate", "list_roots", "bind_root",
		"cipher", "session", "thought", "read_thoughts", "get_structure", "deep_analysis", "mental_models", "notebook", "why", "knowledge"}
	if diff := cmp.Diff(wantOps, schema.Properties.Operation.Enum); diff != "" {
		t.Errorf("operation enum (-want +got):\n%s", diff)
	}
	if schema.AdditionalProperties || !slices.Contains(schema.Required, "operation") {
		t.Errorf("schema = %s", b)
	}
	for _, op := range wantOps {
		if !strings.Contains(gw.Description, "- "+op+" (") {
			t.Errorf("gateway description does not describe %s", op)
		}
	}
}

func TestStagesAndProgressiveDisclosure(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})

	st := c.ok("get_state", nil)
	if num(st["stage"]) != 0 || st["stageName"] != "entry" {
		t.Fatalf("initial state = %v", st)
	}

	body := c.fail("thought", map[string]any{"thought": "too early", "nextThoughtNeeded": true}, ledger.CodeStageRequirementNotMet)
	d := body["details"].(map[string]any)
	if num(d["currentStage"]) != 0 || num(d["requiredStage"]) != 2 {
		t.Errorf("details = %v", d)
	}
	if msg := body["message"].(string); !contains(msg, "stage 2") || !contains(msg, "stage 0") || !contains(msg, "start_new") || !contains(msg, "cipher") {
		t.Errorf("message does not name stages and unlocking calls: %q", msg)
	}
	c.fail("cipher", nil, ledger.CodeStageRequirementNotMet)
	c.fail("read_thoughts", nil, ledger.CodeStageRequirementNotMet)
	c.fail("mental_models", map[string]any{"operation": "list_tags"}, ledger.CodeStageRequirementNotMet)

	s := c.ok("start_new", map[string]any{"sessionTitle": "Debug API", "tags": []string{"api"}})
	if num(s["stage"]) != 1 || s["sessionId"] == "" {
		t.Fatalf("start_new = %v", s)
	}
	c.awaitToolsChanged()
	if diff := cmp.Diff([]string{"thoughtbox_cipher", "thoughtbox_gateway"}, sorted(c.toolNames())); diff != "" {
		t.Errorf("tools at stage 1 (-want +got):\n%s", diff)
	}
	body = c.fail("thought", map[string]any{"thought": "x", "nextThoughtNeeded": true}, ledger.CodeStageRequirementNotMet)
	if got := body["details"].(map[string]any)["unlockWith"]; !cmp.Equal(got, []any{"cipher"}) {
		t.Errorf("unlockWith = %v, want [cipher]", got)
	}

	r := c.gw("cipher", nil)
	if r.isError || len(r.texts) != 2 {
		t.Fatalf("cipher = %v", r)
	}
	h := r.json(t)
	if num(h["stage"]) != 2 || h["format"] != "S{n}|{type}|{refs}|{content}" || len(h["markers"].(map[string]any)) != 9 {
		t.Errorf("cipher header = %v", h)
	}
	if !contains(r.texts[1], "S") || len(r.texts[1]) < 200 {
		t.Errorf("cipher guide looks empty: %q", r.texts[1])
	}
	c.awaitToolsChanged()
	if diff := cmp.Diff([]string{"thoughtbox_cipher", "thoughtbox_gateway", "thoughtbox_mental_models", "thoughtbox_thought"}, sorted(c.toolNames())); diff != "" {
		t.Errorf("tools at stage 2 (-want +got):\n%s", diff)
	}

	got := c.think("S1|O|User reports slow page loads", nil)
	if got["sessionId"] != s["sessionId"] || num(got["thoughtNumber"]) != 1 {
		t.Errorf("thought = %v", got)
	}
	st = c.ok("get_state", nil)
	if num(st["stage"]) != 2 || st["sessionId"] != s["sessionId"] || num(st["session"].(map[string]any)["thoughtCount"]) != 1 {
		t.Errorf("state = %v", st)
	}
	if diff := cmp.Diff([]any{"get_state", "start_new", "load_context", "list_sessions", "navigate", "list_roots", "bind_root",
		"cipher", "session", "thought", "read_thoughts", "get_structure", "deep_analysis", "mental_models", "notebook", "why", "knowledge"}, st["availableOperations"]); diff != "" {
		t.Errorf("availableOperations (-want +got):\n%s", diff)
	}

	// Stages do not go back, and a repeated cipher changes no tools.
	c.ok("start_new", map[string]any{"sessionTitle": "Second"})
	c.gw("cipher", nil)
	c.noToolsChanged()
	if st := c.ok("get_state", nil); num(st["stage"]) != 2 {
		t.Errorf("stage after start_new at stage 2 = %v", st["stage"])
	}

	var stages [][2]int
	for _, ev := range e.events.ofType("stage_changed") {
		stages = append(stages, [2]int{ev.Data["previousStage"].(int), ev.Data["newStage"].(int)})
	}
	if diff := cmp.Diff([][2]int{{0, 1}, {1, 2}}, stages); diff != "" {
		t.Errorf("stage_changed events (-want +got):\n%s", diff)
	}
	if n := len(e.events.ofType("cipher_loaded")); n != 2 {
		t.Errorf("%d cipher_loaded events, want 2", n)
	}
}

// The per-stage thought tool takes ThoughtData directly.
func TestThoughtTool(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	id := c.ready("direct")
	r := c.tool("thoughtbox_thought", map[string]any{"thought": "direct call", "nextThoughtNeeded": false, "thoughtNumber": 1})
	if r.isError {
		t.Fatal(r.texts[0])
	}
	got := r.json(t)
	if got["sessionId"] != id || got["nextThoughtNeeded"] != false {
		t.Errorf("reply = %v", got)
	}
	r = c.tool("thoughtbox_thought", map[string]any{"thought": "x", "nextThoughtNeeded": true, "bogus": 1})
	if !r.isError || !contains(r.texts[0], "bogus") {
		t.Errorf("unknown argument on the direct tool: %v", r)
	}
	r = c.tool("thoughtbox_cipher", nil)
	if r.isError || len(r.texts) != 2 {
		t.Errorf("thoughtbox_cipher = %v", r)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestAutoCreateSession(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	s := c.ok("start_new", map[string]any{"tags": []string{"from-start"}, "domain": "debugging"})
	if _, ok := s["sessionId"]; ok {
		t.Fatalf("start_new without a title created a session: %v", s)
	}
	c.ok("cipher", nil)
	if st := c.ok("get_state", nil); st["pendingSession"] != true || st["sessionId"] != nil {
		t.Errorf("state before the first thought = %v", st)
	}

	first := c.think("Why is the build slow?", map[string]any{"sessionTitle": "Slow build", "sessionTags": []string{"ci", "from-start"}})
	if first["sessionCreated"] != true {
		t.Errorf("first thought reply = %v", first)
	}
	id := first["sessionId"].(string)
	second := c.think("Second thought", map[string]any{"sessionTitle": "ignored"})
	if second["sessionId"] != id || second["sessionCreated"] != nil || num(second["thoughtNumber"]) != 2 {
		t.Errorf("second thought reply = %v", second)
	}
	v, err := e.l.View(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if v.Session.Title != "Slow build" || !cmp.Equal(v.Session.Tags, []string{"from-start", "ci"}) {
		t.Errorf("session = %+v", v.Session)
	}

	// Without a title anywhere, the thought names the session; a fresh
	// connection at stage 2 only via load_context, so use a new session.
	c.ok("start_new", nil)
	third := c.think("S1|H|Cache misses on every run\nmore detail", nil)
	v, err = e.l.View(t.Context(), third["sessionId"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if v.Session.Title != "Cache misses on every run" {
		t.Errorf("derived title = %q", v.Session.Title)
	}

	// A branch or revision cannot start a session: nothing is created.
	c.ok("start_new", nil)
	before, _ := e.l.List(t.Context())
	c.fail("thought", map[string]any{"thought": "b", "nextThoughtNeeded": true, "branchFromThought": 1, "branchId": "alt"}, ledger.CodeInvalidPayload)
	after, _ := e.l.List(t.Context())
	if len(after) != len(before) {
		t.Errorf("a failed first thought left a session behind")
	}
}

func TestThoughtReply(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	id := c.ready("reply sizes")
	c.think("one", nil)
	long := strings.Repeat("b", ledger.MaxBranchIDLength)
	for _, args := range []map[string]any{
		{"thought": "plain", "nextThoughtNeeded": true},
		{"thought": "branch", "nextThoughtNeeded": true, "branchFromThought": 1, "branchId": long, "totalThoughts": 999999999},
		{"thought": "done", "nextThoughtNeeded": false},
	} {
		r := c.gw("thought", args)
		if r.isError {
			t.Fatal(r.texts[0])
		}
		if len(r.texts) != 1 || len(r.texts[0]) >= 300 {
			t.Errorf("default reply is %d bytes, want < 300: %s", len(r.texts[0]), r.texts[0])
		}
		m := r.json(t)
		for _, k := range []string{"sessionId", "thoughtNumber", "totalThoughts", "nextThoughtNeeded", "hint"} {
			if _, ok := m[k]; !ok {
				t.Errorf("reply lacks %s: %v", k, m)
			}
		}
		if m["node"] != nil || m["session"] != nil {
			t.Errorf("default reply is verbose: %v", m)
		}
	}

	// The "done" thought closed the session; load it again.
	c.ok("load_context", map[string]any{"sessionId": id})
	v := c.think("S5|C|S1,S4|verbose one", map[string]any{"verbose": true})
	node := v["node"].(map[string]any)
	if node["id"] == nil || node["data"].(map[string]any)["thought"] != "S5|C|S1,S4|verbose one" || node["cipher"].(map[string]any)["type"] != "C" {
		t.Errorf("verbose node = %v", node)
	}
	if v["session"].(map[string]any)["title"] != "reply sizes" {
		t.Errorf("verbose session = %v", v["session"])
	}

	r := c.gw("thought", map[string]any{"thought": "guide me", "nextThoughtNeeded": true, "includeGuide": true})
	if r.isError || len(r.texts) != 2 || len(r.texts[1]) < 200 {
		t.Fatalf("includeGuide reply = %v", r)
	}
	if log := e.log.String(); !contains(log, "thought 1/1") || !contains(log, "│ guide me") || !contains(log, "[conclusion]") {
		t.Errorf("thought log = %q", log)
	}
}

func TestBadArguments(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.ready("bad args")
	tests := []struct {
		name      string
		op        string
		args      any
		code      ledger.Code
		field     string
		inMessage string
	}{
		{"unknown argument", "thought", map[string]any{"thought": "x", "nextThoughtNeeded": true, "thougth": 1},
			ledger.CodeInvalidPayload, "thougth", "unknown argument"},
		{"integer as string", "thought", map[string]any{"thought": "x", "nextThoughtNeeded": true, "thoughtNumber": "3"},
			ledger.CodeInvalidPayload, "thoughtNumber", "thoughtNumber: expected integer, got string"},
		{"fraction", "thought", map[string]any{"thought": "x", "nextThoughtNeeded": true, "thoughtNumber": 1.5},
			ledger.CodeInvalidPayload, "thoughtNumber", "expected integer, got number 1.5"},
		{"boolean as string", "thought", map[string]any{"thought": "x", "nextThoughtNeeded": "yes"},
			ledger.CodeInvalidPayload, "nextThoughtNeeded", "nextThoughtNeeded: expected boolean, got string"},
		{"tags not array", "thought", map[string]any{"thought": "x", "nextThoughtNeeded": true, "sessionTags": "a"},
			ledger.CodeInvalidPayload, "sessionTags", "expected array of strings, got string"},
		{"missing thought", "thought", map[string]any{"nextThoughtNeeded": true},
			ledger.CodeInvalidPayload, "thought", "thought: is required"},
		{"missing nextThoughtNeeded", "thought", map[string]any{"thought": "x"},
			ledger.CodeInvalidPayload, "nextThoughtNeeded", "is required"},
		{"bad branch id", "thought", map[string]any{"thought": "x", "nextThoughtNeeded": true, "branchId": "Bad", "branchFromThought": 1},
			ledger.CodeInvalidPayload, "branchId", "^[a-z0-9-]+$"},
		{"nested range type", "read_thoughts", map[string]any{"range": map[string]any{"start": "1", "end": 2}},
			ledger.CodeInvalidPayload, "range.start", "range.start: expected integer, got string"},
		{"args not an object", "thought", "thought text",
			ledger.CodeInvalidPayload, "args", "args: expected object, got string"},
		{"mutually exclusive", "read_thoughts", map[string]any{"last": 2, "thoughtNumber": 1},
			ledger.CodeInvalidPayload, "thoughtNumber", "cannot be combined with last"},
		{"list limit", "list_sessions", map[string]any{"limit": 0},
			ledger.CodeInvalidPayload, "limit", "between 1 and"},
		{"bad sub-operation", "mental_models", map[string]any{"operation": "delete_model"},
			ledger.CodeInvalidPayload, "operation", "get_model, list_models, list_tags"},
		{"unknown session", "load_context", map[string]any{"sessionId": "nope"},
			ledger.CodeSessionNotFound, "", "nope"},
		{"unknown thought", "read_thoughts", map[string]any{"thoughtNumber": 42},
			ledger.CodeThoughtNotFound, "", "no thought 42"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := c.fail(tt.op, tt.args, tt.code)
			msg, _ := body["message"].(string)
			if !contains(msg, tt.inMessage) {
				t.Errorf("message %q does not contain %q", msg, tt.inMessage)
			}
			if tt.field != "" {
				if f := body["details"].(map[string]any)["field"]; f != tt.field {
					t.Errorf("details.field = %v, want %s", f, tt.field)
				}
			}
		})
	}

	t.Run("unknown operation", func(t *testing.T) {
		body := c.fail("sessions", map[string]any{}, ledger.CodeInvalidOperation)
		if !contains(body["message"].(string), "get_state") {
			t.Errorf("message does not list the operations: %v", body["message"])
		}
	})
	t.Run("flat arguments are the operation's", func(t *testing.T) {
		r := c.tool("thoughtbox_gateway", map[string]any{"operation": "thought", "thought": "x"})
		if !r.isError || !contains(r.texts[0], `"field":"nextThoughtNeeded"`) {
			t.Errorf("flat arguments: %v", r.texts)
		}
	})
	t.Run("flat and nested disagree", func(t *testing.T) {
		for _, in := range []map[string]any{
			{"operation": "read_thoughts", "last": 1, "args": map[string]any{"last": 2}},
			{"operation": "session", "subOperation": "list", "args": map[string]any{"subOperation": "get"}},
		} {
			r := c.tool("thoughtbox_gateway", in)
			field := "last"
			if in["operation"] == "session" {
				field = "subOperation"
			}
			if !r.isError {
				t.Fatalf("conflict %v accepted: %v", in, r.texts)
			}
			body := r.json(t)
			d, _ := body["details"].(map[string]any)
			if body["code"] != string(ledger.CodeInvalidPayload) || d["field"] != field || d["problem"] != "conflict" ||
				!contains(body["message"].(string), "given twice with different values") {
				t.Errorf("conflict %v: %v, want INVALID_PAYLOAD naming %s", in, body, field)
			}
		}
	})
	t.Run("args not an object", func(t *testing.T) {
		r := c.tool("thoughtbox_gateway", map[string]any{"operation": "get_state", "args": []int{1}})
		if !r.isError || !contains(r.texts[0], "args: expected object, got array") {
			t.Errorf("args type: %v", r.texts)
		}
	})
	t.Run("missing operation", func(t *testing.T) {
		r := c.tool("thoughtbox_gateway", map[string]any{"args": map[string]any{}})
		if !r.isError || !contains(r.texts[0], "operation: is required") {
			t.Errorf("missing operation: %v", r.texts)
		}
	})
	t.Run("operation not a string", func(t *testing.T) {
		r := c.tool("thoughtbox_gateway", map[string]any{"operation": 3})
		if !r.isError || !contains(r.texts[0], "operation: expected string, got number") {
			t.Errorf("operation type: %v", r.texts)
		}
	})
}

func TestLoadContext(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	first := e.connect(t, clientOpts{})
	id := first.ready("resumable")
	for i := 1; i <= 5; i++ {
		first.think(fmt.Sprintf("step %d", i), nil)
	}
	first.think("alternative", map[string]any{"branchFromThought": 3, "branchId": "alt"})

	c := e.connect(t, clientOpts{})
	r := c.ok("load_context", map[string]any{"sessionId": id[:8]})
	if num(r["stage"]) != 1 {
		t.Errorf("stage after load_context = %v", r["stage"])
	}
	want := map[string]any{
		"thoughtCount": 6.0, "currentThoughtNumber": 5.0, "branchCount": 1.0,
		"branches": []any{"alt"}, "message": "Next thought will be #6",
	}
	if diff := cmp.Diff(want, r["restorationInfo"]); diff != "" {
		t.Errorf("restorationInfo (-want +got):\n%s", diff)
	}
	c.ok("cipher", nil)
	if got := c.think("continued", nil); num(got["thoughtNumber"]) != 6 || got["sessionId"] != id {
		t.Errorf("next thought = %v", got)
	}
}

func TestListSessions(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	for i := range 3 {
		c.ok("start_new", map[string]any{"sessionTitle": fmt.Sprintf("s%d", i), "tags": []string{fmt.Sprint("t", i%2)}})
	}
	r := c.ok("list_sessions", map[string]any{"limit": 2})
	if num(r["count"]) != 2 || num(r["total"]) != 3 || r["activeSessionId"] == "" || r["hasMore"] != true || num(r["limit"]) != 2 {
		t.Errorf("list_sessions = %v", r)
	}
	if first := list(r["sessions"])[0].(map[string]any); first["title"] != "s2" {
		t.Errorf("first session %v, want the most recently updated (s2)", first["title"])
	}
	r = c.ok("list_sessions", map[string]any{"limit": 2, "offset": 2})
	if num(r["count"]) != 1 || r["hasMore"] != false || num(r["offset"]) != 2 {
		t.Errorf("last page = %v", r)
	}
	r = c.ok("list_sessions", map[string]any{"tag": "T0"})
	if num(r["count"]) != 2 || num(r["total"]) != 2 {
		t.Errorf("tag filter (ignoring case): %v", r)
	}
}

func TestNavigateAndMentalModels(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.ok("start_new", map[string]any{"sessionTitle": "models"})
	nav := c.ok("navigate", map[string]any{"domain": "debugging", "task": "fix flaky test", "aspect": "timing"})
	if num(nav["stage"]) != 1 || !contains(nav["note"].(string), "once the cipher is loaded") {
		t.Errorf("navigate at stage 1 = %v", nav)
	}
	c.awaitToolsChanged() // stage 1
	c.ok("cipher", nil)
	st := c.ok("get_state", nil)
	if num(st["stage"]) != 3 || st["domain"] != "debugging" || st["navigation"].(map[string]any)["task"] != "fix flaky test" {
		t.Errorf("state = %v", st)
	}

	all := c.ok("mental_models", map[string]any{"operation": "list_models", "tag": "planning"})
	if all["filter"] != "planning" || num(all["count"]) == 0 {
		t.Errorf("explicit tag = %v", all)
	}
	narrowed := c.ok("mental_models", map[string]any{"operation": "list_models"})
	if narrowed["filter"] != "debugging" || narrowed["domain"] != "debugging" {
		t.Errorf("stage 3 list = %v", narrowed)
	}
	for _, m := range list(narrowed["models"]) {
		if !slices.Contains(list(m.(map[string]any)["tags"]), any("debugging")) {
			t.Errorf("model %v is not a debugging model", m)
		}
	}
	names := map[string]bool{}
	for _, m := range list(narrowed["models"]) {
		names[m.(map[string]any)["name"].(string)] = true
	}
	if !names["rubber-duck"] || !names["five-whys"] || len(names) != 2 {
		t.Errorf("debugging models = %v", names)
	}
	if desc := c.tools()["thoughtbox_mental_models"].Description; !contains(desc, "debugging") {
		t.Errorf("mental models tool description at stage 3: %q", desc)
	}

	m := c.ok("mental_models", map[string]any{"operation": "get_model", "modelId": "five-whys"})
	if m["title"] != "Five Whys" || len(m["content"].(string)) < 200 {
		t.Errorf("get_model = %v", m)
	}
	if m := c.ok("mental_models", map[string]any{"subOperation": "get_model", "model": "inversion"}); m["name"] != "inversion" {
		t.Errorf("aliases: %v", m)
	}
	tags := c.ok("mental_models", map[string]any{"operation": "list_tags"})
	if num(tags["count"]) != 6 || list(tags["tags"])[0].(map[string]any)["description"] == "" {
		t.Errorf("list_tags = %v", tags)
	}
	body := c.fail("mental_models", map[string]any{"operation": "get_model", "modelId": "nope"}, ledger.CodeInvalidPayload)
	if !contains(body["message"].(string), "rubber-duck") {
		t.Errorf("unknown model message = %v", body["message"])
	}
	c.fail("mental_models", map[string]any{"operation": "list_models", "tag": "cooking"}, ledger.CodeInvalidPayload)

	// The direct tool says the same.
	r := c.tool("thoughtbox_mental_models", map[string]any{"operation": "list_models"})
	if r.isError || r.json(t)["filter"] != "debugging" {
		t.Errorf("thoughtbox_mental_models = %v", r.texts)
	}
}

func TestNavigateDomainEntersStage3(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.ready("domains")
	c.awaitToolsChanged()
	for len(c.toolsChanged) > 0 {
		<-c.toolsChanged
	}
	if r := c.ok("navigate", map[string]any{"domain": "planning"}); num(r["stage"]) != 3 {
		t.Fatalf("navigate with a domain at stage 2 = %v", r)
	}
	c.awaitToolsChanged()
	if desc := c.tools()["thoughtbox_mental_models"].Description; !contains(desc, "planning") {
		t.Errorf("description not narrowed: %q", desc)
	}
	if r := c.ok("mental_models", map[string]any{"operation": "list_models"}); r["filter"] != "planning" {
		t.Errorf("list = %v", r)
	}
	// A domain that is no tag narrows nothing.
	c.ok("navigate", map[string]any{"domain": "frontend"})
	if r := c.ok("mental_models", map[string]any{"operation": "list_models"}); r["filter"] != nil || num(r["count"]) != 15 {
		t.Errorf("list for an unknown domain = %v", r)
	}
}

func TestReadThoughtsAndStructure(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	id := c.ready("reading")
	for i := 1; i <= 4; i++ {
		c.think(fmt.Sprintf("main %d", i), nil)
	}
	c.think("alt 3", map[string]any{"branchFromThought": 2, "branchId": "alt"})
	c.think("alt 4", map[string]any{"branchFromThought": 2, "branchId": "alt"})
	c.think("main 5 revises 2", map[string]any{"isRevision": true, "revisesThought": 2})
	c.think("only on the branch", map[string]any{"branchFromThought": 2, "branchId": "alt", "thoughtNumber": 9})

	texts := func(r map[string]any) []string {
		var out []string
		for _, th := range list(r["thoughts"]) {
			out = append(out, th.(map[string]any)["thought"].(string))
		}
		if num(r["count"]) != len(out) || r["sessionId"] != id {
			t.Errorf("count/sessionId of %v", r)
		}
		return out
	}
	tests := []struct {
		args map[string]any
		want []string
	}{
		{nil, []string{"main 1", "main 2", "main 3", "main 4", "main 5 revises 2"}},
		// thoughtNumber and range read the main chain, or the branch
		// branchId names beside them (seed 002: "get single specific
		// thought").
		{map[string]any{"thoughtNumber": 3}, []string{"main 3"}},
		{map[string]any{"thoughtNumber": 3, "branchId": "alt"}, []string{"alt 3"}},
		{map[string]any{"range": map[string]any{"start": 3, "end": 3}}, []string{"main 3"}},
		{map[string]any{"range": map[string]any{"start": 9, "end": 9}}, nil},
		{map[string]any{"range": map[string]any{"start": 9, "end": 9}, "branchId": "alt"}, []string{"only on the branch"}},
		{map[string]any{"thoughtNumber": 9, "branchId": "alt"}, []string{"only on the branch"}},
		{map[string]any{"last": 3}, []string{"alt 4", "main 5 revises 2", "only on the branch"}},
		{map[string]any{"range": map[string]any{"start": 3, "end": 4}}, []string{"main 3", "main 4"}},
		{map[string]any{"range": map[string]any{"start": 3, "end": 4}, "branchId": "alt"}, []string{"alt 3", "alt 4"}},
		{map[string]any{"branchId": "alt"}, []string{"alt 3", "alt 4", "only on the branch"}},
		{map[string]any{"branchId": "alt", "sessionId": id[:6]}, []string{"alt 3", "alt 4", "only on the branch"}},
	}
	for _, tt := range tests {
		r := c.ok("read_thoughts", tt.args)
		if diff := cmp.Diff(tt.want, texts(r)); diff != "" {
			t.Errorf("read_thoughts(%v) (-want +got):\n%s", tt.args, diff)
		}
	}
	if r := c.ok("read_thoughts", nil); !cmp.Equal(r["branches"], []any{"alt"}) || !cmp.Equal(r["query"], map[string]any{"mainChain": true}) {
		t.Errorf("main chain read: branches %v, query %v", r["branches"], r["query"])
	}
	c.fail("read_thoughts", map[string]any{"branchId": "nope"}, ledger.CodeInvalidPayload)
	if body := c.fail("read_thoughts", map[string]any{"thoughtNumber": 9}, ledger.CodeThoughtNotFound); !contains(body["message"].(string), "main chain") {
		t.Errorf("thought 9 is only on a branch; the error should say it looked at the main chain: %v", body)
	}
	c.fail("read_thoughts", map[string]any{"last": 2, "branchId": "alt"}, ledger.CodeInvalidPayload)

	s := c.ok("get_structure", nil)
	want := map[string]any{
		"sessionId": id,
		"mainChain": map[string]any{"count": 5.0, "range": map[string]any{"first": 1.0, "last": 5.0}},
		"branches":  []any{map[string]any{"id": "alt", "fromThought": 2.0, "count": 3.0}},
		"revisions": []any{map[string]any{"thoughtNumber": 5.0, "revises": 2.0}},
		"summary":   map[string]any{"totalThoughts": 8.0, "totalBranches": 1.0, "totalRevisions": 1.0},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("get_structure (-want +got):\n%s", diff)
	}

	other := e.connect(t, clientOpts{})
	other.ok("start_new", nil)
	other.ok("cipher", nil)
	other.fail("read_thoughts", nil, ledger.CodeSessionNotFound)
	if r := other.ok("get_structure", map[string]any{"sessionId": id}); r["sessionId"] != id {
		t.Errorf("get_structure by id = %v", r)
	}
}

func TestAuthor(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{name: "claude-code", version: "2.0.1"})
	c.ready("authors")
	c.think("by the client", nil)
	if a := e.store.lastAuthor(); a.Name != "claude-code 2.0.1" || a.Email != "" {
		t.Errorf("author = %+v", a)
	}
	st := c.ok("get_state", nil)
	if st["author"] != "claude-code 2.0.1" || st["client"].(map[string]any)["name"] != "claude-code" {
		t.Errorf("state = %v", st)
	}

	e2 := newEnv(t, gateway.Options{AgentName: "Planner", AgentID: "planner-7"})
	c2 := e2.connect(t, clientOpts{name: "claude-code", version: "2.0.1"})
	c2.ready("authors")
	c2.think("by the agent", nil)
	if a := e2.store.lastAuthor(); a.Name != "Planner" || a.Email != "planner-7@agents.thoughtbox.invalid" {
		t.Errorf("overridden author = %+v", a)
	}
}

func TestConnectionsAreIndependent(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	a := e.connect(t, clientOpts{})
	b := e.connect(t, clientOpts{})
	a.ready("a")
	a.awaitToolsChanged()
	b.noToolsChanged()
	if st := b.ok("get_state", nil); num(st["stage"]) != 0 {
		t.Errorf("b's stage = %v", st["stage"])
	}
	if diff := cmp.Diff([]string{"thoughtbox_gateway"}, b.toolNames()); diff != "" {
		t.Errorf("b's tools (-want +got):\n%s", diff)
	}
	if e.g.Connections() != 2 {
		t.Errorf("Connections() = %d, want 2", e.g.Connections())
	}
}

// Parallel connections write to their own sessions under -race.
func TestConcurrentConnections(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	const n, per = 4, 10
	clients := make([]*client, n)
	for i := range clients {
		clients[i] = e.connect(t, clientOpts{})
		clients[i].ready(fmt.Sprint("parallel ", i))
	}
	done := make(chan string, n)
	for _, c := range clients {
		go func() {
			var id string
			for range per {
				res, err := c.cs.CallTool(t.Context(), toolCall("thought", map[string]any{"thought": "p", "nextThoughtNeeded": true}))
				if err != nil || res.IsError {
					done <- ""
					return
				}
				var m map[string]any
				_ = json.Unmarshal([]byte(textOf(res)), &m)
				id, _ = m["sessionId"].(string)
			}
			done <- id
		}()
	}
	seen := map[string]bool{}
	for range n {
		id := <-done
		if id == "" {
			t.Fatal("a parallel thought failed")
		}
		seen[id] = true
	}
	for id := range seen {
		v, err := e.l.View(t.Context(), id)
		if err != nil || v.Session.ThoughtCount != per {
			t.Errorf("session %s: %v thoughts, err %v", id, v.Session.ThoughtCount, err)
		}
	}
	if len(seen) != n {
		t.Errorf("%d sessions, want %d", len(seen), n)
	}
}

// TestThoughtLogOneLine: each thought is one line of the stderr log, however
// long or many-lined its text, with an agent's control characters shown
// escaped rather than sent to the person's terminal.
func TestThoughtLogOneLine(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.ready("log lines")
	before := len(e.log.String())
	c.think("first line\nsecond\tline \x1b[31mred\x1b[0m\n\n"+strings.Repeat("word ", 200), nil)
	log := e.log.String()[before:]
	lines := strings.Split(strings.TrimSuffix(log, "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("the log has %d lines for one thought:\n%s", len(lines), log)
	}
	line := lines[0]
	if !contains(line, "│ first line ⏎ second line \\x1b[31mred\\x1b[0m ⏎  ⏎ word word") || strings.ContainsRune(line, 0x1b) {
		t.Errorf("log line = %q", line)
	}
	if !strings.HasSuffix(line, "…") || utf8.RuneCountInString(line) > 300 {
		t.Errorf("a long thought is not cut (%d characters): %q", utf8.RuneCountInString(line), line)
	}
}
