package ledger

import (
	"context"
	"errors"
)

// Pulled brings the ledger in line with sessions whose refs a pull (or any
// writer outside this ledger) moved, so that no view it holds goes stale.
// A session the ledger holds a view of is read again at once: its next
// View, listing and thought see what was pulled, and its next write
// numbers against the tip the pull left instead of failing its
// compare-and-swap first. The thoughts the reload found that the old view
// lacked are published as the ledger's own would be (thought_added,
// thought_revised, branch_created), in the order they were created, so an
// Observatory watching the session shows them. A session the ledger never
// read costs nothing here: only its search entry is dropped, to be read
// again at the next search.
//
// Critiques and metadata changes a pull brings are in the reloaded view but
// are not announced (their events carry no pulled counterpart), as with
// the Observatory's own following of other processes.
//
// It returns the first error met reloading; the sessions after it are
// still handled, and a session that failed to reload is dropped so that
// its next use reads it again.
func (l *Ledger) Pulled(ctx context.Context, ids ...string) error {
	var first error
	for _, id := range ids {
		l.index.forget(id)
		l.mu.Lock()
		st := l.sessions[id]
		l.mu.Unlock()
		if st == nil {
			continue
		}
		if err := l.pulledLocked(ctx, st); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (l *Ledger) pulledLocked(ctx context.Context, st *sessionState) error {
	// Waits for a write in progress on the session: the view it leaves is
	// the one compared with.
	st.mu.Lock()
	defer st.mu.Unlock()
	old := st.graph
	if st.dead || old == nil {
		return nil
	}
	if err := l.reloadLocked(ctx, st); err != nil {
		st.graph, st.shared = nil, false
		if errors.Is(err, ErrSessionNotFound) {
			return nil // gone since: its next use says so
		}
		return err
	}
	for i, n := range st.graph.order {
		if _, had := old.nodes[n.ID]; had {
			continue
		}
		e := thoughtEvent(st.id, n, plan{newBranch: n.chain.id != "" && n.pos == 0})
		e.ThoughtCount = i + 1
		l.publish(e)
	}
	return nil
}
