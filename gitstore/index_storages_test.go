package gitstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// One engine lists and searches sessions for both storages: the same
// corpus written to a repository on disk and to memory storage must give
// the same search results (hits, scores, order, ties, matched fields,
// excerpts, totals, pages, Indexed) and the same listing pages.

// storageRun is one storage with a ledger writing to it on a clock and ids
// of its own, so that two runs of the same steps write the same sessions.
type storageRun struct {
	name  string
	store *gitstore.Store
	l     *ledger.Ledger
	// reopen gives a new ledger over the same data: for disk a new
	// process (the store reopened, the index read from its files), for
	// memory a new ledger over the same store.
	reopen func(t *testing.T) *ledger.Ledger
}

// sameClock ticks one second per call from a fixed instant, but every
// third tick stays put so that sessions share an updatedAt (ties).
func sameClock() (func() time.Time, func() string) {
	at := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	k, n := 0, 0
	return func() time.Time {
			k++
			return at.Add(time.Duration(k-k/3) * time.Second)
		}, func() string {
			n++
			return fmt.Sprintf("0000000%d-0000-4000-8000-%012d", n%3, n)
		}
}

func newLedger(s *gitstore.Store) *ledger.Ledger {
	now, id := sameClock()
	return ledger.New(s, ledger.Options{Now: now, NewID: id})
}

func storageRuns(t *testing.T) []storageRun {
	dir := filepath.Join(t.TempDir(), "p.git")
	disk, err := gitstore.Open(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { disk.Close() })
	mem, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	return []storageRun{
		{name: "disk", store: disk, l: newLedger(disk), reopen: func(t *testing.T) *ledger.Ledger {
			disk.Close()
			again, err := gitstore.Open(dir, gitstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { again.Close() })
			return ledger.New(again, ledger.Options{})
		}},
		{name: "memory", store: mem, l: newLedger(mem), reopen: func(*testing.T) *ledger.Ledger {
			return ledger.New(mem, ledger.Options{})
		}},
	}
}

// writeCorpus writes the same sessions through l: tags sharing a word,
// descriptions, multi-line and long thoughts, branches, revisions,
// sessions with equal times, a session whose metadata changed and one
// deleted.
func writeCorpus(t *testing.T, l *ledger.Ledger) {
	t.Helper()
	ctx := context.Background()
	who := ledger.Author{Name: "t"}
	one := 1
	two := 2
	long := strings.Repeat("the index grows past any reasonable line length ", 8)
	corpus := []struct {
		title, desc string
		tags        []string
		thoughts    []ledger.ThoughtInput
	}{
		{"Index tuning", "why the planner skips the index", []string{"db", "index-work", "index"}, []ledger.ThoughtInput{
			{Thought: "the index is cold"}, {Thought: "first line\nrebuild the index\nthird"}, {Thought: "index again"},
			{Thought: "an index on the branch", BranchID: "alt", BranchFromThought: &two},
			{Thought: "revised: the index was warm", IsRevision: true, RevisesThought: &one},
		}},
		{"Queue backlog", "", []string{"ops"}, []ledger.ThoughtInput{{Thought: "consumer lag grows"}, {Thought: "add an index on offsets"}}},
		{"Lunch", "index cards", nil, []ledger.ThoughtInput{{Thought: "nothing here"}}},
		{"Index of the index", "", []string{"Index"}, []ledger.ThoughtInput{{Thought: long}, {Thought: "index index index"}}},
		{"Tied one", "", nil, []ledger.ThoughtInput{{Thought: "tie breaker word"}}},
		{"Tied two", "", nil, []ledger.ThoughtInput{{Thought: "tie breaker word"}}},
		{"To delete", "index", nil, []ledger.ThoughtInput{{Thought: "index gone soon"}}},
		{"Renamed later", "", []string{"old"}, []ledger.ThoughtInput{{Thought: "queue depth"}}},
	}
	var ids []string
	for _, s := range corpus {
		ss, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: s.title, Description: s.desc, Tags: s.tags}, who)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ss.ID)
		for _, in := range s.thoughts {
			in.NextThoughtNeeded = true
			if _, err := l.AddThought(ctx, ss.ID, in, who); err != nil {
				t.Fatalf("%s: %v", s.title, err)
			}
		}
	}
	if _, err := l.DeleteSession(ctx, ids[6], who); err != nil {
		t.Fatal(err)
	}
	title, tags := "Renamed: index queue", []string{"new", "index"}
	if _, err := l.UpdateSession(ctx, ids[7], ledger.UpdateSessionParams{Title: &title, Tags: &tags}, who); err != nil {
		t.Fatal(err)
	}
}

