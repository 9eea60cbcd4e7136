// Package storetest is the contract every ledger.Store keeps, as one test
// suite that each implementation runs against itself: the ledger's fake
// store, gitstore's memory store and gitstore's disk store. A rule written
// here holds for all of them, so the ledger may rely on it and a new store
// learns what it must do by running it.
//
// Only tests import this package.
//
//	func TestStoreContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) ledger.Store { return newStore(t) })
//	}
//
// The optional abilities (ledger.ChainCatchUp, ledger.SessionEditor,
// ledger.SessionDeleter, ledger.KnowledgeStore, ledger.NotebookStore,
// ledger.NotebookDeleter, ledger.SessionLocker, ledger.AccessKeeper) are
// tested only on stores that implement them; the subtests of the others
// are skipped, saying so.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// Run runs the contract against the stores open makes. open is called once
// per subtest and must return a new, empty store (cleaned up through t).
func Run(t *testing.T, open func(t *testing.T) ledger.Store) {
	tests := []struct {
		name string
		f    func(t *testing.T, s ledger.Store)
	}{
		{"CreateAndLoadEmpty", testCreateAndLoadEmpty},
		{"CreateTwiceRefused", testCreateTwiceRefused},
		{"UnknownSession", testUnknownSession},
		{"AppendRoundTrip", testAppendRoundTrip},
		{"StaleTipIsConflict", testStaleTipIsConflict},
		{"NumberTakenRefused", testNumberTakenRefused},
		{"Branches", testBranches},
		{"NewBranchTwiceIsConflict", testNewBranchTwiceIsConflict},
		{"Revisions", testRevisions},
		{"Critique", testCritique},
		{"ListSessions", testListSessions},
		{"Verify", testVerify},
		{"RacingAppendsOneWins", testRacingAppendsOneWins},
		{"ConcurrentSessions", testConcurrentSessions},
		{"ChainCatchUp", testChainCatchUp},
		{"SessionEditor", testSessionEditor},
		{"SessionDeleter", testSessionDeleter},
		{"KnowledgeStore", testKnowledgeStore},
		{"NotebookStore", testNotebookStore},
		{"NotebookDeleter", testNotebookDeleter},
		{"SessionLocker", testSessionLocker},
		{"AccessKeeper", testAccessKeeper},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, open(t)) })
	}
}

// T0 is the creation time of the suite's sessions: whole seconds in UTC,
// as every store keeps them exactly.
var T0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

var author = ledger.Author{Name: "storetest agent", Email: "agent@storetest.invalid"}

// sessionID makes ids every store accepts (lowercase, digits, hyphens).
func sessionID(n int) string { return fmt.Sprintf("5e55104d-0000-4000-8000-%012d", n) }

func intp(n int) *int { return &n }

// chains is one writer of one session: it remembers each chain's tip as
// the ledger would.
type chains struct {
	t    *testing.T
	s    ledger.Store
	meta ledger.SessionMeta
	tips map[string]ledger.CommitID
	at   time.Time
}

func create(t *testing.T, s ledger.Store, n int) *chains {
	t.Helper()
	meta := ledger.SessionMeta{ID: sessionID(n), Title: fmt.Sprintf("Session %d", n), Description: "why the cache misses",
		Tags: []string{"cache", "debugging"}, CreatedAt: T0, UpdatedAt: T0}
	got, tip, err := s.CreateSession(context.Background(), meta, author)
	if err != nil {
		t.Fatalf("CreateSession(%s): %v", meta.ID, err)
	}
	if tip == "" {
		t.Fatalf("CreateSession(%s) returned no commit", meta.ID)
	}
	return &chains{t: t, s: s, meta: got, tips: map[string]ledger.CommitID{"": tip}, at: T0}
}

func thought(n int, text string) ledger.ThoughtData {
	return ledger.ThoughtData{Thought: text, ThoughtNumber: n, TotalThoughts: n, NextThoughtNeeded: true}
}

// try appends td to branch from the tip the writer knows; a branch it does
// not know yet is created from the main-chain commit fork.
func (c *chains) try(branch string, td ledger.ThoughtData, fork, revises ledger.CommitID) (ledger.CommitID, error) {
	c.at = c.at.Add(time.Second)
	td.Timestamp = c.at
	if branch != "" {
		td.BranchID = branch
	}
	req := ledger.AppendRequest{Meta: c.meta, Branch: branch, Thought: td, Revises: revises, Author: author}
	req.Meta.UpdatedAt = c.at
	tip, known := c.tips[branch]
	if !known {
		req.NewBranch, tip = true, fork
	}
	req.ExpectedTip = tip
	id, err := c.s.Append(context.Background(), req)
	if err == nil {
		c.tips[branch] = id
	}
	return id, err
}

func (c *chains) add(branch string, td ledger.ThoughtData) ledger.CommitID {
	c.t.Helper()
	id, err := c.try(branch, td, "", "")
	if err != nil {
		c.t.Fatalf("Append %q/%d: %v", branch, td.ThoughtNumber, err)
	}
	return id
}

func (c *chains) fork(branch string, td ledger.ThoughtData, from ledger.CommitID) ledger.CommitID {
	c.t.Helper()
	id, err := c.try(branch, td, from, "")
	if err != nil {
		c.t.Fatalf("Append new branch %q/%d: %v", branch, td.ThoughtNumber, err)
	}
	return id
}

