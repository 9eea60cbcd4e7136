package observatory_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/observatory"
)

// seedClient speaks seed 000's form: {action, channel, sessionId} out,
// {channel, event, data} in.
type seedClient struct {
	t  *testing.T
	ws *websocket.Conn
}

func (f *fixture) dialSeed() *seedClient {
	f.t.Helper()
	// Seed 000's endpoint is the root path.
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(f.srv.URL, "http")+"/", nil)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { ws.Close() })
	return &seedClient{t: f.t, ws: ws}
}

func (c *seedClient) send(raw string) {
	c.t.Helper()
	if err := c.ws.WriteMessage(websocket.TextMessage, []byte(raw)); err != nil {
		c.t.Fatal(err)
	}
}

type seedMsg struct {
	Channel   string          `json:"channel"`
	Event     string          `json:"event"`
	SessionID string          `json:"sessionId"`
	Data      json.RawMessage `json:"data"`
}

func (c *seedClient) raw() string {
	c.t.Helper()
	c.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, data, err := c.ws.ReadMessage()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return string(data)
}

// expect reads the next message, checks its channel and event, and
// decodes its data into into (strictly: a field the seed's payload does
// not have is an error when into is a seed-shaped struct).
func (c *seedClient) expect(channel, event string, into any) seedMsg {
	c.t.Helper()
	data := c.raw()
	var m seedMsg
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		c.t.Fatalf("%s: not the seed's {channel, event, data}: %v", data, err)
	}
	if m.Channel != channel || m.Event != event {
		c.t.Fatalf("got {%s %s} %.300s, want {%s %s}", m.Channel, m.Event, m.Data, channel, event)
	}
	if into != nil {
		if err := json.Unmarshal(m.Data, into); err != nil {
			c.t.Fatalf("%s data: %v", event, err)
		}
	}
	return m
}

// TestSeedProtocol drives the Observatory as a client written to seed 000
// does: ws://host:port/, {"action":"subscribe","channel":...}, every event
// of both channels in commit order with seed 002's payloads, ping/pong,
// unsubscribe, and an error naming both forms for a message of neither.
func TestSeedProtocol(t *testing.T) {
	f := newFixture(t, observatory.Config{})
	id := f.start("Pick a cache", "infra")
	f.add(id, ledger.ThoughtInput{Thought: "What is slow?", NextThoughtNeeded: true})

	c := f.dialSeed()
	c.send("ping")
	if got := c.raw(); got != "pong" {
		t.Fatalf("ping answered %q, want pong", got)
	}
	c.send(`{"action":"subscribe","channel":"sessions"}`)
	c.expect("sessions", "subscribed", nil)
	var active struct{ Sessions []observatory.Session }
	c.expect("sessions", "sessions:active", &active)
	if len(active.Sessions) != 1 || active.Sessions[0].ID != id {
		t.Fatalf("sessions:active = %+v", active)
	}
	c.send(`{"action":"subscribe","channel":"reasoning","sessionId":"` + id + `"}`)
	c.expect("reasoning", "subscribed", nil)
	var snap observatory.Snapshot // SessionSnapshotPayload
	if m := c.expect("reasoning", "session:snapshot", &snap); m.SessionID != id || snap.Session.ID != id || len(snap.Thoughts) != 1 {
		t.Fatalf("snapshot: sessionId %q, %+v", m.SessionID, snap)
	}

	// ThoughtAddedPayload, ThoughtBranchedPayload, ThoughtRevisedPayload,
	// the critique, SessionEndedPayload; and on the sessions channel
	// session:updated after each, then SessionStartedPayload.
	f.add(id, ledger.ThoughtInput{Thought: "Reads of user profiles.", NextThoughtNeeded: true})
	f.add(id, ledger.ThoughtInput{Thought: "Try Redis", BranchID: "redis", BranchFromThought: ptr(2), NextThoughtNeeded: true})
	f.add(id, ledger.ThoughtInput{Thought: "Reads AND writes", IsRevision: true, RevisesThought: ptr(2), NextThoughtNeeded: true})
	if _, err := f.l.AddCritique(f.ctx, id, "", 1, ledger.Critique{Text: "Measure first.", Model: "m"}, agent); err != nil {
		t.Fatal(err)
	}
	f.add(id, ledger.ThoughtInput{Thought: "An in-process cache.", NextThoughtNeeded: false})
	other := f.start("Another")

	var added struct {
		Thought  observatory.Thought `json:"thought"`
		ParentID *string             `json:"parentId"`
	}
	c.expect("reasoning", "thought:added", &added)
	if added.Thought.ThoughtNumber != 2 || added.ParentID == nil || *added.ParentID != snap.Thoughts[0].ID {
		t.Errorf("thought:added = %+v", added)
	}
	c.expect("sessions", "session:updated", nil)
	var branched struct {
		Thought           observatory.Thought `json:"thought"`
		ParentID          *string             `json:"parentId"`
		BranchID          string              `json:"branchId"`
		FromThoughtNumber int                 `json:"fromThoughtNumber"`
	}
	c.expect("reasoning", "thought:branched", &branched)
	if branched.BranchID != "redis" || branched.FromThoughtNumber != 2 || branched.ParentID == nil {
		t.Errorf("thought:branched = %+v", branched)
	}
	c.expect("sessions", "session:updated", nil)
	var revised struct {
		Thought               observatory.Thought `json:"thought"`
		ParentID              *string             `json:"parentId"`
		OriginalThoughtNumber int                 `json:"originalThoughtNumber"`
	}
	c.expect("reasoning", "thought:revised", &revised)
	if revised.OriginalThoughtNumber != 2 || !revised.Thought.IsRevision {
		t.Errorf("thought:revised = %+v", revised)
	}
	c.expect("sessions", "session:updated", nil)
	c.expect("reasoning", "thought:critiqued", nil)
	c.expect("reasoning", "thought:added", nil)
	c.expect("sessions", "session:updated", nil)
	var ended struct {
		SessionID         string `json:"sessionId"`
		FinalThoughtCount int    `json:"finalThoughtCount"`
	}
	c.expect("reasoning", "session:ended", &ended)
	if ended.SessionID != id || ended.FinalThoughtCount == 0 {
		t.Errorf("session:ended = %+v", ended)
	}
	c.expect("sessions", "session:ended", nil)
	var started struct{ Session observatory.Session }
	c.expect("sessions", "session:started", &started)
	if started.Session.ID != other {
		t.Errorf("session:started = %+v, want %s", started, other)
	}

	// The reasoning channel without a session id: every session's
	// thoughts, each message naming its session.
	c.send(`{"action":"unsubscribe","channel":"sessions"}`)
	c.expect("sessions", "unsubscribed", nil)
	c.send(`{"action":"unsubscribe","channel":"reasoning"}`)
	c.expect("reasoning", "unsubscribed", nil)
	c.send(`{"action":"subscribe","channel":"reasoning"}`)
	c.expect("reasoning", "subscribed", nil)
	f.add(other, ledger.ThoughtInput{Thought: "From the other session.", NextThoughtNeeded: true})
	if m := c.expect("reasoning", "thought:added", &added); m.SessionID != other || added.Thought.Thought != "From the other session." {
		t.Errorf("all-sessions thought:added: %+v %+v", m, added)
	}

	// Bad requests: the field named, and for a message of neither form
	// or of the other form, what was expected.
	for _, tt := range []struct{ raw, has string }{
		{`{"action":"watch","channel":"sessions"}`, "action"},
		{`{"action":"subscribe","channel":"weather"}`, "channel"},
		{`["observatory","subscribe"]`, `{"action":"subscribe"|"unsubscribe","channel":"reasoning"|"sessions"`},
		{`hello`, `[topic, event, payload]`},
	} {
		c.send(tt.raw)
		var e observatory.ErrorPayload
		c.expect(channelOf(tt.raw), "error", &e)
		if e.Code != ledger.CodeInvalidPayload || !strings.Contains(e.Message, tt.has) {
			t.Errorf("%s: %+v, want INVALID_PAYLOAD naming %s", tt.raw, e, tt.has)
		}
	}
}

