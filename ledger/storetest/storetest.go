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
// ledger.Store is one composed interface, so every store is tested on
// every part (ledger.ChainCatchUp, ledger.SessionEditor, ...); a part a
// store may answer with "nothing to do" (no index, a lock no other process
// can reach, a catch-up it declines) is tested for what that answer must
// still keep.
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
		{"AccessLookup", testAccessLookup},
		{"SessionChecker", testSessionChecker},
		{"SessionIndexer", testSessionIndexer},
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
	if _, err := s.Verify(ctx, id, ledger.VerifyOptions{}); !errors.Is(err, ledger.ErrSessionNotFound) {
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
	for _, full := range []bool{false, true} {
		res, err := s.Verify(context.Background(), c.meta.ID, ledger.VerifyOptions{Full: full})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Valid || !res.SessionExists || !res.ManifestExists || !res.ManifestValid || len(res.Errors) != 0 {
			t.Errorf("Verify (full %v) of a sound session: %+v", full, res)
		}
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
