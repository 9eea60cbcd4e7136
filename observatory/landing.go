package observatory

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// DefaultLiveWindow is Config.LiveWindow's default.
const DefaultLiveWindow = 5 * time.Minute

// Bounds of what the page's own endpoints read, so that their cost is the
// page's, not the ledger's: the per-day counts read the session index
// back to landingDays ago and at most landingScan entries of it; a
// filtered session list reads at most scanLimit sessions per request.
const (
	landingDays    = 14
	landingScan    = 5000
	landingLatest  = 8
	landingWriters = 20
	scanLimit      = 500
	indexPage      = 100
	// landingPage is larger than a list's page: each call to the index
	// has a fixed cost (it checks its records against the refs), so the
	// landing's scan makes few calls.
	landingPage = 1000
)

// Landing is what the page shows when no session is chosen (GET
// /ui/landing).
type Landing struct {
	// LiveWindowSeconds is Config.LiveWindow: a session written to within
	// it counts as live.
	LiveWindowSeconds int `json:"liveWindowSeconds"`
	// Writers are the sessions written to within the live window, with
	// the author of their latest thought, most recent first.
	Writers []Writer `json:"writers"`
	// Latest is the latest thought of each of the most recently updated
	// sessions, newest first.
	Latest []LatestThought `json:"latest"`
	// PerDay counts the sessions started on each of the last landingDays
	// days (UTC), oldest first. Partial says the index scan stopped at its
	// bound before the first of those days, so the earliest counts are low.
	PerDay  []DayCount `json:"perDay"`
	Partial bool       `json:"partial,omitempty"`
}

