package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestThoughtSizeLimit: a thought over the ledger's limit is refused over
// MCP with INVALID_PAYLOAD naming the field and the limit, before any
// session is created for it, and one at the limit is recorded.
func TestThoughtSizeLimit(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.ok("start_new", nil)
	c.ok("cipher", nil)

	// No session yet: the refused thought must not create one.
	big := strings.Repeat("x", ledger.DefaultMaxThoughtBytes+1)
	body := c.fail("thought", map[string]any{"thought": big, "nextThoughtNeeded": true}, ledger.CodeInvalidPayload)
	msg, _ := body["message"].(string)
	if !strings.Contains(msg, "thought: is 1048577 bytes; the limit is 1048576 bytes") {
		t.Errorf("message = %q, want the size and the limit", msg)
	}
	if d, _ := body["details"].(map[string]any); num(d["limit"]) != ledger.DefaultMaxThoughtBytes || d["field"] != "thought" {
		t.Errorf("details = %v, want field thought and the limit", body["details"])
	}
	sessions, err := e.l.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 0 {
		t.Fatalf("a refused thought created %d sessions", len(sessions))
	}

	at := strings.Repeat("y", ledger.DefaultMaxThoughtBytes)
	r := c.think(at, nil)
	if num(r["thoughtNumber"]) != 1 {
		t.Fatalf("a thought at the limit was not recorded: %v", r)
	}
}

// TestContinueBranchByID: a thought that continues an existing branch
// needs only its branchId over MCP, as on the command line (the server's
// own hint says to keep branchId); starting a branch still needs its fork
// point.
func TestContinueBranchByID(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.ready("branches")
	c.think("one", nil)
	c.think("two", nil)
	c.think("fork", map[string]any{"branchId": "alt", "branchFromThought": 1})
	r := c.think("continue", map[string]any{"branchId": "alt"})
	if num(r["thoughtNumber"]) != 3 {
		t.Fatalf("continued branch thought number = %v, want 3: %v", r["thoughtNumber"], r)
	}
	body := c.fail("thought", map[string]any{"thought": "new", "nextThoughtNeeded": true, "branchId": "other"}, ledger.CodeInvalidPayload)
	if d, _ := body["details"].(map[string]any); d["field"] != "branchFromThought" {
		t.Fatalf("starting a branch without its fork point: %v, want a refusal naming branchFromThought", body)
	}
	v, err := e.l.View(t.Context(), r["sessionId"].(string))
	if err != nil {
		t.Fatal(err)
	}
	n, ok := v.Graph.Node(ledger.NodeID(v.Session.ID, "alt", 3))
	if !ok || n.Data.BranchFromThought == nil || *n.Data.BranchFromThought != 1 {
		t.Fatalf("stored branch thought = %+v, want branchFromThought 1 recorded", n)
	}
}

// TestReopenedSession: a thought after the one that completed a session
// says it reopened it.
func TestReopenedSession(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	id := c.ready("reopen")
	c.think("one", nil)
	c.ok("thought", map[string]any{"thought": "done", "nextThoughtNeeded": false})
	r := c.think("one more", map[string]any{"sessionId": id})
	if r["reopened"] != true {
		t.Fatalf("reply = %v, want reopened", r)
	}
	if r = c.think("and more", nil); r["reopened"] != nil {
		t.Fatalf("a second thought reopened again: %v", r)
	}
}

// TestSessionUpdate: session {update} changes title, description and tags
// with one commit; listing and get show it; thoughts stay.
func TestSessionUpdate(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{name: "editor", version: "1"})
	id := c.ready("first title")
	c.think("one", nil)
	r := c.ok("session", map[string]any{"subOperation": "update", "title": "better title", "tags": []string{"x", "y"}})
	s := r["session"].(map[string]any)
	if s["title"] != "better title" || len(list(s["tags"])) != 2 {
		t.Fatalf("update reply = %v", r)
	}
	got := c.ok("session", map[string]any{"subOperation": "get", "sessionId": id})
	if got["session"].(map[string]any)["title"] != "better title" || len(list(got["mainChain"])) != 1 {
		t.Fatalf("get after update = %v", got)
	}
	c.fail("session", map[string]any{"subOperation": "update"}, ledger.CodeInvalidPayload)
	c.fail("session", map[string]any{"subOperation": "update", "title": " "}, ledger.CodeInvalidPayload)
	if a := e.store.lastAuthor(); a.Name != "update by editor 1" {
		t.Fatalf("the update commit is authored by %q, want the client", a.Name)
	}
}

