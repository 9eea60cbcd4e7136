package observatory

import (
	"context"
	"strings"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// listQuery is the payload of list:sessions and the query of GET
// /api/sessions.
type listQuery struct {
	Status string   `json:"status,omitempty"`
	Tags   []string `json:"tags,omitempty"`
	Search string   `json:"search,omitempty"`
	Limit  int      `json:"limit,omitempty"`
	Offset int      `json:"offset,omitempty"`
}

// SessionList is the payload of sessions:list and of GET /api/sessions.
type SessionList struct {
	Sessions []Session `json:"sessions"`
	Total    int       `json:"total"`
	Limit    int       `json:"limit"`
	Offset   int       `json:"offset"`
	HasMore  bool      `json:"hasMore"`
}

// allSessions lists every session of the ledger with its status. A
// session's completion needs its last thought, so a session is read once
// and then again only when the listing shows it changed.
func (o *Observatory) allSessions(ctx context.Context) ([]ledger.Session, map[string]Session, error) {
	list, err := o.ledger.List(ctx)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string]Session, len(list))
	for _, s := range list {
		obs, ok, err := o.sessionStatus(ctx, s)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			out[s.ID] = obs
		}
	}
	return list, out, nil
}

// sessionStatus gives a listed session with its status, reading the
// session only when its listing entry changed since it was last read; ok
// is false when it was removed since the listing.
func (o *Observatory) sessionStatus(ctx context.Context, s ledger.Session) (Session, bool, error) {
	o.statuses.mu.Lock()
	e, ok := o.statuses.m[s.ID]
	o.statuses.mu.Unlock()
	if !ok || !e.updated.Equal(s.UpdatedAt) || e.count != s.ThoughtCount {
		v, err := o.ledger.View(ctx, s.ID)
		if err == nil && (!v.Session.UpdatedAt.Equal(s.UpdatedAt) || v.Session.ThoughtCount != s.ThoughtCount) {
			// Another process wrote to it since this ledger read it.
			v, err = o.ledger.Load(ctx, s.ID)
		}
		if err != nil {
			if ledger.CodeOf(err) == ledger.CodeSessionNotFound {
				return Session{}, false, nil
			}
			return Session{}, false, err
		}
		e = statusEntry{updated: s.UpdatedAt, count: s.ThoughtCount}
		if last, ok := v.Graph.Last(); ok && !last.Data.NextThoughtNeeded {
			e.completed, e.completedAt = true, last.Data.Timestamp
		}
		o.statuses.mu.Lock()
		o.statuses.m[s.ID] = e
		o.statuses.mu.Unlock()
	}
	status := StatusActive
	switch {
	case e.completed:
		status = StatusCompleted
	case o.now().Sub(s.UpdatedAt) > o.cfg.AbandonAfter:
		status = StatusAbandoned
	}
	obs := sessionOf(s, status, nil)
	if e.completed {
		completedAt := e.completedAt
		obs.CompletedAt = &completedAt
	}
	return obs, true, nil
}

// activeSessions lists the active sessions, most recently updated first.
// It reads the session index newest first and stops at the first session
// too old to be active, at maxActive of them, or after activeScan
// sessions: joining costs the same with a hundred sessions or a hundred
// thousand.
func (o *Observatory) activeSessions(ctx context.Context) ([]Session, error) {
	out := []Session{}
	now := o.now()
	for offset, scanned := 0, 0; len(out) < maxActive && scanned < activeScan; offset += indexPage {
		page, total, err := o.ledger.ListPage(ctx, offset, indexPage)
		if err != nil {
			return nil, err
		}
		for _, s := range page {
			if now.Sub(s.UpdatedAt) > o.cfg.AbandonAfter {
				return out, nil // the rest are older still
			}
			scanned++
			obs, ok, err := o.sessionStatus(ctx, s)
			if err != nil {
				return nil, err
			}
			if ok && obs.Status == StatusActive {
				out = append(out, obs)
			}
			if len(out) == maxActive || scanned == activeScan {
				break
			}
		}
		if len(page) == 0 || offset+len(page) >= total {
			break
		}
	}
	return out, nil
}

