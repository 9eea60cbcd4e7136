package ledger

// Finding sessions: SessionFilter (seed 002) over the session summaries, and
// ranked search over titles, tags and thought content. Which sessions hold
// which words is the store's index (SessionIndex, one engine for every
// storage); the ledger scores and ranks what it finds and quotes the hits
// on the page, so that searching 10,000 sessions costs the query's words
// rather than 10,000 loads.

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Limits of SessionFilter and SearchQuery.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// SessionFilter is seed 002's SessionFilter, plus Task.
type SessionFilter struct {
	// Tags keeps the sessions that have every one of these tags (AND),
	// ignoring case.
	Tags []string `json:"tags,omitempty"`
	// Search keeps the sessions whose title or description contains every
	// word of it, ignoring case.
	Search string `json:"search,omitempty"`
	// Task keeps the sessions whose title, description or tags contain
	// every word of it, ignoring case: sessions do not record the task they
	// served, so the task is matched against what describes them.
	Task string `json:"task,omitempty"`
	// Limit is 1 to MaxListLimit; 0 means DefaultListLimit.
	Limit  int `json:"limit,omitempty"`
	Offset int `json:"offset,omitempty"`
	// SortBy is createdAt, updatedAt (the default) or title.
	SortBy string `json:"sortBy,omitempty"`
	// SortOrder is asc or desc (the default).
	SortOrder string `json:"sortOrder,omitempty"`
}

// normalize fills the defaults and checks the ranges; errors name the
// field.
func (f SessionFilter) normalize() (SessionFilter, error) {
	err := normalizeListing(&f.Limit, &f.Offset, &f.SortBy, &f.SortOrder, DefaultListLimit, MaxListLimit)
	return f, err
}

// SessionPage is one page of a filtered listing.
type SessionPage struct {
	Sessions []Session `json:"sessions"`
	// Total is the number of sessions that passed the filter, before
	// paging.
	Total  int  `json:"total"`
	Offset int  `json:"offset"`
	Limit  int  `json:"limit"`
	More   bool `json:"hasMore"`
}

// FilterSessions applies a filter to a list of sessions: it keeps the
// matches, sorts them (ties broken by id, so pages are stable) and cuts
// the page.
func FilterSessions(all []Session, f SessionFilter) (SessionPage, error) {
	f, err := f.normalize()
	if err != nil {
		return SessionPage{}, err
	}
	search, task := searchTerms(f.Search), searchTerms(f.Task)
	var keep []Session
	for _, s := range all {
		if hasEveryTag(s.Tags, f.Tags) &&
			containsWords(search, s.Title, s.Description) &&
			containsWords(task, append([]string{s.Title, s.Description}, s.Tags...)...) {
			keep = append(keep, s)
		}
	}
	slices.SortFunc(keep, func(a, b Session) int {
		var c int
		switch f.SortBy {
		case SortByCreatedAt:
			c = a.CreatedAt.Compare(b.CreatedAt)
		case SortByTitle:
			c = cmp.Or(strings.Compare(strings.ToLower(a.Title), strings.ToLower(b.Title)), strings.Compare(a.Title, b.Title))
		default:
			c = a.UpdatedAt.Compare(b.UpdatedAt)
		}
		if f.SortOrder == "desc" {
			c = -c
		}
		return cmp.Or(c, strings.Compare(a.ID, b.ID))
	})
	p := SessionPage{Sessions: []Session{}, Total: len(keep), Offset: f.Offset, Limit: f.Limit}
	if f.Offset < len(keep) {
		end := min(len(keep), f.Offset+f.Limit)
		p.Sessions = keep[f.Offset:end]
		p.More = end < len(keep)
	}
	return p, nil
}

func hasEveryTag(have, want []string) bool {
	for _, w := range want {
		if !slices.ContainsFunc(have, func(h string) bool { return strings.EqualFold(h, w) }) {
			return false
		}
	}
	return true
}

// containsWords reports whether every word occurs in one of the texts,
// ignoring case.
func containsWords(words []string, texts ...string) bool {
	if len(words) == 0 {
		return true
	}
	lower := make([]string, len(texts))
	for i, t := range texts {
		lower[i] = strings.ToLower(t)
	}
	for _, w := range words {
		if !slices.ContainsFunc(lower, func(t string) bool { return strings.Contains(t, w) }) {
			return false
		}
	}
	return true
}

