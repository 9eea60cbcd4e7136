package gitstore

import (
	"cmp"
	"context"
	"crypto/sha1"
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/sessionindex"
	"github.com/thoughtbox/thoughtbox/internal/durable"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// The session index (package sessionindex; on disk in thoughtbox/index/,
// for memory storage the same segments held in memory) lets listing and
// search cost the page or the query instead of the ledger. Every call
// reads the refs of every session — one packed-refs file and the few
// loose refs, or the memory storage's refs — and uses a record only while
// its session's refs still have the tips it was read at. Listing and
// search of both storages are this one code.

var _ ledger.SessionIndex = (*storeIndex)(nil)

// SessionIndex implements ledger.SessionIndexer.
func (s *Store) SessionIndex() ledger.SessionIndex { return (*storeIndex)(s) }

// DropSessionIndex forgets the session index, so that the next listing or
// search reads every session again: what deleting thoughtbox/index/ does,
// for memory storage too (a first search is measured this way).
func (s *Store) DropSessionIndex() error { return s.sessIndex.Drop() }

type storeIndex Store

// indexChunk is how many sessions read are recorded per segment while an
// index is built, so that a build that is stopped keeps what it did.
const indexChunk = 2000

// sessionNow is one session's refs as they are now.
type sessionNow struct {
	id   string
	refs *sessionRefs
}

// sessionsNow lists every session with its refs, by id, and the keys the
// index knows them by.
func (s *Store) sessionsNow() ([]sessionNow, []sessionindex.Current, error) {
	names, hashes, err := s.sessionRefsSorted()
	if err != nil {
		return nil, nil, err
	}
	now := make([]sessionNow, 0, len(names))
	all := make([]sessionRefs, 0, len(names))
	for i, ref := range names {
		id, chain, ok := strings.Cut(ref[len(s.lay.sessions()):], "/")
		if !ok {
			continue
		}
		// Refs are in order, so a session's refs are next to each other.
		if len(now) == 0 || now[len(now)-1].id != id {
			all = append(all, sessionRefs{})
			now = append(now, sessionNow{id: id})
		}
		c := &all[len(all)-1]
		if chain == "main" {
			c.main = hashes[i]
		} else if b, ok := strings.CutPrefix(chain, "branches/"); ok {
			c.branches = append(c.branches, branchTip{b, hashes[i]})
		}
	}
	for i := range now {
		now[i].refs = &all[i]
	}
	// Ids one of which prefixes another ("abc", "abc-d") are out of
	// order in ref order ('-' sorts before '/').
	if !slices.IsSortedFunc(now, func(a, b sessionNow) int { return strings.Compare(a.id, b.id) }) {
		slices.SortFunc(now, func(a, b sessionNow) int { return strings.Compare(a.id, b.id) })
	}
	out := now[:0]
	cur := make([]sessionindex.Current, 0, len(now))
	for i := range now {
		if now[i].refs.main == zeroHash {
			continue
		}
		out = append(out, now[i])
		cur = append(cur, sessionindex.Current{ID: now[i].id, Key: indexKey(now[i].refs)})
	}
	return out, cur, nil
}

// sessionRefsSorted returns every ref under s.lay.sessions(), in order. On disk
// it walks the packed refs, already in order, and lays the few loose and
// logged ones over them, instead of building maps of every ref.
func (s *Store) sessionRefsSorted() ([]string, []hash, error) {
	ctx := context.Background() // no caller passes one yet
	if fb := s.disk; fb != nil {
		return fb.SortedRefs(ctx, s.lay.sessions())
	}
	refs, err := s.be.ListRefs(ctx, s.lay.sessions())
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(refs))
	for n := range refs {
		names = append(names, n)
	}
	slices.Sort(names)
	hashes := make([]hash, len(names))
	for i, n := range names {
		hashes[i] = refs[n]
	}
	return names, hashes, nil
}