func (s *recordingStore) UpdateSession(ctx context.Context, req ledger.UpdateSessionRequest) (ledger.CommitID, error) {
	s.mu.Lock()
	s.authors = append(s.authors, ledger.Author{Name: "update by " + req.Author.Name})
	s.mu.Unlock()
	return s.Store.UpdateSession(ctx, req)
}

// TestNoAutoCreateSession: with autoCreateSession off, a thought without an
// active session is refused with the next step, and creates nothing.
func TestNoAutoCreateSession(t *testing.T) {
	e := newEnv(t, gateway.Options{NoAutoCreateSession: true})
	c := e.connect(t, clientOpts{})
	c.ok("start_new", nil)
	c.ok("cipher", nil)
	body := c.fail("thought", map[string]any{"thought": "orphan", "nextThoughtNeeded": true}, ledger.CodeSessionNotFound)
	if !strings.Contains(body["message"].(string), "start_new with a sessionTitle") {
		t.Fatalf("refusal does not name the next step: %v", body)
	}
	if l, _ := e.l.List(t.Context()); len(l) != 0 {
		t.Fatalf("a session was created: %v", l)
	}
	c.ok("start_new", map[string]any{"sessionTitle": "explicit"})
	c.think("now it works", nil)
}

// TestSessionDeleteRestore: session {delete} takes a session out of list,
// get and search and ends it as the connection's active session; reads of
// it say it was deleted and how to restore it; list_deleted shows it;
// restore brings it back whole. delete never defaults to the active session.
func TestSessionDeleteRestore(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	id := c.ready("to be deleted")
	c.think("one", nil)
	c.think("two", nil)
	c.fail("session", map[string]any{"subOperation": "delete"}, ledger.CodeInvalidPayload)
	r := c.ok("session", map[string]any{"subOperation": "delete", "sessionId": id[:8]})
	if d := r["deleted"].(map[string]any); d["id"] != id || d["title"] != "to be deleted" || len(list(d["refs"])) != 1 {
		t.Fatalf("delete reply = %v", r)
	}
	if l := c.ok("session", map[string]any{"subOperation": "list"}); len(list(l["sessions"])) != 0 {
		t.Fatalf("list after delete = %v", l)
	}
	body := c.fail("session", map[string]any{"subOperation": "get", "sessionId": id}, ledger.CodeSessionNotFound)
	if !contains(body["message"].(string), "was deleted: restore brings it back") {
		t.Errorf("get of a deleted session: %v", body)
	}
	if d := c.ok("session", map[string]any{"subOperation": "list_deleted"}); d["count"] != float64(1) {
		t.Fatalf("list_deleted = %v", d)
	}
	c.fail("session", map[string]any{"subOperation": "restore", "sessionId": "nope"}, ledger.CodeSessionNotFound)
	c.ok("session", map[string]any{"subOperation": "restore", "sessionId": id})
	got := c.ok("session", map[string]any{"subOperation": "get", "sessionId": id})
	if len(list(got["mainChain"])) != 2 {
		t.Fatalf("get after restore = %v", got)
	}
	if d := c.ok("session", map[string]any{"subOperation": "list_deleted"}); d["count"] != float64(0) {
		t.Fatalf("list_deleted after restore = %v", d)
	}
	c.fail("session", map[string]any{"subOperation": "restore", "sessionId": id}, ledger.CodeSessionNotFound)
}