// searchTerms splits text into lower-case words: runs of letters and
// digits, each word once, in order of appearance.
func searchTerms(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// SearchQuery is a ranked search over sessions.
type SearchQuery struct {
	Query string
	// Limit is 1 to MaxListLimit; 0 means DefaultListLimit.
	Limit  int
	Offset int
}

// SearchHit is one session that matched a search.
type SearchHit struct {
	Session Session `json:"session"`
	Score   float64 `json:"score"`
	// Matched tells where the words were found.
	Matched SearchMatch `json:"matched"`
}

// SearchMatch says where a session matched.
type SearchMatch struct {
	Title       bool     `json:"title"`
	Description bool     `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	// Thoughts counts the thoughts that contain a query word; Excerpts
	// quotes the first few.
	Thoughts int            `json:"thoughts"`
	Excerpts []ThoughtQuote `json:"excerpts,omitempty"`
}

// ThoughtQuote is a line of a thought that matched a search.
type ThoughtQuote struct {
	NodeID        string   `json:"nodeId"`
	ThoughtNumber int      `json:"thoughtNumber"`
	BranchID      BranchID `json:"branchId,omitempty"`
	Text          string   `json:"text"`
}

// SearchResult is a page of search hits, best first.
type SearchResult struct {
	Query string      `json:"query"`
	Hits  []SearchHit `json:"hits"`
	Total int         `json:"total"`
	// Offset and Limit are the page the hits are; More says hits are left
	// after it.
	Offset int  `json:"offset"`
	Limit  int  `json:"limit"`
	More   bool `json:"hasMore"`
	// Indexed is the number of sessions whose content the store's index
	// (re)read for this search: those it had not seen at their current
	// refs, this process's own writes since the last search included; 0
	// once the index is warm and nothing was written.
	Indexed int `json:"indexed"`
}

// Weights of the search score.
const (
	weightTitle       = 3.0
	weightTag         = 2.0
	weightDescription = 1.0
	weightContent     = 1.0 // for the first thought that has the word
	weightMoreContent = 0.1 // for each further one, up to maxContentHits
	maxContentHits    = 10
	weightPhrase      = 2.0 // the whole query, as written, in the title
	maxExcerpts       = 3
)

// Search finds the sessions whose title, description, tags or thoughts
// contain every word of the query (words are runs of letters and digits,
// compared whole and ignoring case) and ranks them. A session's score is
// the sum, over the query's words, of 3 if the title has the word, 2 if a
// tag does, 1 if the description does, and 1 + 0.1 for each further thought
// (up to ten) that does; plus 2 if the title contains the whole query. Ties
// go to the most recently updated session, then the smaller id.
//
// The store's index finds the sessions and where each word is; it reads a
// session again when its refs moved since it last did (which the first
// search does for every session). Only the hits on the page are read, for
// their excerpts.
func (l *Ledger) Search(ctx context.Context, q SearchQuery) (SearchResult, error) {
	page, err := SessionFilter{Limit: q.Limit, Offset: q.Offset}.normalize()
	if err != nil {
		return SearchResult{}, err
	}
	words := searchTerms(q.Query)
	if len(words) == 0 {
		return SearchResult{}, InvalidField("query", "must contain at least one letter or digit")
	}
	ix, err := l.storeIndex()
	if err != nil {
		return SearchResult{}, err
	}
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
			if ts, err := l.thoughtsOf(ctx, h.sum); err == nil {
				h.Matched.Excerpts = excerpts(ts, words)
			}
		}
		res.Hits = append(res.Hits, h.SearchHit)
	}
	return res, nil
}

// scoreMatch scores one session the index found (see Search).
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

// IndexSessions brings the store's search index up to date — reads every
// session it has not seen at its current refs — and returns how many it
// read. Search does the same on its own; a server calls WarmSearchIndex in
// the background when it starts, so that its first search does not pay
// for reading every session.
func (l *Ledger) IndexSessions(ctx context.Context) (int, error) {
	ix, err := l.storeIndex()
	if err != nil {
		return 0, err
	}
	n, err := ix.WarmIndex(ctx, func() bool { return ctx.Err() == nil })
	if err != nil {
		return n, storageError("index sessions", err)
	}
	return n, nil
}

// WarmSearchIndex is IndexSessions for a server's background: one session
// at a time, pausing while this ledger is being written to and resting as
// long as it worked, so that a large ledger's warm-up never slows the
// agents writing (a first search before it ends reads the rest at full
// speed).
func (l *Ledger) WarmSearchIndex(ctx context.Context) (int, error) {
	// Not in the way of the server's start and its first calls.
	t := time.NewTimer(warmDelay)
	select {
	case <-ctx.Done():
		t.Stop()
		return 0, ctx.Err()
	case <-t.C:
	}
	ix, err := l.storeIndex()
	if err != nil {
		return 0, err
	}
	var last time.Time
	return ix.WarmIndex(ctx, func() bool {
		if !last.IsZero() {
			// At most half of one processor.
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

// warmQuiet is how long after a write the background warm-up waits;
// warmDelay is how long after the start it begins.
const (
	warmQuiet = 100 * time.Millisecond
	warmDelay = 2 * time.Second
)

// giveWay waits, in the background warm-up, until no write happened for
// warmQuiet; false when ctx ended.
func (l *Ledger) giveWay(ctx context.Context) bool {
	for {
		since := time.Since(time.Unix(0, l.lastWrite.Load()))
		if since >= warmQuiet {
			return ctx.Err() == nil
		}
		t := time.NewTimer(warmQuiet - since)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// quotable is one thought as excerpts quote it.
type quotable struct {
	node   string
	number int
	branch BranchID
	text   string
}

// thoughtsOf reads a hit's thoughts for its excerpts: from the ledger's
// view if it holds the session at the version found, else straight from
// the store, so that a search does not fill the ledger's cache.
func (l *Ledger) thoughtsOf(ctx context.Context, s SessionSummary) ([]quotable, error) {
	id := s.Meta.ID
	l.mu.Lock()
	st := l.sessions[id]
	l.mu.Unlock()
	if st != nil {
		st.mu.Lock()
		g := st.graph
		// The view may be older than the summary if another process
		// wrote since; then only the store has the current version.
		if g != nil && (!st.meta.UpdatedAt.Equal(s.Meta.UpdatedAt) || g.Len() != s.ThoughtCount) {
			g = nil
		}
		if g != nil {
			st.shared = true // g is read below, outside the lock
		}
		st.mu.Unlock()
		if g != nil {
			out := make([]quotable, 0, g.Len())
			for _, n := range g.order {
				out = append(out, quotable{n.ID, n.Data.ThoughtNumber, n.BranchID, n.Data.Thought})
			}
			return out, nil
		}
	}
	stored, err := l.store.LoadSession(ctx, id)
	if err != nil {
		return nil, l.loadError(id, "search", err)
	}
	var out []quotable
	for _, t := range stored.Main {
		out = append(out, quotable{NodeID(id, "", t.Data.ThoughtNumber), t.Data.ThoughtNumber, "", t.Data.Thought})
	}
	for _, b := range stored.Branches {
		for _, t := range b.Thoughts {
			out = append(out, quotable{NodeID(id, BranchID(b.ID), t.Data.ThoughtNumber), t.Data.ThoughtNumber, BranchID(b.ID), t.Data.Thought})
		}
	}
	return out, nil
}

// excerpts quotes the first thoughts that contain a query word: the first
// line with one, cut to a readable length.
func excerpts(ts []quotable, words []string) []ThoughtQuote {
	var out []ThoughtQuote
	for _, t := range ts {
		if len(out) == maxExcerpts {
			break
		}
		terms := wordSet(t.text)
		if !slices.ContainsFunc(words, func(w string) bool { return terms[w] }) {
			continue
		}
		line := ""
		for l := range strings.SplitSeq(t.text, "\n") {
			lw := wordSet(l)
			if slices.ContainsFunc(words, func(w string) bool { return lw[w] }) {
				line = strings.TrimSpace(l)
				break
			}
		}
		if len([]rune(line)) > maxGist {
			line = string([]rune(line)[:maxGist-1]) + "…"
		}
		out = append(out, ThoughtQuote{NodeID: t.node, ThoughtNumber: t.number, BranchID: t.branch, Text: line})
	}
	return out
}