// Writer is a session being written to, and by whom.
type Writer struct {
	SessionID    string    `json:"sessionId"`
	Title        string    `json:"title"`
	Author       string    `json:"author"`
	ThoughtCount int       `json:"thoughtCount"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

// LatestThought is a session's latest thought.
type LatestThought struct {
	SessionID     string    `json:"sessionId"`
	Title         string    `json:"title"`
	NodeID        string    `json:"nodeId"`
	ThoughtNumber int       `json:"thoughtNumber"`
	Thought       string    `json:"thought"`
	Author        string    `json:"author"`
	Timestamp     time.Time `json:"timestamp"`
}

// DayCount is the number of sessions started on a day (YYYY-MM-DD, UTC).
type DayCount struct {
	Day      string `json:"day"`
	Sessions int    `json:"sessions"`
}

// SessionRow is a row of the page's session list: the session and the
// author of its latest thought.
type SessionRow struct {
	Session
	Author string `json:"author"`
}

// SessionRows is a page of the session list (GET /ui/sessions). Next is
// the offset to ask for the following page: with a status or author
// filter a page reads past sessions it does not keep, so Next can be
// further on than Offset plus the rows returned.
type SessionRows struct {
	Sessions []SessionRow `json:"sessions"`
	Total    int          `json:"total"`
	Offset   int          `json:"offset"`
	Next     int          `json:"next"`
	HasMore  bool         `json:"hasMore"`
}

// uiData serves the page's own endpoints. It remembers, per session, its
// status and latest author for as long as the session's listing entry
// (updatedAt, thoughtCount) stays the same.
type uiData struct {
	o  *Observatory
	mu sync.Mutex // guards rows
	// rows caches rowOf by session id.
	rows map[string]cachedRow
}

type cachedRow struct {
	updated time.Time
	count   int
	row     SessionRow
	last    *ledger.ThoughtNode
}

// registerUI adds the page's endpoints to mux. They are always served
// (the page needs them), behind the same token and origin checks as the
// API.
func (o *Observatory) registerUI(mux *http.ServeMux) {
	u := &uiData{o: o, rows: map[string]cachedRow{}}
	mux.HandleFunc("GET /ui/landing", o.api(u.serveLanding))
	mux.HandleFunc("GET /ui/sessions", o.api(u.serveSessions))
}

func (o *Observatory) liveWindow() time.Duration {
	if o.cfg.LiveWindow > 0 {
		return o.cfg.LiveWindow
	}
	return DefaultLiveWindow
}

func (u *uiData) serveLanding(_ http.ResponseWriter, r *http.Request) (any, error) {
	return u.landing(r.Context())
}

// landing reads the index from the most recently updated session back to
// the start of the period (or landingScan entries), and loads only the
// few sessions it shows a thought or a writer of.
func (u *uiData) landing(ctx context.Context) (Landing, error) {
	now := u.o.now().UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	start := today.AddDate(0, 0, -(landingDays - 1))
	live := u.o.liveWindow()
	out := Landing{LiveWindowSeconds: int(live / time.Second), Writers: []Writer{}, Latest: []LatestThought{}}
	counts := map[string]int{}
	var recent []ledger.Session
	scanned := 0
	for offset := 0; ; offset += landingPage {
		page, total, err := u.o.ledger.ListPage(ctx, offset, landingPage)
		if err != nil {
			return Landing{}, err
		}
		done := len(page) == 0 || offset+len(page) >= total
		for _, s := range page {
			scanned++
			if s.UpdatedAt.Before(start) {
				done = true
				break
			}
			if !s.CreatedAt.Before(start) {
				counts[s.CreatedAt.UTC().Format(time.DateOnly)]++
			}
			if s.ThoughtCount > 0 && (len(recent) < landingLatest || now.Sub(s.UpdatedAt) <= live && len(recent) < landingWriters) {
				recent = append(recent, s)
			}
		}
		if done {
			break
		}
		if scanned >= landingScan {
			out.Partial = true
			break
		}
	}
	for d := start; !d.After(today); d = d.AddDate(0, 0, 1) {
		k := d.Format(time.DateOnly)
		out.PerDay = append(out.PerDay, DayCount{Day: k, Sessions: counts[k]})
	}
	for _, s := range recent {
		row, last, err := u.rowOf(ctx, s)
		if err != nil {
			if ledger.CodeOf(err) == ledger.CodeSessionNotFound {
				continue // removed since the listing
			}
			return Landing{}, err
		}
		if now.Sub(s.UpdatedAt) <= live {
			out.Writers = append(out.Writers, Writer{SessionID: s.ID, Title: s.Title, Author: row.Author, ThoughtCount: s.ThoughtCount, UpdatedAt: s.UpdatedAt})
		}
		if last != nil && len(out.Latest) < landingLatest {
			out.Latest = append(out.Latest, LatestThought{SessionID: s.ID, Title: s.Title, NodeID: last.ID,
				ThoughtNumber: last.Data.ThoughtNumber, Thought: last.Data.Thought, Author: row.Author, Timestamp: last.Data.Timestamp})
		}
	}
	return out, nil
}

// rowOf gives a session's status and the author of its latest thought,
// reading the session only when its listing entry changed since the last
// time.
func (u *uiData) rowOf(ctx context.Context, s ledger.Session) (SessionRow, *ledger.ThoughtNode, error) {
	u.mu.Lock()
	c, ok := u.rows[s.ID]
	u.mu.Unlock()
	if ok && c.updated.Equal(s.UpdatedAt) && c.count == s.ThoughtCount {
		c.row.Session.Status, c.row.Session.CompletedAt = u.status(c.last, s.UpdatedAt)
		return c.row, c.last, nil
	}
	v, err := u.o.ledger.View(ctx, s.ID)
	if err == nil && (!v.Session.UpdatedAt.Equal(s.UpdatedAt) || v.Session.ThoughtCount != s.ThoughtCount) {
		// Another process wrote to it since this ledger read it.
		v, err = u.o.ledger.Load(ctx, s.ID)
	}
	if err != nil {
		return SessionRow{}, nil, err
	}
	c = cachedRow{updated: s.UpdatedAt, count: s.ThoughtCount}
	if last, ok := v.Graph.Last(); ok {
		c.last = &last
		if u.o.cfg.Authors != nil && last.Commit() != "" {
			if a, _, err := u.o.cfg.Authors.CommitAuthor(ctx, last.Commit()); err == nil {
				c.row.Author = a.Name
			}
		}
	}
	status, at := u.status(c.last, s.UpdatedAt)
	c.row.Session = sessionOf(s, status, at)
	u.mu.Lock()
	u.rows[s.ID] = c
	u.mu.Unlock()
	return c.row, c.last, nil
}

// status is the ledger's rule (Graph.Status) from the latest thought: the
// time passes, so it is worked out at each request.
func (u *uiData) status(last *ledger.ThoughtNode, updated time.Time) (Status, *time.Time) {
	if last != nil && !last.Data.NextThoughtNeeded {
		at := last.Data.Timestamp
		return StatusCompleted, &at
	}
	if u.o.now().Sub(updated) > u.o.cfg.AbandonAfter {
		return StatusAbandoned, nil
	}
	return StatusActive, nil
}

// serveSessions pages the session list: tag and search go to the
// session index; status and author are checked on the sessions read,
// at most scanLimit of them per request.
func (u *uiData) serveSessions(_ http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	f := ledger.SessionFilter{Search: q.Get("search"), Limit: 50}
	for _, t := range q["tag"] {
		for _, s := range strings.Split(t, ",") {
			if s = strings.TrimSpace(s); s != "" {
				f.Tags = append(f.Tags, s)
			}
		}
	}
	for _, p := range []struct {
		name string
		dst  *int
	}{{"limit", &f.Limit}, {"offset", &f.Offset}} {
		if s := q.Get(p.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				return nil, ledger.InvalidField(p.name, "must be a whole number, got %q", s)
			}
			*p.dst = n
		}
	}
	status := Status(q.Get("status"))
	switch status {
	case "", StatusActive, StatusCompleted, StatusAbandoned:
	default:
		return nil, ledger.InvalidField("status", "must be active, completed or abandoned, got %q", string(status))
	}
	return u.sessions(r.Context(), f, status, strings.ToLower(strings.TrimSpace(q.Get("author"))))
}

func (u *uiData) sessions(ctx context.Context, f ledger.SessionFilter, status Status, author string) (SessionRows, error) {
	want := f.Limit
	if want < 1 || want > ledger.MaxListLimit {
		return SessionRows{}, ledger.InvalidField("limit", "must be from 1 to %d, got %d", ledger.MaxListLimit, want)
	}
	if f.Offset < 0 {
		return SessionRows{}, ledger.InvalidField("offset", "must be at least 0, got %d", f.Offset)
	}
	out := SessionRows{Sessions: []SessionRow{}, Offset: f.Offset, Next: f.Offset}
	filtered := status != "" || author != ""
	if filtered {
		f.Limit = indexPage
	}
	for read := 0; len(out.Sessions) < want && (!filtered || read < scanLimit); {
		page, err := u.o.ledger.Sessions(ctx, f)
		if err != nil {
			return SessionRows{}, err
		}
		out.Total = page.Total
		for _, s := range page.Sessions {
			if len(out.Sessions) == want {
				break
			}
			out.Next++
			read++
			row, _, err := u.rowOf(ctx, s)
			if ledger.CodeOf(err) == ledger.CodeSessionNotFound {
				continue
			}
			if err != nil {
				return SessionRows{}, err
			}
			if (status == "" || row.Status == status) && (author == "" || strings.Contains(strings.ToLower(row.Author), author)) {
				out.Sessions = append(out.Sessions, row)
			}
		}
		if !page.More || len(page.Sessions) == 0 {
			break
		}
		f.Offset = out.Next
	}
	out.HasMore = out.Next < out.Total
	return out, nil
}