func (c *chains) load() *ledger.StoredSession {
	c.t.Helper()
	ss, err := c.s.LoadSession(context.Background(), c.meta.ID)
	if err != nil {
		c.t.Fatalf("LoadSession(%s): %v", c.meta.ID, err)
	}
	return ss
}

func numbers(ts []ledger.StoredThought) []int {
	out := []int{}
	for _, t := range ts {
		out = append(out, t.Data.ThoughtNumber)
	}
	return out
}

func commits(ts []ledger.StoredThought) []ledger.CommitID {
	out := []ledger.CommitID{}
	for _, t := range ts {
		out = append(out, t.Commit)
	}
	return out
}

func testCreateAndLoadEmpty(t *testing.T, s ledger.Store) {
	c := create(t, s, 1)
	if c.meta.ID != sessionID(1) || c.meta.Title != "Session 1" || c.meta.Description != "why the cache misses" ||
		!slices.Equal(c.meta.Tags, []string{"cache", "debugging"}) || !c.meta.CreatedAt.Equal(T0) {
		t.Errorf("CreateSession returned %+v: the metadata asked for, with PartitionPath filled in", c.meta)
	}
	ss := c.load()
	if ss.Meta.ID != c.meta.ID || ss.Meta.Title != c.meta.Title || ss.Meta.Description != c.meta.Description ||
		!slices.Equal(ss.Meta.Tags, c.meta.Tags) || ss.Meta.PartitionPath != c.meta.PartitionPath || !ss.Meta.CreatedAt.Equal(T0) {
		t.Errorf("loaded meta %+v, created %+v", ss.Meta, c.meta)
	}
	if len(ss.Main) != 0 || len(ss.Branches) != 0 {
		t.Errorf("a new session holds %d thoughts and %d branches", len(ss.Main), len(ss.Branches))
	}
	if ss.MainTip != c.tips[""] {
		t.Errorf("MainTip %s, want the commit CreateSession returned (%s)", ss.MainTip, c.tips[""])
	}
	if !ss.Integrity.Valid {
		t.Errorf("a new session loads as damaged: %+v", ss.Integrity)
	}
}

func testCreateTwiceRefused(t *testing.T, s ledger.Store) {
	c := create(t, s, 1)
	c.add("", thought(1, "first"))
	again := c.meta
	again.Title = "an impostor"
	if _, _, err := s.CreateSession(context.Background(), again, author); err == nil {
		t.Fatal("a second CreateSession with the same id succeeded")
	}
	ss := c.load()
	if ss.Meta.Title != "Session 1" || len(ss.Main) != 1 || ss.MainTip != c.tips[""] {
		t.Errorf("the refused create changed the session: %+v, %d thoughts", ss.Meta, len(ss.Main))
	}
}

func testUnknownSession(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	id := sessionID(404)
	if _, err := s.LoadSession(ctx, id); !errors.Is(err, ledger.ErrSessionNotFound) {
		t.Errorf("LoadSession of an unknown id: %v, want ErrSessionNotFound", err)
	}
	if _, err := s.Verify(ctx, id); !errors.Is(err, ledger.ErrSessionNotFound) {
		t.Errorf("Verify of an unknown id: %v, want ErrSessionNotFound", err)
	}
	// Appending needs a tip, which an unknown session cannot have had.
	c := create(t, s, 1)
	req := ledger.AppendRequest{Meta: ledger.SessionMeta{ID: id, CreatedAt: T0}, ExpectedTip: c.tips[""], Thought: thought(1, "lost"), Author: author}
	req.Thought.Timestamp = T0
	if _, err := s.Append(ctx, req); err == nil {
		t.Error("Append to an unknown session succeeded")
	}
	if _, err := s.LoadSession(ctx, id); !errors.Is(err, ledger.ErrSessionNotFound) {
		t.Errorf("after a refused Append, LoadSession: %v, want ErrSessionNotFound", err)
	}
}

func testAppendRoundTrip(t *testing.T, s ledger.Store) {
	c := create(t, s, 1)
	var want []ledger.CommitID
	for n := 1; n <= 5; n++ {
		td := thought(n, fmt.Sprintf("step %d\n\nwith a second paragraph, ünïcode and \"quotes\"", n))
		td.NeedsMoreThoughts = n == 2
		td.TotalThoughts = 7
		want = append(want, c.add("", td))
	}
	if len(slices.Compact(slices.Clone(want))) != len(want) {
		t.Fatalf("Append returned repeated commits: %v", want)
	}
	ss := c.load()
	if !slices.Equal(numbers(ss.Main), []int{1, 2, 3, 4, 5}) {
		t.Fatalf("main chain %v, want 1..5 in commit order", numbers(ss.Main))
	}
	if !slices.Equal(commits(ss.Main), want) {
		t.Errorf("loaded commits %v, want those Append returned %v", commits(ss.Main), want)
	}
	if ss.MainTip != want[4] {
		t.Errorf("MainTip %s, want the last append %s", ss.MainTip, want[4])
	}
	for i, th := range ss.Main {
		d := th.Data
		if !strings.HasPrefix(d.Thought, fmt.Sprintf("step %d\n\nwith", i+1)) || d.TotalThoughts != 7 || !d.NextThoughtNeeded ||
			d.NeedsMoreThoughts != (i == 1) || !d.Timestamp.Equal(T0.Add(time.Duration(i+1)*time.Second)) {
			t.Errorf("thought %d read back as %+v", i+1, d)
		}
	}
	if !ss.Meta.UpdatedAt.Equal(T0.Add(5 * time.Second)) {
		t.Errorf("UpdatedAt %s, want the last thought's timestamp", ss.Meta.UpdatedAt)
	}
	// Numbers are the ledger's: gaps and a number below the last are stored
	// as given, in commit order.
	c.add("", thought(9, "a gap"))
	c.add("", thought(7, "backwards"))
	if got := numbers(c.load().Main); !slices.Equal(got, []int{1, 2, 3, 4, 5, 9, 7}) {
		t.Errorf("after a gap and a lower number: %v", got)
	}
}

