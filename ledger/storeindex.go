package ledger

// A store that keeps its own index of sessions (gitstore keeps one on
// disk) answers listings and searches without the ledger reading every
// session; the ledger's in-memory index (searchIndex) serves stores that
// do not (the memory store: its SessionIndex is nil).

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
)

// SessionIndex is what a Store's SessionIndexer may hand out so that a page of sessions, or a
// search, costs that page or that query rather than the whole ledger. The
// store checks its index against what it holds now on every call: a
// session it no longer holds is never answered, one that changed is read
// again.
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

// SessionIndexer is the part of a Store that says whether it has a
// SessionIndex: nil when it has none (gitstore has one on disk and none
// in memory), and the ledger then lists and searches its own in-memory
// index.
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

// storeIndex is the store's SessionIndex, or nil.
func (l *Ledger) storeIndex() SessionIndex { return l.store.SessionIndex() }

// ListPage returns one page of sessions, most recently updated first
// (ties: smaller id first), and how many there are. With a store that
// keeps an index it costs the page, not the ledger.
func (l *Ledger) ListPage(ctx context.Context, offset, limit int) ([]Session, int, error) {
	if offset < 0 {
		return nil, 0, InvalidField("offset", "must be at least 0, got %d", offset)
	}
	if limit < 1 {
		return nil, 0, InvalidField("limit", "must be at least 1, got %d", limit)
	}
	ix := l.storeIndex()
	if ix == nil {
		all, err := l.List(ctx)
		if err != nil {
			return nil, 0, err
		}
		page := all[min(offset, len(all)):]
		return page[:min(limit, len(page))], len(all), nil
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

// searchStore is Search over the store's index: the index finds and
// scores the sessions; only the page's hits are read, for their excerpts.
func (l *Ledger) searchStore(ctx context.Context, ix SessionIndex, q SearchQuery, page SessionFilter, words []string) (SearchResult, error) {
	matches, indexed, err := ix.FindSessions(ctx, words)
	if err != nil {
		return SearchResult{}, storageError("search sessions", err)
	}
	phrase := strings.ToLower(strings.TrimSpace(q.Query))
	type hit struct {
		SearchHit
		sum SessionSummary
	}
	hits := make([]hit, 0, len(matches))
	for _, m := range matches {
		hits = append(hits, hit{scoreMatch(m, words, phrase), m.Summary})
	}
	slices.SortFunc(hits, func(a, b hit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), b.sum.Meta.UpdatedAt.Compare(a.sum.Meta.UpdatedAt), strings.Compare(a.sum.Meta.ID, b.sum.Meta.ID))
	})
	res := SearchResult{Query: q.Query, Hits: []SearchHit{}, Total: len(hits), Indexed: indexed, Offset: page.Offset, Limit: page.Limit}
	if page.Offset < len(hits) {
		hits = hits[page.Offset:min(len(hits), page.Offset+page.Limit)]
	} else {
		hits = nil
	}
	res.More = page.Offset+len(hits) < res.Total
	accessed := l.accessLookup()
	for _, h := range hits {
		h.Session = session(h.sum.Meta, h.sum.ThoughtCount, h.sum.BranchCount, accessed(h.sum.Meta.ID))
		if h.Matched.Thoughts > 0 {
			// The excerpts quote the thoughts: read this hit's session
			// (from the ledger's view when it holds the current one).
			if d, err := l.readForIndex(ctx, h.sum); err == nil {
				h.Matched.Excerpts = d.excerpts(words)
			}
		}
		res.Hits = append(res.Hits, h.SearchHit)
	}
	return res, nil
}

// scoreMatch scores an indexed match as searchIndex.score does a doc.
func scoreMatch(m IndexedMatch, words []string, phrase string) SearchHit {
	var h SearchHit
	h.Session = Session{ID: m.Summary.Meta.ID}
	for i, c := range m.Words {
		if i >= len(words) {
			break
		}
		if c.Title {
			h.Score += weightTitle
			h.Matched.Title = true
		}
		if c.Tag {
			h.Score += weightTag
			for _, t := range m.Summary.Meta.Tags {
				if slices.Contains(searchTerms(t), words[i]) && !slices.Contains(h.Matched.Tags, t) {
					h.Matched.Tags = append(h.Matched.Tags, t)
				}
			}
		}
		if c.Description {
			h.Score += weightDescription
			h.Matched.Description = true
		}
		if c.Thoughts > 0 {
			h.Score += weightContent + weightMoreContent*float64(min(c.Thoughts, maxContentHits)-1)
			h.Matched.Thoughts = max(h.Matched.Thoughts, c.Thoughts)
		}
	}
	if len(words) > 1 && strings.Contains(strings.ToLower(m.Summary.Meta.Title), phrase) {
		h.Score += weightPhrase
	}
	h.Score = round4(h.Score)
	return h
}

// warmStore is WarmSearchIndex over the store's index: one session at a
// time, giving way to this ledger's writers and resting as long as it
// worked, as the in-memory warm-up does.
func (l *Ledger) warmStore(ctx context.Context, ix SessionIndex) (int, error) {
	var last time.Time
	return ix.WarmIndex(ctx, func() bool {
		if !last.IsZero() {
			rest := time.NewTimer(time.Since(last))
			select {
			case <-ctx.Done():
				rest.Stop()
				return false
			case <-rest.C:
			}
		}
		if !l.giveWay(ctx) {
			return false
		}
		last = time.Now()
		return true
	})
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