// listSessions filters and pages the sessions; status, tags and search
// narrow the list, most recently updated first.
func (o *Observatory) listSessions(ctx context.Context, q listQuery) (SessionList, error) {
	switch Status(q.Status) {
	case "", StatusActive, StatusCompleted, StatusAbandoned:
	default:
		return SessionList{}, ledger.InvalidField("status", "must be active, completed or abandoned, got %q", q.Status)
	}
	if q.Status == "" {
		return o.pageSessions(ctx, ledger.SessionFilter{Tags: q.Tags, Search: q.Search, Limit: q.Limit, Offset: q.Offset})
	}
	// A status needs each session's last thought: the first such listing
	// reads every session (later ones only those that changed).
	list, all, err := o.allSessions(ctx)
	if err != nil {
		return SessionList{}, err
	}
	keep := make([]ledger.Session, 0, len(list))
	for _, s := range list {
		if obs, ok := all[s.ID]; ok && (q.Status == "" || string(obs.Status) == q.Status) {
			keep = append(keep, s)
		}
	}
	page, err := ledger.FilterSessions(keep, ledger.SessionFilter{Tags: q.Tags, Search: q.Search, Limit: q.Limit, Offset: q.Offset})
	if err != nil {
		return SessionList{}, err
	}
	out := SessionList{Sessions: make([]Session, 0, len(page.Sessions)), Total: page.Total, Limit: page.Limit, Offset: page.Offset, HasMore: page.More}
	for _, s := range page.Sessions {
		out.Sessions = append(out.Sessions, all[s.ID])
	}
	return out, nil
}

// pageSessions is listSessions without a status: the session index pages
// and filters, and only the sessions of the page are read for their
// status, so a page costs the same in a ledger of any size.
func (o *Observatory) pageSessions(ctx context.Context, f ledger.SessionFilter) (SessionList, error) {
	page, err := o.ledger.Sessions(ctx, f)
	if err != nil {
		return SessionList{}, err
	}
	out := SessionList{Sessions: make([]Session, 0, len(page.Sessions)), Total: page.Total, Limit: page.Limit, Offset: page.Offset, HasMore: page.More}
	for _, s := range page.Sessions {
		obs, ok, err := o.sessionStatus(ctx, s)
		if err != nil {
			return SessionList{}, err
		}
		if ok {
			out.Sessions = append(out.Sessions, obs)
		}
	}
	return out, nil
}

// snapshot reads a session afresh from the ledger's store.
func (o *Observatory) snapshot(ctx context.Context, id string) (Snapshot, *ledger.SessionView, error) {
	v, err := o.ledger.Load(ctx, id)
	if err != nil {
		return Snapshot{}, nil, err
	}
	return snapshotOf(v, o.now(), o.cfg.AbandonAfter), v, nil
}

// detail gives a thought's commit, its author and critique.
func (o *Observatory) detail(ctx context.Context, topic, nodeID string) (ThoughtDetail, error) {
	sessionID, ok := strings.CutPrefix(topic, TopicReasoningPrefix)
	if !ok || sessionID == "" {
		return ThoughtDetail{}, ledger.InvalidField("topic", "thought:detail is asked on reasoning:<sessionId>, got %q", topic)
	}
	v, err := o.ledger.View(ctx, sessionID)
	if err != nil {
		return ThoughtDetail{}, err
	}
	n, ok := v.Graph.Node(nodeID)
	if !ok {
		// The view may predate a thought another process wrote.
		if v, err = o.ledger.Load(ctx, sessionID); err != nil {
			return ThoughtDetail{}, err
		}
		if n, ok = v.Graph.Node(nodeID); !ok {
			e := ledger.Errorf(ledger.CodeThoughtNotFound, "no thought %q in session %s", nodeID, sessionID)
			e.Details = map[string]any{"thoughtId": nodeID}
			return ThoughtDetail{}, e
		}
	}
	d := ThoughtDetail{ID: n.ID, Commit: string(n.Commit()), Critique: n.Data.Critique}
	if o.cfg.Authors != nil && n.Commit() != "" {
		a, when, err := o.cfg.Authors.CommitAuthor(ctx, n.Commit())
		if err != nil {
			return ThoughtDetail{}, ledger.Errorf(ledger.CodeStorage, "read commit %s: %v", n.Commit(), err)
		}
		d.Author, d.AuthorEmail, d.CommittedAt = a.Name, a.Email, when
	}
	return d, nil
}