// refsStamp identifies the state of the session refs without reading
// them: the packed refs file's identity, size and modification time, and
// the few loose and logged refs laid over it. Git never rewrites
// packed-refs in place (it writes packed-refs.lock and renames it), so any
// change to a packed ref gives another file. settled says the packed refs
// were last changed more than racyWindow ago: only then may a listing be
// written under the stamp (see racyWindow). False for memory storage, or
// when the refs cannot be looked at.
func (s *Store) refsStamp() (st sessionindex.Stamp, settled, ok bool) {
	fb := s.disk
	if fb == nil {
		return st, false, false
	}
	sum, packedAt, err := fb.RefsStamp(context.Background(), s.lay.sessions())
	if err != nil {
		return st, false, false
	}
	return sessionindex.Stamp(sum), packedAt.IsZero() || time.Since(packedAt) > racyWindow, true
}

// racyWindow is how long packed-refs must have stood unchanged before a
// listing is written under its stamp. On a file system whose times are
// coarse (FAT's two seconds, a second on some others), a packed-refs
// rewritten within the same tick, to the same size, on a reused inode,
// would look unchanged; once its time is older than a tick when the
// listing is written, any later rewrite has a later time. Git's index
// guards against "racily clean" files the same way.
const racyWindow = durable.RacyWindow

// indexKey is the main tip of a session without branches, else a digest
// of all its tips.
func indexKey(c *sessionRefs) sessionindex.Key {
	if len(c.branches) == 0 {
		return sessionindex.Key(c.main)
	}
	slices.SortFunc(c.branches, func(a, b branchTip) int { return strings.Compare(a.name, b.name) })
	return sha1.Sum([]byte(c.key()))
}

// indexed is a view of the index brought up to date for one call.
type indexed struct {
	v   *sessionindex.View
	now []sessionNow
	// bad holds the sessions that could not be read, as listing shows
	// them (by session index); they are never recorded.
	bad map[int]ledger.SessionSummary
	// read counts the sessions read from the repository.
	read int
}

// refresh reads the index and records the sessions it is missing: their
// summaries, and with words also their words. With pause it reads one
// session at a time, calling pause before each; otherwise several at once.
func (s *Store) refresh(ctx context.Context, words bool, pause func() bool) (*indexed, error) {
	now, cur, err := s.sessionsNow()
	if err != nil {
		return nil, err
	}
	v, err := s.sessIndex.View(cur)
	if err != nil {
		return nil, err
	}
	ix := &indexed{v: v, now: now, bad: map[int]ledger.SessionSummary{}}
	if err := s.fill(ctx, ix, words, pause); err != nil {
		v.Close()
		return nil, err
	}
	return ix, nil
}