func testStaleTipIsConflict(t *testing.T, s ledger.Store) {
	c := create(t, s, 1)
	start := c.tips[""]
	c.add("", thought(1, "one"))
	two := c.add("", thought(2, "two"))

	c.tips[""] = start // a writer that did not see thoughts 1 and 2
	if _, err := c.try("", thought(3, "stale"), "", ""); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("Append from a stale tip: %v, want ErrConflict", err)
	}
	ss := c.load()
	if !slices.Equal(numbers(ss.Main), []int{1, 2}) || ss.MainTip != two {
		t.Fatalf("the refused append changed the chain: %v, tip %s", numbers(ss.Main), ss.MainTip)
	}
	c.tips[""] = ss.MainTip
	c.add("", thought(3, "three"))
	if got := numbers(c.load().Main); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("after catching up: %v", got)
	}
}

func testNumberTakenRefused(t *testing.T, s ledger.Store) {
	c := create(t, s, 1)
	c.add("", thought(1, "one"))
	tip := c.add("", thought(2, "two"))
	if _, err := c.try("", thought(2, "two again"), "", ""); err == nil {
		t.Fatal("a second thought 2 on the same chain was stored")
	}
	ss := c.load()
	if !slices.Equal(numbers(ss.Main), []int{1, 2}) || ss.Main[1].Data.Thought != "two" || ss.MainTip != tip {
		t.Errorf("the refused append changed the chain: %v %q", numbers(ss.Main), ss.Main[1].Data.Thought)
	}
}

func testBranches(t *testing.T, s ledger.Store) {
	c := create(t, s, 1)
	var main []ledger.CommitID
	for n := 1; n <= 3; n++ {
		main = append(main, c.add("", thought(n, fmt.Sprintf("main %d", n))))
	}
	a4 := thought(4, "what if redis")
	a4.BranchFromThought = intp(2)
	b1 := c.fork("alt", a4, main[1])
	a5 := thought(5, "redis is faster")
	a5.BranchFromThought = intp(2)
	b2 := c.add("alt", a5)
	// The same number on another chain is no conflict.
	o3 := thought(3, "other view of 3")
	o3.BranchFromThought = intp(2)
	c.fork("other", o3, main[1])
	c.add("", thought(4, "main goes on"))

	ss := c.load()
	if !slices.Equal(numbers(ss.Main), []int{1, 2, 3, 4}) {
		t.Errorf("main chain %v: branch thoughts must stay off it", numbers(ss.Main))
	}
	if ss.MainTip != c.tips[""] {
		t.Errorf("MainTip %s, want %s", ss.MainTip, c.tips[""])
	}
	if len(ss.Branches) != 2 {
		t.Fatalf("%d branches, want alt and other: %+v", len(ss.Branches), ss.Branches)
	}
	byID := map[string]ledger.StoredBranch{}
	for _, b := range ss.Branches {
		byID[b.ID] = b
	}
	alt := byID["alt"]
	if alt.ForkCommit != main[1] || alt.Tip != b2 || !slices.Equal(commits(alt.Thoughts), []ledger.CommitID{b1, b2}) ||
		!slices.Equal(numbers(alt.Thoughts), []int{4, 5}) {
		t.Errorf("branch alt: fork %s tip %s thoughts %v %v; want fork %s tip %s", alt.ForkCommit, alt.Tip,
			numbers(alt.Thoughts), commits(alt.Thoughts), main[1], b2)
	}
	if d := alt.Thoughts[0].Data; d.BranchID != "alt" || d.BranchFromThought == nil || *d.BranchFromThought != 2 {
		t.Errorf("branch thought read back as %+v", d)
	}
	if o := byID["other"]; o.ForkCommit != main[1] || !slices.Equal(numbers(o.Thoughts), []int{3}) {
		t.Errorf("branch other: %+v", o)
	}
	// A stale branch tip is a conflict like a stale main tip.
	c.tips["alt"] = b1
	a6 := thought(6, "stale")
	a6.BranchFromThought = intp(2)
	if _, err := c.try("alt", a6, "", ""); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("Append to a branch from a stale tip: %v, want ErrConflict", err)
	}
}

func testNewBranchTwiceIsConflict(t *testing.T, s ledger.Store) {
	c := create(t, s, 1)
	one := c.add("", thought(1, "one"))
	td := thought(2, "first writer's branch")
	td.BranchFromThought = intp(1)
	c.fork("alt", td, one)
	delete(c.tips, "alt") // a second writer that did not see the branch
	td.Thought = "second writer's branch"
	if _, err := c.try("alt", td, one, ""); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("creating an existing branch: %v, want ErrConflict", err)
	}
	ss := c.load()
	if len(ss.Branches) != 1 || len(ss.Branches[0].Thoughts) != 1 || ss.Branches[0].Thoughts[0].Data.Thought != "first writer's branch" {
		t.Errorf("branches after the refused create: %+v", ss.Branches)
	}
}