// channelOf is the channel an error about raw is sent on: the request's,
// when it named a valid one.
func channelOf(raw string) string {
	if strings.Contains(raw, `"channel":"sessions"`) {
		return "sessions"
	}
	return ""
}

// TestBothFormsOnEitherPath: the first message decides the form, whatever
// the path; an unparseable first message gets an error naming both forms.
func TestBothFormsOnEitherPath(t *testing.T) {
	f := newFixture(t, observatory.Config{})
	id := f.start("either")
	topic := "reasoning:" + id

	ours := f.dialSeed() // the root path, spoken in our form
	ours.send(`["` + topic + `","subscribe"]`)
	var parts []json.RawMessage
	if err := json.Unmarshal([]byte(ours.raw()), &parts); err != nil || len(parts) != 3 {
		t.Fatalf("our form at /: %s", parts)
	}

	seed := f.dial(nil) // /ws, spoken in the seed's form
	if err := seed.ws.WriteMessage(websocket.TextMessage, []byte(`{"action":"subscribe","channel":"reasoning","sessionId":"`+id+`"}`)); err != nil {
		t.Fatal(err)
	}
	sc := &seedClient{t: t, ws: seed.ws}
	sc.expect("reasoning", "subscribed", nil)
	sc.expect("reasoning", "session:snapshot", nil)

	// Before any valid request, a /ws client gets errors in our form,
	// naming both forms.
	fresh := f.dial(nil)
	if err := fresh.ws.WriteMessage(websocket.TextMessage, []byte(`{"action":"subscribe"}`)); err != nil {
		t.Fatal(err)
	}
	m := fresh.next()
	if m.Event != "error" || !strings.Contains(string(m.Payload), "[topic, event, payload]") || !strings.Contains(string(m.Payload), `\"action\"`) {
		t.Errorf("an incomplete seed request on a fresh /ws: [%s %s] %s", m.Topic, m.Event, m.Payload)
	}
}