func (s *Store) fill(ctx context.Context, ix *indexed, words bool, pause func() bool) error {
	missing := ix.v.Missing(words)
	if len(missing) == 0 {
		return nil
	}
	type result struct {
		i   int
		doc sessionindex.Doc
		bad *ledger.SessionSummary
	}
	workers := min(len(missing), 4*runtime.GOMAXPROCS(0))
	if pause != nil {
		workers = 1
	}
	jobs := make(chan int)
	results := make(chan result)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				n := ix.now[i]
				doc, err := s.indexDoc(n, ix.v.Current(i).Key, words)
				r := result{i: i, doc: doc}
				if err != nil {
					// A damaged session still lists, so that verify can
					// name it.
					r.bad = &ledger.SessionSummary{Meta: ledger.SessionMeta{ID: n.id, Title: "(unreadable: " + err.Error() + ")"}}
				}
				results <- r
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, i := range missing {
			if pause != nil && !pause() {
				return
			}
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	var chunk []sessionindex.Doc
	var addErr error
	add := func() {
		if err := ix.v.Add(chunk); err != nil && !errors.Is(err, sessionindex.ErrLost) && addErr == nil {
			addErr = err
		}
		chunk = chunk[:0]
	}
	for r := range results {
		ix.read++
		if r.bad != nil {
			ix.bad[r.i] = *r.bad
			continue
		}
		chunk = append(chunk, r.doc)
		if len(chunk) == indexChunk {
			add()
		}
	}
	add()
	if err := ctx.Err(); err != nil {
		return err
	}
	// Failing to write the index (a read-only repository) costs only
	// speed: the view answers for what was read all the same.
	_ = addErr
	return nil
}

// indexDoc reads one session's record at the refs it has in n.
func (s *Store) indexDoc(n sessionNow, key sessionindex.Key, words bool) (sessionindex.Doc, error) {
	if !words {
		sum, err := s.summary(n.id, n.refs)
		if err != nil {
			return sessionindex.Doc{}, err
		}
		return sessionindex.Doc{ID: n.id, Key: key, Summary: toIndexSummary(sum)}, nil
	}
	refs := map[string]hash{s.lay.mainRef(n.id): n.refs.main}
	for _, b := range n.refs.branches {
		refs[s.lay.branchRef(n.id, b.name)] = b.tip
	}
	ss, err := s.loadSessionAt(n.id, refs)
	if err != nil {
		return sessionindex.Doc{}, err
	}
	sum, whole := loadedSummary(ss, len(n.refs.branches))
	if !whole {
		// Something is missing or damaged: the summary is what the
		// manifests list, as a listing reads it.
		if sum, err = s.summary(n.id, n.refs); err != nil {
			return sessionindex.Doc{}, err
		}
	}
	doc := sessionindex.Doc{ID: n.id, Key: key, Summary: toIndexSummary(sum)}
	ws := ledger.SessionWords(ss)
	doc.Terms = make(map[string]sessionindex.Term, len(ws))
	for w, c := range ws {
		var t sessionindex.Term
		if c.Title {
			t.Fields |= sessionindex.InTitle
		}
		if c.Description {
			t.Fields |= sessionindex.InDescription
		}
		if c.Tag {
			t.Fields |= sessionindex.InTag
		}
		t.Count = uint32(c.Thoughts)
		doc.Terms[w] = t
	}
	return doc, nil
}

// loadedSummary is the summary of a session read whole, which saves
// reading its manifests a second time: when nothing is missing or damaged
// (every file its manifests list was read, every branch loaded) it equals
// what Store.summary reads; false otherwise.
func loadedSummary(ss *ledger.StoredSession, branches int) (ledger.SessionSummary, bool) {
	if !ss.Integrity.Valid || len(ss.Branches) != branches {
		return ledger.SessionSummary{}, false
	}
	n := len(ss.Main)
	for _, b := range ss.Branches {
		n += len(b.Thoughts)
	}
	return ledger.SessionSummary{Meta: ss.Meta, ThoughtCount: n, BranchCount: branches}, true
}

func (ix *indexed) summary(i int) (ledger.SessionSummary, bool) {
	if b, ok := ix.bad[i]; ok {
		return b, true
	}
	return ix.recorded(i)
}

// recorded is session i's summary as the index holds it.
func (ix *indexed) recorded(i int) (ledger.SessionSummary, bool) {
	sum, ok := ix.v.Summary(i)
	if !ok {
		return ledger.SessionSummary{}, false
	}
	return fromIndexSummary(ix.v.Current(i).ID, sum), true
}

// toIndexSummary and fromIndexSummary convert between the ledger's
// summary and the index's own record, which stays free of the ledger
// (internal/archtest: gitstore/internal/* never import ledger).
func toIndexSummary(s ledger.SessionSummary) sessionindex.Summary {
	m := s.Meta
	return sessionindex.Summary{
		Title: m.Title, Description: m.Description, Tags: m.Tags, PartitionPath: m.PartitionPath,
		CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt, Thoughts: s.ThoughtCount, Branches: s.BranchCount,
	}
}

func fromIndexSummary(id string, s sessionindex.Summary) ledger.SessionSummary {
	return ledger.SessionSummary{
		Meta: ledger.SessionMeta{
			ID: id, Title: s.Title, Description: s.Description, Tags: s.Tags, PartitionPath: s.PartitionPath,
			CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		},
		ThoughtCount: s.Thoughts, BranchCount: s.Branches,
	}
}

// indexedSummaries is ListSessions over the index.
func (s *Store) indexedSummaries(ctx context.Context) ([]ledger.SessionSummary, error) {
	ix, err := s.refresh(ctx, false, nil)
	if err != nil {
		return nil, err
	}
	defer ix.v.Close()
	out := make([]ledger.SessionSummary, 0, ix.v.Len())
	for i := range ix.v.Len() {
		if sum, ok := ix.summary(i); ok {
			out = append(out, sum)
		}
	}
	return out, nil
}

// PageSessions implements ledger.SessionIndex.
func (x *storeIndex) PageSessions(ctx context.Context, offset, limit int) ([]ledger.SessionSummary, int, error) {
	s := (*Store)(x)
	// While the refs are as they were when every session was last
	// checked, the listing written then is the answer.
	stamp, settled, stamped := s.refsStamp()
	if stamped {
		if page, total, ok := s.sessIndex.ReadListing(stamp, offset, limit); ok {
			out := make([]ledger.SessionSummary, len(page))
			for i, p := range page {
				out[i] = fromIndexSummary(p.ID, p.Summary)
			}
			return out, total, nil
		}
	}
	ix, err := s.refresh(ctx, false, nil)
	if err != nil {
		return nil, 0, err
	}
	defer ix.v.Close()
	type entry struct {
		i       int
		updated int64
	}
	all := make([]entry, 0, ix.v.Len())
	for i := range ix.v.Len() {
		if _, ok := ix.bad[i]; ok {
			// Unreadable: no time, so last, as FilterSessions puts it.
			all = append(all, entry{i, math.MinInt64})
		} else if u, ok := ix.v.UpdatedAt(i); ok {
			all = append(all, entry{i, u})
		}
	}
	// Sessions are by id already: a stable sort by time keeps ties in
	// id order.
	slices.SortStableFunc(all, func(a, b entry) int { return cmp.Compare(b.updated, a.updated) })
	if stamped && settled && len(ix.bad) == 0 && len(all) == ix.v.Len() {
		// Every session checked and recorded: keep the order for the next
		// call, if the refs did not move while they were read.
		if again, _, ok := s.refsStamp(); ok && again == stamp {
			order := make([]int, len(all))
			for k, e := range all {
				order[k] = e.i
			}
			_ = ix.v.WriteListing(stamp, order) // derived data: failing costs speed only
		}
	}
	page := all[min(offset, len(all)):]
	page = page[:min(limit, len(page))]
	out := make([]ledger.SessionSummary, 0, len(page))
	for _, e := range page {
		if sum, ok := ix.summary(e.i); ok {
			out = append(out, sum)
		}
	}
	return out, len(all), nil
}

// FindSessions implements ledger.SessionIndex.
func (x *storeIndex) FindSessions(ctx context.Context, words []string) ([]ledger.IndexedMatch, int, error) {
	s := (*Store)(x)
	ix, err := s.refresh(ctx, true, nil)
	if err != nil {
		return nil, 0, err
	}
	defer ix.v.Close()
	for attempt := 0; ; attempt++ {
		hits, err := ix.v.Find(words)
		if errors.Is(err, sessionindex.ErrLost) && attempt < 3 {
			// A damaged segment was dropped: read its sessions again.
			if err := s.fill(ctx, ix, true, nil); err != nil {
				return nil, ix.read, err
			}
			continue
		}
		if err != nil {
			return nil, ix.read, err
		}
		out := make([]ledger.IndexedMatch, 0, len(hits))
		for _, h := range hits {
			sum, ok := ix.recorded(h.Session)
			if !ok {
				continue
			}
			m := ledger.IndexedMatch{Summary: sum, Words: make([]ledger.WordCount, len(h.Terms))}
			for i, t := range h.Terms {
				m.Words[i] = ledger.WordCount{
					Title:       t.Fields&sessionindex.InTitle != 0,
					Description: t.Fields&sessionindex.InDescription != 0,
					Tag:         t.Fields&sessionindex.InTag != 0,
					Thoughts:    int(t.Count),
				}
			}
			out = append(out, m)
		}
		return out, ix.read, nil
	}
}

// WarmIndex implements ledger.SessionIndex.
func (x *storeIndex) WarmIndex(ctx context.Context, pause func() bool) (int, error) {
	ix, err := (*Store)(x).refresh(ctx, true, pause)
	if err != nil {
		return 0, err
	}
	ix.v.Close()
	return ix.read, nil
}