func testRevisions(t *testing.T, s ledger.Store) {
	c := create(t, s, 1)
	c.add("", thought(1, "one"))
	three := c.add("", thought(2, "the cache is cold"))
	rev := thought(3, "correction: the cache is warm")
	rev.IsRevision, rev.RevisesThought = true, intp(2)
	id, err := c.try("", rev, "", three)
	if err != nil {
		t.Fatal(err)
	}
	ss := c.load()
	if len(ss.Main) != 3 || ss.Main[2].Commit != id {
		t.Fatalf("main chain %v", numbers(ss.Main))
	}
	if d := ss.Main[2].Data; !d.IsRevision || d.RevisesThought == nil || *d.RevisesThought != 2 {
		t.Errorf("revision read back as %+v", d)
	}
	if ss.Main[1].Data.Thought != "the cache is cold" {
		t.Errorf("the revised thought was changed: %q", ss.Main[1].Data.Thought)
	}
}

func testCritique(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	c := create(t, s, 1)
	one := c.add("", thought(1, "one"))
	c.add("", thought(2, "two"))
	crit := ledger.Critique{Text: "assumes the cache is warm", Model: "critic-model", Timestamp: T0.Add(time.Hour)}
	req := ledger.CritiqueRequest{Meta: c.meta, ExpectedTip: c.tips[""], ThoughtNumber: 1, Critique: crit,
		Author: ledger.Author{Name: "critic-model"}}
	tip, err := s.AddCritique(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if tip == "" || tip == c.tips[""] {
		t.Fatalf("AddCritique returned %q: a critique is a commit of its own", tip)
	}
	stale := req
	stale.ThoughtNumber = 2 // from the tip before the critique
	if _, err := s.AddCritique(ctx, stale); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("critique from a stale tip: %v, want ErrConflict", err)
	}
	missing := req
	missing.ExpectedTip, missing.ThoughtNumber = tip, 9
	if _, err := s.AddCritique(ctx, missing); !errors.Is(err, ledger.ErrThoughtNotFound) {
		t.Errorf("critique of a missing thought: %v, want ErrThoughtNotFound", err)
	}
	ss := c.load()
	if ss.MainTip != tip {
		t.Errorf("MainTip %s, want the critique's commit %s", ss.MainTip, tip)
	}
	got := ss.Main[0]
	if got.Data.Critique == nil || got.Data.Critique.Text != crit.Text || got.Data.Critique.Model != crit.Model || got.Data.Thought != "one" {
		t.Errorf("thought 1 read back as %+v", got.Data)
	}
	if got.Commit != one {
		t.Errorf("thought 1 maps to %s, want the commit that recorded it (%s)", got.Commit, one)
	}
	if ss.Main[1].Data.Critique != nil {
		t.Errorf("thought 2 got a critique: %+v", ss.Main[1].Data.Critique)
	}
	// The chain goes on from the critique's commit.
	c.tips[""] = tip
	c.add("", thought(3, "three"))
	if got := numbers(c.load().Main); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("after a critique and a thought: %v", got)
	}

	// On a branch.
	td := thought(4, "branch")
	td.BranchFromThought = intp(2)
	c.fork("alt", td, c.load().Main[1].Commit)
	breq := ledger.CritiqueRequest{Meta: c.meta, Branch: "alt", ExpectedTip: c.tips["alt"], ThoughtNumber: 4, Critique: crit, Author: author}
	if _, err := s.AddCritique(ctx, breq); err != nil {
		t.Fatalf("critique on a branch: %v", err)
	}
	for _, b := range c.load().Branches {
		if b.ID == "alt" && (len(b.Thoughts) != 1 || b.Thoughts[0].Data.Critique == nil) {
			t.Errorf("branch thought read back as %+v", b.Thoughts)
		}
	}
}

func testListSessions(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	if list, err := s.ListSessions(ctx); err != nil || len(list) != 0 {
		t.Fatalf("a new store lists %+v, %v", list, err)
	}
	a := create(t, s, 1)
	one := a.add("", thought(1, "one"))
	a.add("", thought(2, "two"))
	td := thought(2, "branch")
	td.BranchFromThought = intp(1)
	a.fork("alt", td, one)
	b := create(t, s, 2)
	_ = b

	list, err := s.ListSessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Meta.ID < list[j].Meta.ID })
	if len(list) != 2 {
		t.Fatalf("listed %d sessions, want 2: %+v", len(list), list)
	}
	if l := list[0]; l.Meta.ID != a.meta.ID || l.ThoughtCount != 3 || l.BranchCount != 1 || l.Meta.Title != "Session 1" ||
		!slices.Equal(l.Meta.Tags, []string{"cache", "debugging"}) || !l.Meta.UpdatedAt.Equal(T0.Add(3*time.Second)) {
		t.Errorf("summary of session 1: %+v; want 3 thoughts (branch ones too), 1 branch, updated at its last thought", l)
	}
	if l := list[1]; l.Meta.ID != b.meta.ID || l.ThoughtCount != 0 || l.BranchCount != 0 || !l.Meta.UpdatedAt.Equal(T0) {
		t.Errorf("summary of an empty session: %+v", l)
	}
	// A listing follows later writes.
	a.add("", thought(3, "three"))
	list, _ = s.ListSessions(ctx)
	for _, l := range list {
		if l.Meta.ID == a.meta.ID && l.ThoughtCount != 4 {
			t.Errorf("after one more thought the summary says %d", l.ThoughtCount)
		}
	}
}

