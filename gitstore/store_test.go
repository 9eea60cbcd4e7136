package gitstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// backends runs a test against the in-memory store and an on-disk one, as
// every store behaviour must be the same on both.
func backends(t *testing.T, f func(t *testing.T, open func() *Store)) {
	t.Run("memory", func(t *testing.T) {
		s, err := OpenMemory(Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		f(t, func() *Store { return s })
	})
	t.Run("fs", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "p.git")
		var cur *Store
		open := func() *Store {
			if cur != nil {
				cur.Close()
			}
			s, err := Open(dir, Options{FlushInterval: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			cur = s
			return s
		}
		t.Cleanup(func() {
			if cur != nil {
				cur.Close()
			}
		})
		f(t, open)
	})
}

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func intp(n int) *int { return &n }

type writer struct {
	t    *testing.T
	s    *Store
	meta ledger.SessionMeta
	tips map[string]ledger.CommitID
	at   time.Time
}

func newSession(t *testing.T, s *Store, id string) *writer {
	t.Helper()
	meta := ledger.SessionMeta{ID: id, Title: "Debug the " + id, Tags: []string{"debugging"}, CreatedAt: t0}
	meta, c, err := s.CreateSession(context.Background(), meta, ledger.Author{Name: "claude-code 1.0"})
	if err != nil {
		t.Fatal(err)
	}
	return &writer{t: t, s: s, meta: meta, tips: map[string]ledger.CommitID{"": c}, at: t0}
}

func (w *writer) add(branch string, td ledger.ThoughtData, revises ledger.CommitID) ledger.CommitID {
	w.t.Helper()
	c, err := w.try(branch, td, revises)
	if err != nil {
		w.t.Fatalf("append %s/%d: %v", branch, td.ThoughtNumber, err)
	}
	return c
}

func (w *writer) try(branch string, td ledger.ThoughtData, revises ledger.CommitID) (ledger.CommitID, error) {
	w.at = w.at.Add(time.Second)
	td.Timestamp = w.at
	if td.TotalThoughts == 0 {
		td.TotalThoughts = td.ThoughtNumber
	}
	req := ledger.AppendRequest{Meta: w.meta, Branch: branch, Thought: td, Revises: revises,
		Author: ledger.Author{Name: "claude-code 1.0"}}
	tip, ok := w.tips[branch]
	if !ok {
		req.NewBranch = true
		tip = w.tips["fork:"+branch]
	}
	req.ExpectedTip = tip
	c, err := w.s.Append(context.Background(), req)
	if err == nil {
		w.tips[branch] = c
	}
	return c, err
}

func TestStoreRoundTrip(t *testing.T) {
	backends(t, func(t *testing.T, open func() *Store) {
		s := open()
		w := newSession(t, s, "a1b2c3d4-0000-4000-8000-000000000001")
		commits := map[int]ledger.CommitID{}
		for n := 1; n <= 5; n++ {
			commits[n] = w.add("", ledger.ThoughtData{Thought: fmt.Sprintf("step %d\nwith detail", n), ThoughtNumber: n, NextThoughtNeeded: true}, "")
		}
		w.tips["fork:alt"] = commits[3]
		w.add("alt", ledger.ThoughtData{Thought: "what if redis", ThoughtNumber: 4, BranchFromThought: intp(3), BranchID: "alt", NextThoughtNeeded: true}, "")
		w.add("alt", ledger.ThoughtData{Thought: "redis is faster", ThoughtNumber: 5, BranchFromThought: intp(3), BranchID: "alt", NextThoughtNeeded: true}, "")
		w.add("", ledger.ThoughtData{Thought: "correction to 3", ThoughtNumber: 6, IsRevision: true, RevisesThought: intp(3), NextThoughtNeeded: false}, commits[3])

		check := func(s *Store) {
			t.Helper()
			ss, err := s.LoadSession(context.Background(), w.meta.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !ss.Integrity.Valid {
				t.Fatalf("integrity: %+v", ss.Integrity)
			}
			var nums []int
			for _, th := range ss.Main {
				nums = append(nums, th.Data.ThoughtNumber)
			}
			if diff := cmp.Diff([]int{1, 2, 3, 4, 5, 6}, nums); diff != "" {
				t.Errorf("main chain (-want +got):\n%s", diff)
			}
			if ss.Main[2].Commit != commits[3] {
				t.Errorf("thought 3 commit = %s, want %s", ss.Main[2].Commit, commits[3])
			}
			if len(ss.Branches) != 1 || ss.Branches[0].ID != "alt" || len(ss.Branches[0].Thoughts) != 2 {
				t.Fatalf("branches = %+v", ss.Branches)
			}
			if ss.Branches[0].ForkCommit != commits[3] {
				t.Errorf("fork commit = %s, want %s", ss.Branches[0].ForkCommit, commits[3])
			}
			if got := ss.Main[5].Data; !got.IsRevision || *got.RevisesThought != 3 {
				t.Errorf("revision = %+v", got)
			}
			if ss.Meta.Title != w.meta.Title || ss.Meta.PartitionPath != "2026-11" {
				t.Errorf("meta = %+v", ss.Meta)
			}
			list, err := s.ListSessions(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].ThoughtCount != 8 || list[0].BranchCount != 1 {
				t.Errorf("list = %+v", list)
			}
		}
		check(s)
		check(open()) // a restart rebuilds everything from the refs
	})
}

func TestStoreRefusesStaleTipAndDuplicates(t *testing.T) {
	backends(t, func(t *testing.T, open func() *Store) {
		s := open()
		w := newSession(t, s, "a1b2c3d4-0000-4000-8000-000000000002")
		start := w.tips[""]
		w.add("", ledger.ThoughtData{Thought: "one", ThoughtNumber: 1}, "")
		w.add("", ledger.ThoughtData{Thought: "two", ThoughtNumber: 2}, "")

		w.tips[""] = start // a writer that did not see thoughts 1 and 2
		if _, err := w.try("", ledger.ThoughtData{Thought: "stale", ThoughtNumber: 1}, ""); !errors.Is(err, ledger.ErrConflict) {
			t.Fatalf("stale append: err = %v, want ErrConflict", err)
		}
		ss, _ := s.LoadSession(context.Background(), w.meta.ID)
		w.tips[""] = ss.MainTip
		if _, err := w.try("", ledger.ThoughtData{Thought: "again", ThoughtNumber: 2}, ""); err == nil {
			t.Fatal("a second thought 2 was accepted")
		}
		// the refused writes changed nothing, and the chain still grows
		w.add("", ledger.ThoughtData{Thought: "three", ThoughtNumber: 3}, "")
		ss, err := s.LoadSession(context.Background(), w.meta.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, th := range ss.Main {
			got = append(got, th.Data.Thought)
		}
		if diff := cmp.Diff([]string{"one", "two", "three"}, got); diff != "" {
			t.Errorf("thoughts (-want +got):\n%s", diff)
		}
	})
}

func TestStoreUnknownSession(t *testing.T) {
	backends(t, func(t *testing.T, open func() *Store) {
		s := open()
		if _, err := s.LoadSession(context.Background(), "nope"); !errors.Is(err, ledger.ErrSessionNotFound) {
			t.Fatalf("err = %v, want ErrSessionNotFound", err)
		}
	})
}

func TestStoreCritiqueIsASecondCommit(t *testing.T) {
	backends(t, func(t *testing.T, open func() *Store) {
		s := open()
		w := newSession(t, s, "a1b2c3d4-0000-4000-8000-00000000c717")
		c1 := w.add("", ledger.ThoughtData{Thought: "one", ThoughtNumber: 1}, "")
		w.add("", ledger.ThoughtData{Thought: "two", ThoughtNumber: 2}, "")
		crit := ledger.Critique{Text: "assumes the cache is warm", Model: "claude-sonnet-4-5-20250929", Timestamp: t0.Add(time.Hour)}
		req := ledger.CritiqueRequest{Meta: w.meta, ExpectedTip: w.tips[""], ThoughtNumber: 1, Critique: crit, Author: ledger.Author{Name: "claude-sonnet-4-5-20250929"}}
		tip, err := s.AddCritique(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		req.ExpectedTip, req.ThoughtNumber = tip, 9
		if _, err := s.AddCritique(context.Background(), req); !errors.Is(err, ledger.ErrThoughtNotFound) {
			t.Errorf("critique of a missing thought: err = %v", err)
		}
		req.ExpectedTip, req.ThoughtNumber = w.tips[""], 2 // stale
		if _, err := s.AddCritique(context.Background(), req); !errors.Is(err, ledger.ErrConflict) {
			t.Errorf("critique from a stale tip: err = %v", err)
		}
		ss, err := s.LoadSession(context.Background(), w.meta.ID)
		if err != nil {
			t.Fatal(err)
		}
		got := ss.Main[0]
		if got.Data.Critique == nil || got.Data.Critique.Text != crit.Text || got.Data.Thought != "one" {
			t.Fatalf("thought 1 = %+v", got.Data)
		}
		if got.Commit != c1 {
			t.Errorf("thought 1 maps to %s, want the commit that recorded it (%s)", got.Commit, c1)
		}
		if ss.MainTip != tip || ss.Main[1].Data.Critique != nil {
			t.Errorf("tip %s (want %s), thought 2 critique %v", ss.MainTip, tip, ss.Main[1].Data.Critique)
		}
	})
}

// TestStoreThoughtsSince reads back only what a chain gained after a
// commit, and declines (ok false) whatever is not just new thoughts.
func TestStoreThoughtsSince(t *testing.T) {
	backends(t, func(t *testing.T, open func() *Store) {
		s := open()
		ctx := context.Background()
		w := newSession(t, s, "a1b2c3d4-0000-4000-8000-0000005e1ce0")
		start := w.tips[""]
		c1 := w.add("", ledger.ThoughtData{Thought: "one", ThoughtNumber: 1}, "")
		c2 := w.add("", ledger.ThoughtData{Thought: "two", ThoughtNumber: 2}, "")
		c7 := w.add("", ledger.ThoughtData{Thought: "seven", ThoughtNumber: 7}, "")
		w.tips["fork:alt"] = c2
		b3 := w.add("alt", ledger.ThoughtData{Thought: "alt three", ThoughtNumber: 3, BranchID: "alt", BranchFromThought: intp(2)}, "")
		b4 := w.add("alt", ledger.ThoughtData{Thought: "alt four", ThoughtNumber: 4, BranchID: "alt", BranchFromThought: intp(2)}, "")

		type got struct {
			Numbers []int
			Commits []ledger.CommitID
			Tip     ledger.CommitID
			OK      bool
		}
		since := func(branch string, c ledger.CommitID) got {
			t.Helper()
			th, tip, ok, err := s.ThoughtsSince(ctx, w.meta.ID, branch, c)
			if err != nil {
				t.Fatalf("ThoughtsSince(%q, %s): %v", branch, c, err)
			}
			g := got{Tip: tip, OK: ok}
			for _, x := range th {
				g.Numbers = append(g.Numbers, x.Data.ThoughtNumber)
				g.Commits = append(g.Commits, x.Commit)
			}
			return g
		}
		for _, tc := range []struct {
			name   string
			branch string
			since  ledger.CommitID
			want   got
		}{
			{"from the start", "", start, got{[]int{1, 2, 7}, []ledger.CommitID{c1, c2, c7}, c7, true}},
			{"from thought 1", "", c1, got{[]int{2, 7}, []ledger.CommitID{c2, c7}, c7, true}},
			{"up to date", "", c7, got{nil, nil, c7, true}},
			{"a branch", "alt", b3, got{[]int{4}, []ledger.CommitID{b4}, b4, true}},
			{"a branch from its fork", "alt", c2, got{[]int{3, 4}, []ledger.CommitID{b3, b4}, b4, true}},
			// not an ancestor: the walk reaches the session's first commit
			{"elsewhere", "", b3, got{}},
			{"no such branch", "nope", c2, got{}},
		} {
			if diff := cmp.Diff(tc.want, since(tc.branch, tc.since)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.name, diff)
			}
		}

		// A critique rewrites a file: the caller must load the session.
		crit := ledger.Critique{Text: "why seven?", Model: "m", Timestamp: t0.Add(time.Hour)}
		if _, err := s.AddCritique(ctx, ledger.CritiqueRequest{Meta: w.meta, ExpectedTip: c7, ThoughtNumber: 2, Critique: crit}); err != nil {
			t.Fatal(err)
		}
		if g := since("", c1); g.OK {
			t.Errorf("across a critique: %+v, want ok false", g)
		}
	})
}
