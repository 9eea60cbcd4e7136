package ledger

// Finding sessions: SessionFilter (seed 002) over the session summaries, and
// ranked search over titles, tags and thought content. Content search reads
// every session once and then keeps a small index in memory (see
// searchIndex), so that searching 10,000 sessions costs a map lookup per
// session and query word rather than 10,000 loads.

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
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
	// Indexed is the number of sessions whose content was (re)read for
	// this search; 0 once the index is warm.
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
// Thought content comes from an index the ledger keeps: a session is
// (re)read when the index has not seen its current version, which the
// first search does for every session.
func (l *Ledger) Search(ctx context.Context, q SearchQuery) (SearchResult, error) {
	page, err := SessionFilter{Limit: q.Limit, Offset: q.Offset}.normalize()
	if err != nil {
		return SearchResult{}, err
	}
	words := searchTerms(q.Query)
	if len(words) == 0 {
		return SearchResult{}, InvalidField("query", "must contain at least one letter or digit")
	}
	if ix := l.storeIndex(); ix != nil {
		return l.searchStore(ctx, ix, q, page, words)
	}
	// The summaries, not List: a search needs Session values only for
	// the hits it returns.
	sums, err := l.store.ListSessions(ctx)
	if err != nil {
		return SearchResult{}, storageError("list sessions", err)
	}
	indexed, err := l.index.refresh(ctx, l, sums, false)
	if err != nil {
		return SearchResult{}, err
	}
	phrase := strings.ToLower(strings.TrimSpace(q.Query))
	type hit struct {
		SearchHit
		sum *SessionSummary
	}
	var hits []hit
	l.index.mu.RLock()
	for i := range sums {
		if h, ok := l.index.score(sums[i].Meta, words, phrase); ok {
			hits = append(hits, hit{h, &sums[i]})
		}
	}
	l.index.mu.RUnlock()
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
	l.loadAccess()
	l.mu.Lock()
	for _, h := range hits {
		h.Session = session(h.sum.Meta, h.sum.ThoughtCount, h.sum.BranchCount, l.accessed[h.sum.Meta.ID])
		res.Hits = append(res.Hits, h.SearchHit)
	}
	l.mu.Unlock()
	l.index.mu.RLock()
	for i := range res.Hits {
		res.Hits[i].Matched.Excerpts = l.index.excerpts(res.Hits[i].Session.ID, words)
	}
	l.index.mu.RUnlock()
	return res, nil
}

// IndexSessions brings the search index up to date — reads every session
// it has not seen in its current version — and returns how many it read.
// Search does the same on its own; a server calls this in the background
// when it starts, so that its first search does not pay for reading every
// session (about a third of a millisecond per session on a Git repository
// on disk).
func (l *Ledger) IndexSessions(ctx context.Context) (int, error) {
	if ix := l.storeIndex(); ix != nil {
		n, err := ix.WarmIndex(ctx, func() bool { return ctx.Err() == nil })
		if err != nil {
			return n, storageError("index sessions", err)
		}
		return n, nil
	}
	sums, err := l.store.ListSessions(ctx)
	if err != nil {
		return 0, storageError("list sessions", err)
	}
	return l.index.refresh(ctx, l, sums, false)
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
	if ix := l.storeIndex(); ix != nil {
		return l.warmStore(ctx, ix)
	}
	sums, err := l.store.ListSessions(ctx)
	if err != nil {
		return 0, storageError("list sessions", err)
	}
	return l.index.refresh(ctx, l, sums, true)
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

// searchIndex holds, for each session it has read, which words its
// thoughts contain. It is keyed by the session's updatedAt and thought
// count, so a session another process wrote to is read again; this
// process's own writes update it in place (see Ledger.commitLocked).
type searchIndex struct {
	// mu guards docs and the docs' contents.
	mu   sync.RWMutex
	docs map[string]*searchDoc
}

type searchDoc struct {
	updatedAt time.Time
	thoughts  int
	// meta is the metadata the words below were taken from; title,
	// description and tags hold its words, tags mapping each word to the
	// tag it came from.
	meta               SessionMeta
	title, description map[string]bool
	tags               map[string]string
	// words maps a word to the number of thoughts that contain it.
	words map[string]int32
	// lines keeps each thought's text, for excerpts.
	lines []indexedThought
}

type indexedThought struct {
	node   string
	number int
	branch BranchID
	text   string
}

func newSearchDoc(m SessionMeta) *searchDoc {
	d := &searchDoc{
		updatedAt:   m.UpdatedAt,
		meta:        m,
		title:       wordSet(m.Title),
		description: wordSet(m.Description),
		tags:        map[string]string{},
		words:       map[string]int32{},
	}
	for _, t := range m.Tags {
		for _, w := range searchTerms(t) {
			d.tags[w] = t
		}
	}
	return d
}

// current reports whether the doc was made from this version of a session.
func (d *searchDoc) current(s SessionSummary) bool {
	return d.updatedAt.Equal(s.Meta.UpdatedAt) && d.thoughts == s.ThoughtCount &&
		d.meta.Title == s.Meta.Title && d.meta.Description == s.Meta.Description && slices.Equal(d.meta.Tags, s.Meta.Tags)
}

func (d *searchDoc) add(n ThoughtNode) {
	d.lines = append(d.lines, indexedThought{node: n.ID, number: n.Data.ThoughtNumber, branch: n.BranchID, text: n.Data.Thought})
	for _, w := range searchTerms(n.Data.Thought) {
		d.words[w]++
	}
}

// refresh (re)reads the sessions the index has not seen in their current
// version, in parallel, and forgets sessions that are gone. It returns how
// many it read.
func (x *searchIndex) refresh(ctx context.Context, l *Ledger, all []SessionSummary, background bool) (int, error) {
	var stale []SessionSummary
	present := 0 // docs of sessions that still exist
	x.mu.RLock()
	for _, s := range all {
		d := x.docs[s.Meta.ID]
		if d != nil {
			present++
		}
		if d == nil || !d.current(s) {
			stale = append(stale, s)
		}
	}
	gone := len(x.docs) - present
	x.mu.RUnlock()
	if gone > 0 {
		live := make(map[string]bool, len(all))
		for _, s := range all {
			live[s.Meta.ID] = true
		}
		x.mu.Lock()
		for id := range x.docs {
			if !live[id] {
				delete(x.docs, id)
			}
		}
		x.mu.Unlock()
	}
	if len(stale) == 0 {
		return 0, nil
	}

	// Loads are I/O bound (the Git store decodes objects); a few in flight
	// per CPU keep the store busy without flooding it.
	workers := min(len(stale), 4*runtime.GOMAXPROCS(0))
	if background {
		workers = 1
	}
	jobs := make(chan SessionSummary)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range jobs {
				if background && !l.giveWay(ctx) {
					errs <- ctx.Err()
					return
				}
				began := time.Now()
				x.mu.RLock()
				d0 := x.docs[s.Meta.ID]
				fresh := d0 != nil && d0.current(s)
				x.mu.RUnlock()
				if fresh {
					continue // a search read it meanwhile
				}
				d, err := l.readForIndex(ctx, s)
				if err != nil {
					errs <- err
					return
				}
				x.mu.Lock()
				x.docs[s.Meta.ID] = d
				x.mu.Unlock()
				if background {
					// At most half of one processor.
					rest := time.NewTimer(time.Since(began))
					select {
					case <-ctx.Done():
					case <-rest.C:
					}
					rest.Stop()
				}
			}
		}()
	}
	var err error