func testVerify(t *testing.T, s ledger.Store) {
	c := create(t, s, 1)
	one := c.add("", thought(1, "one"))
	td := thought(2, "branch")
	td.BranchFromThought = intp(1)
	c.fork("alt", td, one)
	res, err := s.Verify(context.Background(), c.meta.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Valid || !res.SessionExists || !res.ManifestExists || !res.ManifestValid || len(res.Errors) != 0 {
		t.Errorf("Verify of a sound session: %+v", res)
	}
}

// testRacingAppendsOneWins: writers that all numbered against the same tip
// race; exactly one commits and every other gets ErrConflict.
func testRacingAppendsOneWins(t *testing.T, s ledger.Store) {
	c := create(t, s, 1)
	tip := c.add("", thought(1, "one"))
	const racers = 8
	var wg sync.WaitGroup
	errs := make([]error, racers)
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			td := thought(2, fmt.Sprintf("racer %d", i))
			td.Timestamp = T0.Add(time.Minute)
			_, errs[i] = s.Append(context.Background(), ledger.AppendRequest{Meta: c.meta, ExpectedTip: tip, Thought: td, Author: author})
		}()
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ledger.ErrConflict):
			t.Errorf("racer %d: %v, want success or ErrConflict", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d racers committed from one tip, want exactly 1", won)
	}
	if got := numbers(c.load().Main); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("main chain after the race: %v", got)
	}
}

