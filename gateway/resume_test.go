package gateway_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestReconnectEveryCall plays a client that opens a new MCP connection for
// every call (the Inspector's CLI, a stateless HTTP client): each starts at
// stage 0, yet naming an existing session lets its call proceed, and the
// first such reply says what the skipped stages teach.
func TestReconnectEveryCall(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	first := e.connect(t, clientOpts{})
	id := first.ok("start_new", map[string]any{"sessionTitle": "stateless"})["sessionId"].(string)

	fresh := func() *client { return e.connect(t, clientOpts{}) }

	// Without a session id, the stage rule stands.
	fresh().fail("thought", map[string]any{"thought": "lost", "nextThoughtNeeded": true}, ledger.CodeStageRequirementNotMet)

	for i, text := range []string{"one", "two", "three"} {
		c := fresh()
		args := map[string]any{"thought": text, "nextThoughtNeeded": true, "sessionId": id[:8]}
		if i == 2 {
			delete(args, "sessionId")
			args["reasoningSessionId"] = id
		}
		r := c.gw("thought", args)
		if r.isError {
			t.Fatalf("thought %q on a fresh connection: %s", text, r.texts[0])
		}
		var reply map[string]any
		if err := json.Unmarshal([]byte(r.texts[0]), &reply); err != nil {
			t.Fatal(err)
		}
		if reply["sessionId"] != id || num(reply["thoughtNumber"]) != i+1 {
			t.Fatalf("thought %q: %v, want thought %d of %s", text, reply, i+1, id)
		}
		// Each connection is new, so each is told once.
		if len(r.texts) != 2 || !strings.Contains(r.texts[1], `"resumed"`) || !strings.Contains(r.texts[1], "S{n}|{type}|{refs}|{content}") {
			t.Fatalf("thought %q: the reply does not carry the skipped stages' summary: %v", text, r.texts)
		}
	}

	// Reads work the same way; a second skipping call on one connection is
	// not told again.
	c := fresh()
	r := c.gw("read_thoughts", map[string]any{"sessionId": id, "last": 3})
	if r.isError || len(r.texts) != 2 {
		t.Fatalf("read_thoughts on a fresh connection: %v", r.texts)
	}
	r = c.gw("get_structure", map[string]any{"sessionId": id})
	if r.isError || len(r.texts) != 1 {
		t.Fatalf("get_structure after a resumed call: isError %v, %d contents, want the summary only once", r.isError, len(r.texts))
	}
	// The connection now works on the session without repeating its id.
	c.think("four", nil)

	// An unknown session is SESSION_NOT_FOUND, not a stage error.
	fresh().fail("thought", map[string]any{"thought": "x", "nextThoughtNeeded": true, "sessionId": "00000000-dead"}, ledger.CodeSessionNotFound)

	v, err := e.l.View(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if v.Session.ThoughtCount != 4 {
		t.Fatalf("session holds %d thoughts, want 4", v.Session.ThoughtCount)
	}
}

// TestRefusalsNameTheNextCall: SESSION_NOT_FOUND names the call that lists
// sessions and the closest ids; list_sessions and session list take the
// same limits.
func TestRefusalsNameTheNextCall(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	id := c.ready("near miss")
	c.think("one", nil)

	wrong := id[:6] + "zz"
	body := c.fail("load_context", map[string]any{"sessionId": wrong}, ledger.CodeSessionNotFound)
	msg := body["message"].(string)
	d := body["details"].(map[string]any)
	if !strings.Contains(msg, "session {subOperation: list}") || d["next"] == nil {
		t.Errorf("SESSION_NOT_FOUND does not name the next call: %v", body)
	}
	if near := list(d["closest"]); len(near) != 1 || near[0] != id || !strings.Contains(msg, id) {
		t.Errorf("closest ids = %v in %q, want %s", d["closest"], msg, id)
	}

	for _, limit := range []int{0, 101} {
		c.fail("list_sessions", map[string]any{"limit": limit}, ledger.CodeInvalidPayload)
		c.fail("session", map[string]any{"subOperation": "list", "limit": limit}, ledger.CodeInvalidPayload)
	}
	c.ok("start_new", map[string]any{"sessionTitle": "second"})
	a := c.ok("list_sessions", map[string]any{"limit": 1, "offset": 1})
	b := c.ok("session", map[string]any{"subOperation": "list", "limit": 1, "offset": 1})
	as, bs := list(a["sessions"]), list(b["sessions"])
	if len(as) != 1 || len(bs) != 1 || as[0].(map[string]any)["id"] != bs[0].(map[string]any)["id"] {
		t.Errorf("list_sessions and session list disagree on page 2: %v vs %v", as, bs)
	}
}

// TestReconnectEveryCallEveryOperation drives a session's whole life from a
// client that opens a new connection before every call: thoughts, reads,
// every session sub-operation (delete and restore included), knowledge and
// mental models. Calls that name a session, restore naming a deleted one,
// and session listings go ahead; each fresh connection is told once what the
// skipped stages teach. A thought, knowledge or mental model call that names
// no session still meets the stage rule.
func TestReconnectEveryCallEveryOperation(t *testing.T) {
	e, _ := newKnowledgeEnv(t, gateway.Options{})
	id := e.connect(t, clientOpts{}).ok("start_new", map[string]any{"sessionTitle": "stateless", "tags": []string{"x"}})["sessionId"].(string)
	fresh := func() *client { return e.connect(t, clientOpts{}) }

	call := func(op string, args map[string]any) map[string]any {
		t.Helper()
		r := fresh().gw(op, args)
		if r.isError {
			t.Fatalf("%s %v on a fresh connection: %s", op, args, r.texts[0])
		}
		last := r.texts[len(r.texts)-1]
		if len(r.texts) < 2 || !strings.Contains(last, `"resumed"`) || !strings.Contains(last, "S{n}|{type}|{refs}|{content}") || strings.Contains(r.texts[0], `"resumed"`) {
			t.Fatalf("%s %v: the reply does not end with the skipped stages' summary: %v", op, args, r.texts)
		}
		return r.json(t)
	}
	session := func(sub string, args map[string]any) map[string]any {
		t.Helper()
		in := map[string]any{"subOperation": sub}
		for k, v := range args {
			in[k] = v
		}
		return call("session", in)
	}

	call("thought", map[string]any{"thought": "S1|H|the cache is cold", "nextThoughtNeeded": true, "sessionId": id})
	call("thought", map[string]any{"thought": "second", "nextThoughtNeeded": false, "sessionId": id[:8]})
	if got := list(call("read_thoughts", map[string]any{"sessionId": id, "last": 5})["thoughts"]); len(got) != 2 {
		t.Fatalf("read_thoughts: %d thoughts, want 2", len(got))
	}
	call("get_structure", map[string]any{"sessionId": id})

	if s := session("get", map[string]any{"sessionId": id}); !strings.Contains(fmt.Sprint(s), "stateless") {
		t.Fatalf("session get: %v", s)
	}
	if s := session("list", nil); num(s["count"]) < 1 && len(list(s["sessions"])) != 1 {
		t.Fatalf("session list: %v", s)
	}
	session("search", map[string]any{"query": "cache"})
	session("export", map[string]any{"sessionId": id, "format": "markdown"})
	session("analyze", map[string]any{"sessionId": id})
	session("resume", map[string]any{"sessionId": id})
	session("update", map[string]any{"sessionId": id, "title": "renamed"})
	session("delete", map[string]any{"sessionId": id})
	if d := list(session("list_deleted", nil)["deleted"]); len(d) != 1 || d[0].(map[string]any)["id"] != id {
		t.Fatalf("list_deleted: %v", d)
	}
	// The session is deleted: naming it is no way past the stages, except
	// for restore, which is what brings it back.
	fresh().fail("session", map[string]any{"subOperation": "get", "sessionId": id}, ledger.CodeSessionNotFound)
	fresh().fail("session", map[string]any{"subOperation": "restore", "sessionId": "00000000-dead"}, ledger.CodeSessionNotFound)
	session("restore", map[string]any{"sessionId": id})
	if s := session("get", map[string]any{"sessionId": id}); !strings.Contains(fmt.Sprint(s), "renamed") {
		t.Fatalf("session get after restore: %v", s)
	}

	// Knowledge and mental models name the session to go ahead.
	fresh().fail("knowledge", map[string]any{"operation": "list"}, ledger.CodeStageRequirementNotMet)
	fresh().fail("mental_models", map[string]any{"operation": "list_tags"}, ledger.CodeStageRequirementNotMet)
	p := call("knowledge", map[string]any{"operation": "create", "title": "Cold cache", "description": "d", "content": "c", "sessionId": id})
	pid, _ := p["pattern"].(map[string]any)["id"].(string)
	if pid == "" {
		t.Fatalf("knowledge create: %v", p)
	}
	call("knowledge", map[string]any{"operation": "get", "id": pid, "sessionId": id})
	if got := ids(call("knowledge", map[string]any{"operation": "list", "sessionId": id[:8]})["patterns"]); len(got) != 1 || got[0] != pid {
		t.Fatalf("knowledge list: %v", got)
	}
	call("knowledge", map[string]any{"operation": "write_note", "title": "n", "content": "c", "reasoningSessionId": id})
	call("knowledge", map[string]any{"operation": "list_notes", "sessionId": id})
	fresh().fail("knowledge", map[string]any{"operation": "list", "sessionId": "00000000-dead"}, ledger.CodeSessionNotFound)
	call("mental_models", map[string]any{"operation": "list_models", "sessionId": id})
	call("mental_models", map[string]any{"operation": "get_model", "modelId": "five-whys", "sessionId": id})

	// Reading without a session leaves the stage alone: the connection
	// still cannot record a thought without naming a session.
	c := fresh()
	c.ok("session", map[string]any{"subOperation": "list"})
	c.fail("thought", map[string]any{"thought": "lost", "nextThoughtNeeded": true}, ledger.CodeStageRequirementNotMet)
	c.fail("cipher", nil, ledger.CodeStageRequirementNotMet)
}