var sameQueries = []ledger.SearchQuery{
	{Query: "index"}, {Query: "index", Limit: 2}, {Query: "index", Limit: 2, Offset: 2}, {Query: "index", Offset: 40},
	{Query: "Index tuning"}, {Query: "the index"}, {Query: "ops"}, {Query: "nothing"}, {Query: "absent"},
	{Query: "tie breaker"}, {Query: "queue"}, {Query: "gone soon"}, {Query: "old"}, {Query: "branch"},
}

// searchAll runs every query and the listing's pages through l.
func searchAll(t *testing.T, l *ledger.Ledger) ([]ledger.SearchResult, []ledger.SessionPage) {
	t.Helper()
	ctx := context.Background()
	var res []ledger.SearchResult
	for _, q := range sameQueries {
		r, err := l.Search(ctx, q)
		if err != nil {
			t.Fatalf("search %+v: %v", q, err)
		}
		res = append(res, r)
	}
	var pages []ledger.SessionPage
	for _, off := range []int{0, 3, 6, 9} {
		p, err := l.Sessions(ctx, ledger.SessionFilter{Limit: 3, Offset: off})
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p)
	}
	return res, pages
}

// TestSearchSameOnDiskAndInMemory: the same sessions, written through the
// same steps, search and list the same on disk and in memory — first by
// the ledger that wrote them, then after a write (read again at once), then
// by a new ledger (a new process on disk), which quotes excerpts from the
// store rather than from its views.
func TestSearchSameOnDiskAndInMemory(t *testing.T) {
	runs := storageRuns(t)
	ctx := context.Background()
	type outcome struct {
		results []ledger.SearchResult
		pages   []ledger.SessionPage
	}
	var got [2][]outcome
	for i, r := range runs {
		writeCorpus(t, r.l)
		res, pages := searchAll(t, r.l)
		got[i] = append(got[i], outcome{res, pages})
		// This process writes: the next search shows it.
		list, err := r.l.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.l.AddThought(ctx, list[0].ID, ledger.ThoughtInput{Thought: "a tapir in the index", NextThoughtNeeded: true}, ledger.Author{Name: "t"}); err != nil {
			t.Fatal(err)
		}
		tapir, err := r.l.Search(ctx, ledger.SearchQuery{Query: "tapir"})
		if err != nil || tapir.Total != 1 || tapir.Indexed != 1 || tapir.Hits[0].Session.ID != list[0].ID {
			t.Fatalf("%s: a write of this ledger, searched at once: %+v, %v; want its session, read again", r.name, tapir, err)
		}
		res, pages = searchAll(t, r.l)
		got[i] = append(got[i], outcome{res, pages})
		res, pages = searchAll(t, r.reopen(t))
		got[i] = append(got[i], outcome{res, pages})
	}
	if got[0][0].results[0].Total < 4 || len(got[0][0].results[0].Hits[0].Matched.Excerpts) == 0 {
		t.Fatalf("the corpus does not exercise search: %+v", got[0][0].results[0])
	}
	for k, step := range []string{"by the writer", "after a write", "by a new ledger"} {
		if diff := cmp.Diff(got[1][k], got[0][k], cmp.AllowUnexported(outcome{})); diff != "" {
			t.Errorf("%s: disk and memory differ (-memory +disk):\n%s", step, diff)
		}
	}
}