// testConcurrentSessions: sessions are written in parallel and none loses
// a thought or takes another's.
func testConcurrentSessions(t *testing.T, s ledger.Store) {
	const sessions, perSession = 8, 12
	ws := make([]*chains, sessions)
	for i := range ws {
		ws[i] = create(t, s, i+1)
	}
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1; n <= perSession; n++ {
				if _, err := w.try("", thought(n, fmt.Sprintf("%s thought %d", w.meta.ID, n)), "", ""); err != nil {
					errs <- fmt.Errorf("%s/%d: %w", w.meta.ID, n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, w := range ws {
		ss := w.load()
		if len(ss.Main) != perSession || ss.MainTip != w.tips[""] {
			t.Errorf("%s: %d thoughts, tip %s; want %d, %s", w.meta.ID, len(ss.Main), ss.MainTip, perSession, w.tips[""])
			continue
		}
		for i, th := range ss.Main {
			if th.Data.Thought != fmt.Sprintf("%s thought %d", w.meta.ID, i+1) {
				t.Errorf("%s holds %q", w.meta.ID, th.Data.Thought)
			}
		}
	}
	list, err := s.ListSessions(context.Background())
	if err != nil || len(list) != sessions {
		t.Errorf("listed %d sessions (%v), want %d", len(list), err, sessions)
	}
}

func testChainCatchUp(t *testing.T, s ledger.Store) {
	cu := ability[ledger.ChainCatchUp](t, s)
	ctx := context.Background()
	c := create(t, s, 1)
	start := c.tips[""]
	c1 := c.add("", thought(1, "one"))
	c2 := c.add("", thought(2, "two"))
	c7 := c.add("", thought(7, "seven"))
	td := thought(3, "alt three")
	td.BranchFromThought = intp(2)
	b3 := c.fork("alt", td, c2)
	td.ThoughtNumber, td.Thought = 4, "alt four"
	b4 := c.add("alt", td)

	for _, tc := range []struct {
		name    string
		branch  string
		since   ledger.CommitID
		numbers []int
		commits []ledger.CommitID
		tip     ledger.CommitID
	}{
		{"from the start", "", start, []int{1, 2, 7}, []ledger.CommitID{c1, c2, c7}, c7},
		{"from thought 1", "", c1, []int{2, 7}, []ledger.CommitID{c2, c7}, c7},
		{"up to date", "", c7, []int{}, []ledger.CommitID{}, c7},
		{"a branch", "alt", b3, []int{4}, []ledger.CommitID{b4}, b4},
		{"a branch from its fork", "alt", c2, []int{3, 4}, []ledger.CommitID{b3, b4}, b4},
	} {
		th, tip, ok, err := cu.ThoughtsSince(ctx, c.meta.ID, tc.branch, tc.since)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		// A store may decline (ok false); when it answers, it answers right.
		if ok && (!slices.Equal(numbers(th), tc.numbers) || !slices.Equal(commits(th), tc.commits) || tip != tc.tip) {
			t.Errorf("%s: %v %v tip %s; want %v %v tip %s", tc.name, numbers(th), commits(th), tip, tc.numbers, tc.commits, tc.tip)
		}
	}
	// Whatever is not only new thoughts on that chain must not be answered
	// as if it were: a critique rewrote thought 2.
	crit := ledger.Critique{Text: "why seven?", Model: "m", Timestamp: T0.Add(time.Hour)}
	if _, err := s.AddCritique(ctx, ledger.CritiqueRequest{Meta: c.meta, ExpectedTip: c7, ThoughtNumber: 2, Critique: crit, Author: author}); err != nil {
		t.Fatal(err)
	}
	if th, _, ok, err := cu.ThoughtsSince(ctx, c.meta.ID, "", c1); err != nil || ok {
		t.Errorf("across a critique: %v, ok %v, %v; want ok false", numbers(th), ok, err)
	}
	// A commit that is not on the chain.
	if _, _, ok, err := cu.ThoughtsSince(ctx, c.meta.ID, "", b3); err != nil || ok {
		t.Errorf("since a commit of another chain: ok %v, %v; want ok false", ok, err)
	}
}

func testSessionEditor(t *testing.T, s ledger.Store) {
	ed := ability[ledger.SessionEditor](t, s)
	ctx := context.Background()
	c := create(t, s, 1)
	c.add("", thought(1, "one"))
	meta := c.meta
	meta.Title, meta.Description, meta.Tags, meta.UpdatedAt = "Why the cache really misses", "", []string{"cache"}, T0.Add(time.Hour)
	tip, err := ed.UpdateSession(ctx, ledger.UpdateSessionRequest{Meta: meta, ExpectedTip: c.tips[""], Changed: []string{"title", "description", "tags"}, Author: author})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ed.UpdateSession(ctx, ledger.UpdateSessionRequest{Meta: c.meta, ExpectedTip: c.tips[""], Changed: []string{"title"}, Author: author}); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("UpdateSession from a stale tip: %v, want ErrConflict", err)
	}
	ss := c.load()
	if ss.MainTip != tip || ss.Meta.Title != meta.Title || ss.Meta.Description != "" || !slices.Equal(ss.Meta.Tags, []string{"cache"}) {
		t.Errorf("after UpdateSession: tip %s (want %s), meta %+v", ss.MainTip, tip, ss.Meta)
	}
	if !ss.Meta.CreatedAt.Equal(T0) {
		t.Errorf("UpdateSession changed CreatedAt to %s", ss.Meta.CreatedAt)
	}
	if len(ss.Main) != 1 || ss.Main[0].Data.Thought != "one" {
		t.Errorf("UpdateSession changed the thoughts: %+v", ss.Main)
	}
}

func testSessionDeleter(t *testing.T, s ledger.Store) {
	d := ability[ledger.SessionDeleter](t, s)
	ctx := context.Background()
	c := create(t, s, 1)
	one := c.add("", thought(1, "one"))
	td := thought(2, "branch")
	td.BranchFromThought = intp(1)
	c.fork("alt", td, one)
	keep := create(t, s, 2)
	before := c.load()

	if list, err := d.DeletedSessions(); err != nil || len(list) != 0 {
		t.Fatalf("deleted sessions of a new store: %+v, %v", list, err)
	}
	ds, err := d.DeleteSession(ctx, c.meta.ID, c.meta.Title, author, T0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if ds.ID != c.meta.ID || !ds.DeletedAt.Equal(T0.Add(time.Hour)) || ds.DeletedBy != author.Name {
		t.Errorf("DeleteSession returned %+v", ds)
	}
	if _, err := s.LoadSession(ctx, c.meta.ID); !errors.Is(err, ledger.ErrSessionNotFound) {
		t.Errorf("LoadSession of a deleted session: %v, want ErrSessionNotFound", err)
	}
	list, err := s.ListSessions(ctx)
	if err != nil || len(list) != 1 || list[0].Meta.ID != keep.meta.ID {
		t.Errorf("listing after a delete: %+v, %v; want only %s", list, err, keep.meta.ID)
	}
	deleted, err := d.DeletedSessions()
	if err != nil || len(deleted) != 1 || deleted[0].ID != c.meta.ID {
		t.Errorf("DeletedSessions: %+v, %v", deleted, err)
	}
	if _, err := d.DeleteSession(ctx, sessionID(404), "", author, T0); !errors.Is(err, ledger.ErrSessionNotFound) {
		t.Errorf("deleting an unknown session: %v, want ErrSessionNotFound", err)
	}
	if _, err := d.RestoreSession(ctx, keep.meta.ID); !errors.Is(err, ledger.ErrSessionNotFound) {
		t.Errorf("restoring a session that is not deleted: %v, want ErrSessionNotFound", err)
	}

	if _, err := d.RestoreSession(ctx, c.meta.ID); err != nil {
		t.Fatal(err)
	}
	after := c.load()
	if after.MainTip != before.MainTip || !slices.Equal(commits(after.Main), commits(before.Main)) || len(after.Branches) != 1 ||
		after.Branches[0].Tip != before.Branches[0].Tip {
		t.Errorf("restored session differs: %+v, was %+v", after, before)
	}
	if deleted, err := d.DeletedSessions(); err != nil || len(deleted) != 0 {
		t.Errorf("DeletedSessions after restore: %+v, %v", deleted, err)
	}
	c.add("", thought(2, "after the restore"))
}

func testKnowledgeStore(t *testing.T, s ledger.Store) {
	ks := ability[ledger.KnowledgeStore](t, s)
	ctx := context.Background()
	if list, err := ks.ListKnowledge(ctx, ledger.KindPattern); err != nil || len(list) != 0 {
		t.Fatalf("patterns of a new store: %+v, %v", list, err)
	}
	if _, err := ks.ReadKnowledge(ctx, ledger.KindPattern, "nope"); !errors.Is(err, ledger.ErrKnowledgeNotFound) {
		t.Errorf("reading a missing pattern: %v, want ErrKnowledgeNotFound", err)
	}
	p := ledger.KnowledgeEntry{Kind: ledger.KindPattern, ID: "cache-warmup", Title: "Warm the cache first", Description: "what worked",
		Tags: []string{"cache"}, DerivedFromSessions: []string{sessionID(1)}, CreatedBy: "agent", Content: "Warm it.\n",
		CreatedAt: T0, UpdatedAt: T0}
	v1, err := ks.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: p, Author: author, When: T0})
	if err != nil || v1 == "" {
		t.Fatalf("create a pattern: %q, %v", v1, err)
	}
	if _, err := ks.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: p, Author: author, When: T0}); !errors.Is(err, ledger.ErrKnowledgeChanged) {
		t.Errorf("creating a pattern that exists: %v, want ErrKnowledgeChanged", err)
	}
	note := ledger.KnowledgeEntry{Kind: ledger.KindNote, ID: "todo", Title: "To do", Content: "check the TTL", CreatedAt: T0, UpdatedAt: T0}
	if _, err := ks.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: note, Author: author, When: T0}); err != nil {
		t.Fatal(err)
	}
	got, err := ks.ReadKnowledge(ctx, ledger.KindPattern, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != v1 || got.Title != p.Title || got.Description != p.Description || got.Content != p.Content ||
		!slices.Equal(got.Tags, p.Tags) || !slices.Equal(got.DerivedFromSessions, p.DerivedFromSessions) || !got.CreatedAt.Equal(T0) {
		t.Errorf("pattern read back as %+v", got)
	}
	if list, err := ks.ListKnowledge(ctx, ledger.KindPattern); err != nil || len(list) != 1 || list[0].ID != p.ID {
		t.Errorf("patterns: %+v, %v; notes must not be listed with them", list, err)
	}

	p2 := p
	p2.Content, p2.UpdatedAt = "Warm it, then measure.\n", T0.Add(time.Hour)
	v2, err := ks.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: p2, Expected: v1, Author: author, When: p2.UpdatedAt})
	if err != nil || v2 == "" || v2 == v1 {
		t.Fatalf("update: %q, %v", v2, err)
	}
	p3 := p
	p3.Content = "a writer that read version 1"
	if _, err := ks.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: p3, Expected: v1, Author: author, When: T0}); !errors.Is(err, ledger.ErrKnowledgeChanged) {
		t.Errorf("update from a stale version: %v, want ErrKnowledgeChanged", err)
	}
	if got, _ := ks.ReadKnowledge(ctx, ledger.KindPattern, p.ID); got.Content != p2.Content {
		t.Errorf("after a refused update the pattern reads %q", got.Content)
	}
	// An entry's version is its own: writing the note did not conflict,
	// and deleting it does not change the pattern.
	n, err := ks.ReadKnowledge(ctx, ledger.KindNote, "todo")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := ks.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: n, Delete: true, Expected: n.Version, Author: author, When: T0}); err != nil || v != "" {
		t.Fatalf("delete: %q, %v", v, err)
	}
	if _, err := ks.ReadKnowledge(ctx, ledger.KindNote, "todo"); !errors.Is(err, ledger.ErrKnowledgeNotFound) {
		t.Errorf("reading a deleted note: %v, want ErrKnowledgeNotFound", err)
	}
	if got, err := ks.ReadKnowledge(ctx, ledger.KindPattern, p.ID); err != nil || got.Version != v2 {
		t.Errorf("the pattern after deleting a note: %+v, %v", got, err)
	}
}

