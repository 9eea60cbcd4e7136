package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// CritiqueResult is the outcome of a recorded critique.
type CritiqueResult struct {
	// Node is the critiqued thought, its critique included. Its Commit is
	// still the commit that recorded the thought.
	Node ThoughtNode
	// Commit is the commit that added the critique.
	Commit CommitID
}

// AddCritique records a model's critique of thought thoughtNumber on
// branch ("" for the main chain). The store commits it as a second commit
// that rewrites the thought's file, attributed to author (the model); the
// session's graph is then updated from what was committed, as AddThought
// does. A zero c.Timestamp is set from the ledger's clock.
//
// It goes through the session's lock, so it is ordered with the session's
// thoughts. If another writer moved the chain first, the session is reloaded
// and the critique tried again on the new tip: a critique only adds a field
// to one file, so it never needs renumbering. A thought that is not on the
// chain is ErrThoughtNotFound; a thought that already has a critique gets
// the new one in its place (the earlier one stays in the Git history).
func (l *Ledger) AddCritique(ctx context.Context, sessionID string, branch BranchID, thoughtNumber int, c Critique, author Author) (*CritiqueResult, error) {
	if strings.TrimSpace(c.Text) == "" {
		return nil, InvalidField("critique.text", "must not be empty")
	}
	if err := l.checkSize("critique.text", c.Text); err != nil {
		return nil, err
	}
	if c.Timestamp.IsZero() {
		c.Timestamp = l.now()
	}
	st, err := l.acquire(ctx, sessionID, false)
	if err != nil {
		return nil, err
	}
	defer st.mu.Unlock()
	unlock, err := l.lockSession(ctx, st.id)
	if err != nil {
		return nil, err
	}
	defer unlock()

	id := NodeID(st.id, branch, thoughtNumber)
	var out *CritiqueResult
	err = Retry(ctx, MaxAppendAttempts, noPause, func(attempt int) error {
		if attempt > 1 {
			// As in AddThought: at once (the session is locked), a
			// fresh view.
			if err := l.reloadLocked(ctx, st); err != nil {
				return err
			}
		}
		n := st.graph.nodes[id]
		if n == nil {
			return thoughtNotFound("thoughtNumber", "no thought %d on %s to critique", thoughtNumber, chainName(branch)).
				with("thoughtNumber", thoughtNumber)
		}
		commit, err := l.store.AddCritique(ctx, CritiqueRequest{
			Meta:          st.meta,
			Branch:        string(branch),
			ExpectedTip:   n.chain.tip,
			ThoughtNumber: thoughtNumber,
			Critique:      c,
			Author:        author,
		})
		if errors.Is(err, ErrThoughtNotFound) {
			// The view named the thought but the chain's tip does not hold
			// it: the view is not to be trusted, so the next use reloads.
			st.graph = nil
			return thoughtNotFound("thoughtNumber", "thought %d on %s is not in the stored chain (%v)", thoughtNumber, chainName(branch), err).
				with("thoughtNumber", thoughtNumber)
		}
		if err != nil {
			serr := storageError(fmt.Sprintf("add critique to thought %d on %s", thoughtNumber, chainName(branch)), err)
			if errors.Is(err, ErrConflict) {
				return Again(serr)
			}
			return serr
		}
		out = l.critiqueLocked(st, id, c, commit)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// critiqueLocked brings the view up to date with a committed critique: the
// node gets its critique and its chain the new tip. The node keeps the
// commit that recorded the thought, as a reload would map it.
func (l *Ledger) critiqueLocked(st *sessionState, id string, c Critique, commit CommitID) *CritiqueResult {
	if st.shared {
		st.graph = st.graph.clone()
		st.shared = false
	}
	n := st.graph.nodes[id]
	n.Data.Critique = &c
	n.chain.tip = commit
	l.touch(st.id, c.Timestamp)
	node := n.ThoughtNode
	l.publish(Event{Type: EventCritiqueAdded, SessionID: st.id, Timestamp: c.Timestamp, Node: &node,
		Data: map[string]any{"thoughtNumber": node.Data.ThoughtNumber, "branchId": string(node.Data.BranchID), "model": c.Model}})
	return &CritiqueResult{Node: n.ThoughtNode, Commit: commit}
}
