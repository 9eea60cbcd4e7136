package ledger

// The store keeps the index of sessions (gitstore keeps one on disk, and
// the same in memory for memory storage): listings and searches are
// answered without the ledger reading every session, by one engine for
// every storage.

import (
	"context"
	"errors"
	"strings"
	"time"
)

// SessionIndex is what a Store's SessionIndexer hands out so that a page
// of sessions, or a search, costs that page or that query rather than the
// whole ledger. The store checks its index against what it holds now on
// every call: a session it no longer holds is never answered, one that
// changed is read again.
type SessionIndex interface {
	// PageSessions returns the sessions from offset, at most limit of them,
	// most recently updated first (ties: smaller id first), and how many
	// sessions there are.
	PageSessions(ctx context.Context, offset, limit int) ([]SessionSummary, int, error)
	// FindSessions returns every session whose title, description, tags or
	// thoughts hold each of words (as SearchWords splits them), and how
	// many sessions it had to read to bring its index up to date.
	FindSessions(ctx context.Context, words []string) ([]IndexedMatch, int, error)
	// WarmIndex brings the index up to date, reading one session at a time
	// and calling pause before each (false stops it); it returns how many
	// sessions it read.
	WarmIndex(ctx context.Context, pause func() bool) (int, error)
}

// SessionIndexer is the part of a Store that hands out its SessionIndex,
// which must not be nil: the ledger lists and searches through it alone.
type SessionIndexer interface {
	SessionIndex() SessionIndex
}

// IndexedMatch is a session that holds every word of a search.
type IndexedMatch struct {
	Summary SessionSummary
	// Words holds, per word of the query in order, where it was found.
	Words []WordCount
}

// WordCount is where one word occurs in one session.
type WordCount struct {
	Title, Description, Tag bool
	// Thoughts counts the thoughts that contain the word.
	Thoughts int
}

// SearchWords splits text into the words search and its indexes use:
// lower-case runs of letters and digits, each once, in order.
func SearchWords(text string) []string { return searchTerms(text) }

// SessionWords returns, for each word of a stored session, where it
// occurs: what a store's search index keeps.
func SessionWords(s *StoredSession) map[string]WordCount {
	out := map[string]WordCount{}
	mark := func(text string, set func(*WordCount)) {
		for _, w := range searchTerms(text) {
			c := out[w]
			set(&c)
			out[w] = c
		}
	}
	mark(s.Meta.Title, func(c *WordCount) { c.Title = true })
	mark(s.Meta.Description, func(c *WordCount) { c.Description = true })
	for _, t := range s.Meta.Tags {
		mark(t, func(c *WordCount) { c.Tag = true })
	}
	count := func(ts []StoredThought) {
		for _, t := range ts {
			mark(t.Data.Thought, func(c *WordCount) { c.Thoughts++ })
		}
	}
	count(s.Main)
	for _, b := range s.Branches {
		count(b.Thoughts)
	}
	return out
}

// storeIndex is the store's SessionIndex.
func (l *Ledger) storeIndex() (SessionIndex, error) {
	if ix := l.store.SessionIndex(); ix != nil {
		return ix, nil
	}
	return nil, storageError("search sessions", errNoIndex)
}

// errNoIndex is a store that broke SessionIndexer's contract.
var errNoIndex = errors.New("the store has no session index")

// ListPage returns one page of sessions, most recently updated first
// (ties: smaller id first), and how many there are. It costs the page,
// not the ledger (the store's index).
func (l *Ledger) ListPage(ctx context.Context, offset, limit int) ([]Session, int, error) {
	if offset < 0 {
		return nil, 0, InvalidField("offset", "must be at least 0, got %d", offset)
	}
	if limit < 1 {
		return nil, 0, InvalidField("limit", "must be at least 1, got %d", limit)
	}
	ix, err := l.storeIndex()
	if err != nil {
		return nil, 0, err
	}
	sums, total, err := ix.PageSessions(ctx, offset, limit)
	if err != nil {
		return nil, 0, storageError("list sessions", err)
	}
	out := make([]Session, len(sums))
	at := l.accessLookup()
	for i, s := range sums {
		out[i] = session(s.Meta, s.ThoughtCount, s.BranchCount, at(s.Meta.ID))
	}
	return out, total, nil
}

// accessLookup returns when each session was last accessed, reading only
// the sessions asked for (AccessLookup), so that a page does not cost
// every session's access time.
func (l *Ledger) accessLookup() func(id string) time.Time {
	return func(id string) time.Time {
		l.mu.Lock()
		at := l.accessed[id]
		l.mu.Unlock()
		if t := l.store.AccessedAt(id); t.After(at) {
			at = t
		}
		return at
	}
}

// Sessions is FilterSessions over this ledger's sessions. Without a
// filter, in the default order, it asks for the page alone (ListPage).
func (l *Ledger) Sessions(ctx context.Context, f SessionFilter) (SessionPage, error) {
	n, err := f.normalize()
	if err != nil {
		return SessionPage{}, err
	}
	if len(n.Tags) == 0 && strings.TrimSpace(n.Search) == "" && strings.TrimSpace(n.Task) == "" &&
		n.SortBy == SortByUpdatedAt && n.SortOrder == SortDesc {
		page, total, err := l.ListPage(ctx, n.Offset, n.Limit)
		if err != nil {
			return SessionPage{}, err
		}
		return SessionPage{Sessions: page, Total: total, Offset: n.Offset, Limit: n.Limit, More: n.Offset+len(page) < total}, nil
	}
	all, err := l.List(ctx)
	if err != nil {
		return SessionPage{}, err
	}
	return FilterSessions(all, f)
}