func testNotebookStore(t *testing.T, s ledger.Store) {
	ns := ability[ledger.NotebookStore](t, s)
	ctx := context.Background()
	if list, err := ns.ListNotebooks(ctx); err != nil || len(list) != 0 {
		t.Fatalf("notebooks of a new store: %+v, %v", list, err)
	}
	if _, _, err := ns.ReadNotebook(ctx, "nope"); !errors.Is(err, ledger.ErrNotebookNotFound) {
		t.Errorf("reading a missing notebook: %v, want ErrNotebookNotFound", err)
	}
	files := map[string][]byte{"notebook.json": []byte(`{"title":"probe"}` + "\n"), "cells/01-setup.md": []byte("# setup\n")}
	w := ledger.NotebookWrite{ID: "probe", Files: files, Message: "Create notebook probe", Author: author, When: T0}
	tip1, err := ns.WriteNotebook(ctx, w)
	if err != nil || tip1 == "" {
		t.Fatalf("create: %q, %v", tip1, err)
	}
	if _, err := ns.WriteNotebook(ctx, w); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("creating a notebook that exists: %v, want ErrConflict", err)
	}
	got, tip, err := ns.ReadNotebook(ctx, "probe")
	if err != nil || tip != tip1 || len(got) != 2 || string(got["cells/01-setup.md"]) != "# setup\n" {
		t.Errorf("read back: %q, tip %s (want %s), %v", got, tip, tip1, err)
	}
	// The files written are the whole folder: one not listed is removed.
	w2 := ledger.NotebookWrite{ID: "probe", ExpectedTip: tip1, Message: "Replace cell", Author: author, When: T0.Add(time.Minute),
		Files: map[string][]byte{"notebook.json": files["notebook.json"], "cells/02-check.md": []byte("# check\n")}}
	tip2, err := ns.WriteNotebook(ctx, w2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ns.WriteNotebook(ctx, w2); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("a write from a stale tip: %v, want ErrConflict", err)
	}
	got, tip, err = ns.ReadNotebook(ctx, "probe")
	if _, old := got["cells/01-setup.md"]; err != nil || tip != tip2 || old || len(got) != 2 {
		t.Errorf("after replacing the folder: %q, tip %s (want %s), %v", got, tip, tip2, err)
	}
	list, err := ns.ListNotebooks(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "probe" || list[0].Tip != tip2 {
		t.Errorf("notebooks: %+v, %v", list, err)
	}
	// Notebooks are no sessions.
	if sums, err := s.ListSessions(ctx); err != nil || len(sums) != 0 {
		t.Errorf("sessions of a store with one notebook: %+v, %v", sums, err)
	}
}

