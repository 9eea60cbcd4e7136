package ledger

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// PulledSessions names the sessions a pull changed here: New are those it
// created (this ledger had none of their refs), Moved those whose refs it
// moved forward.
type PulledSessions struct {
	New   []string
	Moved []string
}

// Pulling tells the ledger that a pull is about to move refs in its store;
// the returned function, called once Pulled has run (or the pull failed),
// says it is over. In between, View answers from the store itself, not
// from the views the ledger holds: the pull moves a session's refs before
// Pulled reloads its view, and a listing made in that window (it reads the
// refs) would otherwise show thoughts that a read of the same session did
// not. The views themselves are left for Pulled, which compares them with
// what the pull brought to announce it.
func (l *Ledger) Pulling() (done func()) {
	l.pulling.Add(1)
	var once sync.Once
	return func() { once.Do(func() { l.pulling.Add(-1) }) }
}

// viewFromStore is View without the ledger's held view: the session as the
// store has it now, left out of the ledger's views.
func (l *Ledger) viewFromStore(ctx context.Context, id string) (*SessionView, error) {
	if id == "" {
		return nil, InvalidField("sessionId", "must not be empty")
	}
	st := &sessionState{id: id}
	if err := l.reloadLocked(ctx, st); err != nil {
		return nil, err
	}
	return l.viewLocked(st), nil
}

// Pulled brings the ledger in line with sessions whose refs a pull (or any
// writer outside this ledger) created or moved, so that no view it holds
// goes stale. A session the ledger holds a view of is read again at once:
// its next View, listing and thought see what was pulled, and its next
// write numbers against the tip the pull left instead of failing its
// compare-and-swap first. The thoughts the reload found that the old view
// lacked are published as the ledger's own would be (thought_added,
// thought_revised, branch_created), in the order they were created, and
// each new session gets a session_started, so that an Observatory shows
// the team's work as it arrives. A moved session the ledger never read
// costs nothing here: the store's index reads it again at the next search,
// its refs having moved.
//
// Critiques and metadata changes a pull brings are in the reloaded view but
// are not announced, as with the Observatory's own following of other
// processes.
//
// It returns the first error met; the sessions after it are still handled,
// and a session that failed to reload is dropped so that its next use
// reads it again.
func (l *Ledger) Pulled(ctx context.Context, p PulledSessions) error {
	var first error
	for _, id := range slices.Concat(p.New, p.Moved) {
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
	if len(p.New) > 0 && l.events != nil {
		if err := l.announceNew(ctx, p.New); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// announceNew publishes session_started for sessions a pull created, from
// one listing (a pull that creates sessions is rare; a clone of thousands
// costs one listing, not a load each).
func (l *Ledger) announceNew(ctx context.Context, ids []string) error {
	sums, err := l.store.ListSessions(ctx)
	if err != nil {
		return storageError("list sessions", err)
	}
	byID := make(map[string]SessionMeta, len(sums))
	for _, s := range sums {
		byID[s.Meta.ID] = s.Meta
	}
	for _, id := range ids {
		m, ok := byID[id]
		if !ok {
			continue // deleted or quarantined meanwhile
		}
		tags := m.Tags
		if tags == nil {
			tags = []string{}
		}
		l.publish(Event{Type: EventSessionStarted, SessionID: id, Timestamp: m.CreatedAt, Data: map[string]any{
			"sessionId": id, "title": m.Title, "tags": slices.Clone(tags),
		}})
	}
	return nil
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
