package ledger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/ledger"
)

func TestParseAnchors(t *testing.T) {
	a := func(text, kw string, from, to int) ledger.Anchor {
		return ledger.Anchor{Text: text, Keyword: kw, From: from, To: to}
	}
	tests := []struct {
		in   string
		want []ledger.Anchor
	}{
		{"see @auth:S42.", []ledger.Anchor{a("@auth:S42", "auth", 42, 42)}},
		{"@auth-bug:S1-S3 and @v1.2:S7", []ledger.Anchor{a("@auth-bug:S1-S3", "auth-bug", 1, 3), a("@v1.2:S7", "v1.2", 7, 7)}},
		{"(@x:S1-3)", []ledger.Anchor{a("@x:S1-3", "x", 1, 3)}},
		{"@x:S5-S2", []ledger.Anchor{a("@x:S5-S2", "x", 5, 2)}}, // parsed; resolution refuses it
		{"@x:S2-", []ledger.Anchor{a("@x:S2", "x", 2, 2)}},
		{"mail ops@example.com:S1", nil},
		{"@:S1 @x:1 @x:S0 @x:S @-x:S1 @x:S99999999999", nil},
		{"@@x:S1", []ledger.Anchor{a("@x:S1", "x", 1, 1)}},
		{"no anchors here", nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, ledger.ParseAnchors(tt.in)); diff != "" {
			t.Errorf("ParseAnchors(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func FuzzParseAnchors(f *testing.F) {
	for _, s := range []string{"@a:S1", "@a:S1-S2", "x@a:S1", "@a.b-c_d:S3-4", "@@@:S"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, a := range ledger.ParseAnchors(s) {
			again := ledger.ParseAnchors(a.Text)
			if len(again) != 1 || again[0] != a {
				t.Fatalf("anchor %+v does not parse back from its text: %+v", a, again)
			}
			if a.From < 1 || a.To < 1 || a.Keyword == "" {
				t.Fatalf("bad anchor %+v", a)
			}
		}
	})
}

func TestMatchAnchorSession(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	sessions := []ledger.Session{
		{ID: "aaaa1111-0000", Title: "Why is the API slow?", Tags: []string{"perf"}, UpdatedAt: day(1)},
		{ID: "aaaa2222-0000", Title: "Auth bug in the refresh flow", Tags: []string{"auth", "perf"}, UpdatedAt: day(2)},
		{ID: "bbbb3333-0000", Title: "Release checklist", Tags: []string{"Auth"}, UpdatedAt: day(3)},
	}
	tests := []struct {
		keyword string
		want    string
		how     ledger.AnchorStrategy
	}{
		{"aaaa2222-0000", "aaaa2222-0000", ledger.AnchorByAlias},
		{"BBBB", "bbbb3333-0000", ledger.AnchorByAlias},                // unique id prefix
		{"why-is-the-api-slow", "aaaa1111-0000", ledger.AnchorByAlias}, // title slug
		{"perf", "aaaa2222-0000", ledger.AnchorByTag},                  // newest of two
		{"auth", "bbbb3333-0000", ledger.AnchorByTag},                  // tags ignore case; newest
		{"refresh-flow", "aaaa2222-0000", ledger.AnchorByTitle},        // 0.7·2/2 + 0.3·2/6 = 0.8
		{"checklist", "bbbb3333-0000", ledger.AnchorByTitle},           // 0.7 + 0.3·1/2
		{"aaaa", "", ""},         // ambiguous prefix, and nothing else matches
		{"slow-release", "", ""}, // 0.7·1/2 + 0.3·1/5 = 0.41 at best
	}
	for _, tt := range tests {
		s, how, ok := ledger.MatchAnchorSession(tt.keyword, sessions)
		if ok != (tt.want != "") || s.ID != tt.want || how != tt.how {
			t.Errorf("MatchAnchorSession(%q) = %s, %q, %v; want %s, %q", tt.keyword, s.ID, how, ok, tt.want, tt.how)
		}
	}
}

func TestFilterSessions(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	all := []ledger.Session{
		{ID: "a", Title: "beta release", Tags: []string{"ops", "release"}, CreatedAt: day(1), UpdatedAt: day(9)},
		{ID: "b", Title: "Alpha", Description: "release notes draft", Tags: []string{"docs"}, CreatedAt: day(2), UpdatedAt: day(8)},
		{ID: "c", Title: "gamma", Tags: []string{"OPS"}, CreatedAt: day(3), UpdatedAt: day(7)},
		{ID: "d", Title: "Delta release", Tags: []string{"ops", "release", "urgent"}, CreatedAt: day(4), UpdatedAt: day(6)},
	}
	ids := func(p ledger.SessionPage) []string {
		var out []string
		for _, s := range p.Sessions {
			out = append(out, s.ID)
		}
		return out
	}
	tests := []struct {
		f     ledger.SessionFilter
		want  []string
		total int
	}{
		{ledger.SessionFilter{}, []string{"a", "b", "c", "d"}, 4},
		{ledger.SessionFilter{Tags: []string{"ops", "release"}}, []string{"a", "d"}, 2},
		{ledger.SessionFilter{Tags: []string{"ops"}}, []string{"a", "c", "d"}, 3},
		{ledger.SessionFilter{Search: "RELEASE"}, []string{"a", "b", "d"}, 3},
		{ledger.SessionFilter{Search: "release notes"}, []string{"b"}, 1},
		{ledger.SessionFilter{Task: "urgent"}, []string{"d"}, 1},
		{ledger.SessionFilter{SortBy: "title", SortOrder: "asc"}, []string{"b", "a", "d", "c"}, 4},
		{ledger.SessionFilter{SortBy: "createdAt"}, []string{"d", "c", "b", "a"}, 4},
		{ledger.SessionFilter{Limit: 2, Offset: 1}, []string{"b", "c"}, 4},
		{ledger.SessionFilter{Offset: 9}, nil, 4},
	}
	for _, tt := range tests {
		p, err := ledger.FilterSessions(all, tt.f)
		if err != nil {
			t.Fatalf("%+v: %v", tt.f, err)
		}
		if diff := cmp.Diff(tt.want, ids(p)); diff != "" || p.Total != tt.total {
			t.Errorf("%+v: total %d (want %d), ids (-want +got):\n%s", tt.f, p.Total, tt.total, diff)
		}
	}
	for _, tt := range []struct {
		f     ledger.SessionFilter
		field string
	}{
		{ledger.SessionFilter{Limit: 101}, "limit"},
		{ledger.SessionFilter{Limit: -1}, "limit"},
		{ledger.SessionFilter{Offset: -1}, "offset"},
		{ledger.SessionFilter{SortBy: "size"}, "sortBy"},
		{ledger.SessionFilter{SortOrder: "up"}, "sortOrder"},
	} {
		_, err := ledger.FilterSessions(all, tt.f)
		wantErr{code: ledger.CodeInvalidPayload, field: tt.field}.check(t, err)
	}
}

func TestSearch(t *testing.T) {
	f := loadFixtures(t)
	ctx := context.Background()
	search := func(q string) ledger.SearchResult {
		t.Helper()
		r, err := f.l.Search(ctx, ledger.SearchQuery{Query: q})
		if err != nil {
			t.Fatalf("Search(%q): %v", q, err)
		}
		return r
	}
	titles := func(r ledger.SearchResult) []string {
		var out []string
		for _, h := range r.Hits {
			out = append(out, h.Session.Title)
		}
		return out
	}

	// The first search reads every session; later ones none.
	if n, err := f.l.IndexSessions(ctx); n != 3 || err != nil {
		t.Fatalf("IndexSessions = %d, %v; want 3", n, err)
	}
	r := search("index")
	if r.Indexed != 0 || !cmp.Equal(titles(r), []string{"Why is the API slow?"}) {
		t.Fatalf("search(index) = %+v", r)
	}
	h := r.Hits[0]
	if h.Matched.Title || h.Matched.Thoughts != 5 || len(h.Matched.Excerpts) != 3 || h.Matched.Excerpts[0].ThoughtNumber != 8 {
		t.Errorf("hit = %+v", h)
	}
	if search("index").Indexed != 0 {
		t.Error("a second search read sessions again")
	}

	// Every word must match somewhere; titles outrank content.
	if got := titles(search("kafka partitioning")); !cmp.Equal(got, []string{"Pick a message queue"}) {
		t.Errorf("kafka partitioning: %v", got)
	}
	if got := titles(search("kafka nonexistentword")); got != nil {
		t.Errorf("AND semantics: %v", got)
	}
	r = search("api")
	if got := titles(r); !cmp.Equal(got, []string{"Why is the API slow?", "Pick a message queue"}) {
		t.Errorf("api: %v", got)
	}
	if a, b := r.Hits[0], r.Hits[1]; !a.Matched.Title || !cmp.Equal(a.Matched.Tags, []string{"api"}) || b.Matched.Title || a.Score <= b.Score {
		t.Errorf("api ranking: %+v / %+v", a, b)
	}
	if r.More || r.Offset != 0 || r.Limit != ledger.DefaultListLimit {
		t.Errorf("api, all on one page: hasMore %v, offset %d, limit %d", r.More, r.Offset, r.Limit)
	}
	for _, pg := range []struct {
		offset int
		want   string
		more   bool
	}{{0, "Why is the API slow?", true}, {1, "Pick a message queue", false}} {
		r, err := f.l.Search(ctx, ledger.SearchQuery{Query: "api", Limit: 1, Offset: pg.offset})
		if err != nil || r.Total != 2 || r.More != pg.more || !cmp.Equal(titles(r), []string{pg.want}) {
			t.Errorf("api, page at %d of 1: %v, total %d, hasMore %v, err %v; want %q, hasMore %v", pg.offset, titles(r), r.Total, r.More, err, pg.want, pg.more)
		}
	}

	// A write through this ledger moves the session's refs, so the
	// store's index reads it again at the next search (and only it)…
	id := f.ids["3-empty"]
	if _, err := f.l.AddThought(ctx, id, th("Zanzibar is the codename"), agent); err != nil {
		t.Fatal(err)
	}
	if r := search("zanzibar"); r.Indexed != 1 || !cmp.Equal(titles(r), []string{"Nothing yet"}) {
		t.Errorf("after a write here: %+v", r)
	}
	// …and one by another process is read at the next search.
	f.store.sneak(id, "", ledger.ThoughtData{Thought: "Quokka spotted", ThoughtNumber: 2, TotalThoughts: 2, NextThoughtNeeded: true,
		Timestamp: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)})
	if r := search("quokka"); r.Indexed != 1 || !cmp.Equal(titles(r), []string{"Nothing yet"}) {
		t.Errorf("after a write elsewhere: %+v", r)
	}

	_, err := f.l.Search(ctx, ledger.SearchQuery{Query: " ?! "})
	wantErr{code: ledger.CodeInvalidPayload, field: "query"}.check(t, err)
	_, err = f.l.Search(ctx, ledger.SearchQuery{Query: "x", Limit: 500})
	wantErr{code: ledger.CodeInvalidPayload, field: "limit"}.check(t, err)
}

// Searches race with writes under -race.
func TestSearchConcurrentWrites(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	id := e.start(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			e.add(t, id, th(fmt.Sprintf("word%d common", i)))
		}
	}()
	for range 50 {
		if _, err := e.l.Search(ctx, ledger.SearchQuery{Query: "common"}); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	r, err := e.l.Search(ctx, ledger.SearchQuery{Query: "word49"})
	if err != nil || r.Total != 1 || r.Hits[0].Matched.Thoughts != 1 {
		t.Fatalf("after the writes: %+v, %v", r, err)
	}
	if r, _ := e.l.Search(ctx, ledger.SearchQuery{Query: "common"}); r.Hits[0].Matched.Thoughts != 50 {
		t.Errorf("the index lost thoughts: %+v", r.Hits[0].Matched)
	}
}

// TestWarmSearchIndex: the background warm-up reads every session, one at
// a time after its delay, so that the first search reads none; cancelled,
// it stops.
func TestWarmSearchIndex(t *testing.T) {
	f := loadFixtures(t)
	ctx := context.Background()
	if n, err := f.l.WarmSearchIndex(ctx); n != 3 || err != nil {
		t.Fatalf("WarmSearchIndex = %d, %v; want 3", n, err)
	}
	r, err := f.l.Search(ctx, ledger.SearchQuery{Query: "index"})
	if err != nil || r.Indexed != 0 || len(r.Hits) != 1 {
		t.Fatalf("search after the warm-up: %+v, %v", r, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := loadFixtures(t).l.WarmSearchIndex(cancelled); err == nil {
		t.Fatal("a cancelled warm-up reported success")
	}
}
