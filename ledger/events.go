package ledger

import "time"

// EventType names an event of the ledger (seed 002, ThoughtboxEvent).
type EventType string

// The events the ledger publishes. Each committed thought yields exactly one
// of the first three: branch_created for the first thought of a branch,
// thought_revised for a revision, thought_added otherwise.
const (
	EventThoughtAdded   EventType = "thought_added"
	EventThoughtRevised EventType = "thought_revised"
	EventBranchCreated  EventType = "branch_created"
	EventSessionStarted EventType = "session_started"
	EventSessionLoaded  EventType = "session_loaded"
	// EventSessionUpdated follows a change of a session's title,
	// description or tags.
	EventSessionUpdated EventType = "session_updated"
	// EventCritiqueAdded follows a critique recorded on a thought; its
	// Node is the thought with the critique.
	EventCritiqueAdded EventType = "critique_added"
)

// Event is something that happened to the ledger, published after it was
// committed. Its JSON form is a ThoughtboxEvent line of the JSONL stream.
type Event struct {
	Type      EventType      `json:"type"`
	SessionID string         `json:"sessionId,omitempty"`
	Timestamp time.Time      `json:"timestamp"`
	Data      map[string]any `json:"data"`
	// Node is the committed thought in full (the stream's data truncates
	// the text), for sinks in the same process such as the Observatory.
	// It is set on the thought events only and is not part of the JSON.
	Node *ThoughtNode `json:"-"`
	// ThoughtCount is the session's number of thoughts after a thought
	// event, branch thoughts included (the Observatory's
	// finalThoughtCount). Not part of the JSON.
	ThoughtCount int `json:"-"`
}

// EventSink receives the ledger's events (the Observatory hub, the JSONL
// writer). Publish is called with the session's lock held, so that events of
// one session arrive in commit order; it must not block and must not call
// back into the Ledger.
type EventSink interface {
	Publish(Event)
}

// maxEventThought is the longest thought text an event carries (seed 002).
const maxEventThought = 100

func thoughtEvent(sessionID string, n *node, p plan) Event {
	d := n.Data
	var parent any // null for a session's first thought
	if n.Prev != "" {
		parent = n.Prev
	}
	data := map[string]any{
		"nodeId":            n.ID,
		"parentId":          parent,
		"thoughtNumber":     d.ThoughtNumber,
		"totalThoughts":     d.TotalThoughts,
		"thought":           truncate(d.Thought, maxEventThought),
		"nextThoughtNeeded": d.NextThoughtNeeded,
	}
	typ := EventThoughtAdded
	if d.BranchID != "" {
		data["branchId"] = d.BranchID
		data["fromThoughtNumber"] = n.chain.from
	}
	if d.IsRevision {
		data["revisesThought"] = *d.RevisesThought
		data["revisesNode"] = n.RevisesNode
		typ = EventThoughtRevised
	}
	if p.newBranch {
		typ = EventBranchCreated
	}
	node := n.ThoughtNode
	return Event{Type: typ, SessionID: sessionID, Timestamp: d.Timestamp, Data: data, Node: &node}
}