func testNotebookDeleter(t *testing.T, s ledger.Store) {
	nd := ability[ledger.NotebookDeleter](t, s)
	ns := ability[ledger.NotebookStore](t, s)
	ctx := context.Background()
	if _, err := nd.DeleteNotebook(ctx, "nope", "", author, T0); !errors.Is(err, ledger.ErrNotebookNotFound) {
		t.Errorf("deleting a missing notebook: %v, want ErrNotebookNotFound", err)
	}
	write := func(id string, expected ledger.CommitID, body string) ledger.CommitID {
		t.Helper()
		tip, err := ns.WriteNotebook(ctx, ledger.NotebookWrite{ID: id, ExpectedTip: expected, Message: "Write " + body, Author: author, When: T0,
			Files: map[string][]byte{"notebook.json": []byte(body + "\n")}})
		if err != nil {
			t.Fatal(err)
		}
		return tip
	}
	tip1 := write("gone", "", "first")
	tip2 := write("gone", tip1, "second")
	write("kept", "", "other")
	if _, err := nd.DeleteNotebook(ctx, "gone", tip1, author, T0); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("deleting from a stale tip: %v, want ErrConflict", err)
	}
	if _, _, err := ns.ReadNotebook(ctx, "gone"); err != nil {
		t.Fatalf("a refused delete removed the notebook: %v", err)
	}
	d, err := nd.DeleteNotebook(ctx, "gone", tip2, author, T0.Add(time.Minute))
	if err != nil || d.ID != "gone" || d.Tip != tip2 {
		t.Fatalf("delete: %+v, %v (want tip %s)", d, err, tip2)
	}
	if _, _, err := ns.ReadNotebook(ctx, "gone"); !errors.Is(err, ledger.ErrNotebookNotFound) {
		t.Errorf("reading a deleted notebook: %v, want ErrNotebookNotFound", err)
	}
	if list, err := ns.ListNotebooks(ctx); err != nil || len(list) != 1 || list[0].ID != "kept" {
		t.Errorf("notebooks after a delete: %+v, %v", list, err)
	}
	if _, err := nd.DeleteNotebook(ctx, "gone", "", author, T0); !errors.Is(err, ledger.ErrNotebookNotFound) {
		t.Errorf("deleting it twice: %v, want ErrNotebookNotFound", err)
	}
	// The id is free again, and its new notebook can be deleted in turn.
	again := write("gone", "", "third")
	if d2, err := nd.DeleteNotebook(ctx, "gone", "", author, T0); err != nil || d2.Tip != again {
		t.Errorf("deleting a second notebook of the id: %+v, %v", d2, err)
	}
}

func testSessionLocker(t *testing.T, s ledger.Store) {
	sl := ability[ledger.SessionLocker](t, s)
	ctx := context.Background()
	c := create(t, s, 1)
	unlock, err := sl.LockSession(ctx, c.meta.ID)
	if err != nil || unlock == nil {
		t.Fatalf("LockSession: %v", err)
	}
	// The lock is no obstacle to the holder's writes, nor to other sessions.
	c.add("", thought(1, "under the lock"))
	other, err := sl.LockSession(ctx, sessionID(2))
	if err != nil {
		t.Fatalf("locking another session while one is held: %v", err)
	}
	other()
	unlock()
	// Let go, it can be taken again.
	again, err := sl.LockSession(ctx, c.meta.ID)
	if err != nil {
		t.Fatalf("LockSession after unlock: %v", err)
	}
	again()
}

func testAccessKeeper(t *testing.T, s ledger.Store) {
	ak := ability[ledger.AccessKeeper](t, s)
	c := create(t, s, 1)
	at := T0.Add(2 * time.Hour)
	ak.RecordAccess(c.meta.ID, at)
	if got := ak.Accessed()[c.meta.ID]; !got.Equal(at) {
		t.Errorf("Accessed()[%s] = %s, want %s", c.meta.ID, got, at)
	}
	// Recording access is no commit.
	if ss := c.load(); ss.MainTip != c.tips[""] {
		t.Errorf("RecordAccess moved the main chain to %s", ss.MainTip)
	}
}

// ability returns s as the optional store ability T, or skips the test
// when the store does not have it.
func ability[T any](t *testing.T, s ledger.Store) T {
	t.Helper()
	a, ok := s.(T)
	if !ok {
		t.Skipf("the store is not a %s", strings.TrimPrefix(fmt.Sprintf("%T", (*T)(nil)), "*"))
	}
	return a
}