feed:
	for _, s := range stale {
		select {
		case jobs <- s:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return len(stale), err
}

// readForIndex reads one session's thoughts for the index: from the
// ledger's view if it holds the session, else straight from the store, so
// that indexing does not fill the ledger's cache with every session.
func (l *Ledger) readForIndex(ctx context.Context, s SessionSummary) (*searchDoc, error) {
	id := s.Meta.ID
	d := newSearchDoc(s.Meta)
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
			for _, n := range g.order {
				d.add(n.ThoughtNode)
			}
			d.thoughts = g.Len()
			return d, nil
		}
	}
	stored, err := l.store.LoadSession(ctx, id)
	if err != nil {
		return nil, l.loadError(id, "index", err)
	}
	for _, t := range stored.Main {
		d.add(ThoughtNode{ID: NodeID(id, "", t.Data.ThoughtNumber), Data: t.Data})
	}
	for _, b := range stored.Branches {
		for _, t := range b.Thoughts {
			d.add(ThoughtNode{ID: NodeID(id, BranchID(b.ID), t.Data.ThoughtNumber), Data: t.Data, BranchID: BranchID(b.ID)})
		}
	}
	d.thoughts = len(d.lines)
	return d, nil
}

// forget drops a session's doc, so that the next search reads it again.
func (x *searchIndex) forget(id string) {
	x.mu.Lock()
	delete(x.docs, id)
	x.mu.Unlock()
}

// added records a thought this process committed, if the index holds the
// session as it was just before; otherwise the session is read again at
// the next search. Called with the session's lock held.
func (x *searchIndex) added(id string, n ThoughtNode, updatedAt time.Time, count int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	d := x.docs[id]
	if d == nil {
		return
	}
	if d.thoughts != count-1 {
		delete(x.docs, id)
		return
	}
	d.add(n)
	d.thoughts, d.updatedAt, d.meta.UpdatedAt = count, updatedAt, updatedAt
}

// score ranks one session against the query words (see Search). Called
// with mu read-locked.
func (x *searchIndex) score(m SessionMeta, words []string, phrase string) (SearchHit, bool) {
	d := x.docs[m.ID]
	if d == nil { // a refresh that failed part way
		return SearchHit{}, false
	}
	var h SearchHit
	for _, w := range words {
		found := false
		if d.title[w] {
			h.Score += weightTitle
			h.Matched.Title, found = true, true
		}
		if t, ok := d.tags[w]; ok {
			h.Score += weightTag
			if !slices.Contains(h.Matched.Tags, t) {
				h.Matched.Tags = append(h.Matched.Tags, t)
			}
			found = true
		}
		if d.description[w] {
			h.Score += weightDescription
			h.Matched.Description, found = true, true
		}
		if c := int(d.words[w]); c > 0 {
			h.Score += weightContent + weightMoreContent*float64(min(c, maxContentHits)-1)
			h.Matched.Thoughts = max(h.Matched.Thoughts, c)
			found = true
		}
		if !found {
			return SearchHit{}, false
		}
	}
	if len(words) > 1 && strings.Contains(strings.ToLower(m.Title), phrase) {
		h.Score += weightPhrase
	}
	h.Score = round4(h.Score)
	return h, true
}

// excerpts quotes the first thoughts of a session that contain a query
// word: the first line with one, cut to a readable length. Called with mu
// read-locked.
func (x *searchIndex) excerpts(id string, words []string) []ThoughtQuote {
	d := x.docs[id]
	if d == nil {
		return nil
	}
	return d.excerpts(words)
}

// excerpts quotes the first thoughts of the doc that contain a query word.
func (d *searchDoc) excerpts(words []string) []ThoughtQuote {
	var out []ThoughtQuote
	for _, t := range d.lines {
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
