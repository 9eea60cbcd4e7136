package observatory

import (
	"context"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// ChangeSource tells cheaply whether the ledger's storage may have been
// written by another process since it was last asked (gitstore's
// ChangeStamp).
type ChangeSource interface {
	ChangeStamp() (string, error)
}

// Follow turns writes made by other processes — a `thoughtbox add`, a
// `serve`, a pull — into the same events the ledger gives for its own, for
// the standalone Observatory, which records nothing itself. Every interval
// it compares the storage's change stamp; when it moved, it lists the
// sessions and, for each one someone watches whose thought count grew,
// reads it and publishes its new thoughts in the order they were created
// (new sessions are announced too). It returns when ctx ends.
//
// Critiques and metadata edits made elsewhere do not change a session's
// count and show at its next snapshot.
func (o *Observatory) Follow(ctx context.Context, src ChangeSource, every time.Duration) {
	counts := map[string]int{}
	list, err := o.ledger.List(ctx)
	if err == nil {
		for _, s := range list {
			counts[s.ID] = s.ThoughtCount
		}
	}
	last, _ := src.ChangeStamp()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		stamp, err := src.ChangeStamp()
		if err != nil || stamp == last {
			continue
		}
		last = stamp
		list, err := o.ledger.List(ctx)
		if err != nil {
			continue
		}
		for _, s := range list {
			before, known := counts[s.ID]
			counts[s.ID] = s.ThoughtCount
			if !known {
				o.Publish(ledger.Event{Type: ledger.EventSessionStarted, SessionID: s.ID, Timestamp: s.CreatedAt,
					Data: map[string]any{"title": s.Title, "tags": s.Tags}})
			}
			if s.ThoughtCount <= before {
				continue
			}
			if !o.hub.hasSubscribers(TopicReasoningPrefix+s.ID, TopicObservatory) {
				continue
			}
			o.publishNew(ctx, s.ID, before)
		}
	}
}

// publishNew reads a session and publishes the thoughts created after its
// first `before` ones.
func (o *Observatory) publishNew(ctx context.Context, id string, before int) {
	v, err := o.ledger.Load(ctx, id)
	if err != nil {
		return
	}
	nodes := v.Graph.Nodes()
	seenBranch := map[string]bool{}
	for i, n := range nodes {
		first := n.Data.BranchID != "" && !seenBranch[n.Data.BranchID]
		seenBranch[n.Data.BranchID] = true
		if i < before {
			continue
		}
		typ := ledger.EventThoughtAdded
		switch {
		case first:
			typ = ledger.EventBranchCreated
		case n.Data.IsRevision:
			typ = ledger.EventThoughtRevised
		}
		node := n
		o.Publish(ledger.Event{Type: typ, SessionID: id, Timestamp: n.Data.Timestamp, Node: &node, ThoughtCount: i + 1})
	}
}
