package gitstore

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestPrepareKeepsTheCommits writes the same thoughts to two memory
// stores, one prepared for the next thought after every append and one
// not, and requires the same commit for every thought: on the main chain
// past thought 999 (where the file names stop sorting in order), with a
// skipped number, with timestamps whose encoded length changes, and on a
// branch. It also requires that most hashes begun ahead were used, so
// that the comparison covers them.
func TestPrepareKeepsTheCommits(t *testing.T) {
	ctx := context.Background()
	author := ledger.Author{Name: "agent"}
	open := func() *Store {
		s, err := OpenMemory(Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	plain, prepared := open(), open()
	prepared.Prepare() // the first call turns the queue on
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	meta := ledger.SessionMeta{ID: "prep", Title: "prepared", CreatedAt: t0}
	var tips [2]ledger.CommitID
	for i, s := range []*Store{plain, prepared} {
		var err error
		if meta, tips[i], err = s.CreateSession(ctx, meta, author); err != nil {
			t.Fatal(err)
		}
	}
	begun, used := 0, 0
	appendBoth := func(req ledger.AppendRequest, tip *[2]ledger.CommitID) {
		t.Helper()
		var ids [2]ledger.CommitID
		for i, s := range []*Store{plain, prepared} {
			r := req
			r.ExpectedTip = tip[i]
			var cs *chainState
			if i == 1 {
				s.Prepare()
				cs = s.chain(chainRef(meta.ID, req.Branch))
			}
			var aheads []*object.Ahead
			if cs != nil && cs.valid {
				if a := &cs.manifest.ahead; a.Begun() {
					aheads = append(aheads, a)
				}
				for _, pt := range cs.path {
					if pt.ahead.Begun() {
						aheads = append(aheads, &pt.ahead)
					}
				}
			}
			id, err := s.Append(ctx, r)
			if err != nil {
				t.Fatalf("thought %d on %q: %v", req.Thought.ThoughtNumber, req.Branch, err)
			}
			ids[i] = id
			for _, a := range aheads {
				begun++
				if a.Used() {
					used++
				}
			}
		}
		if ids[0] != ids[1] {
			t.Fatalf("thought %d on %q: commit %s prepared, %s not", req.Thought.ThoughtNumber, req.Branch, ids[1], ids[0])
		}
		*tip = ids
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var fork [2]ledger.CommitID
	n := 0
	for k := 1; k <= 1010; k++ {
		n++
		if k == 500 {
			n += 2 // a skipped number: the guess is wrong once
		}
		td := benchThought(n)
		// Mostly nanoseconds, as a clock gives them, some of which end
		// in zeros, and now and then whole seconds or milliseconds: the
		// manifest's updatedAt changes length.
		td.Timestamp = t0.Add(time.Duration(k)*time.Second + time.Duration(rng.Int64N(1e9)))
		switch {
		case k%50 == 0:
			td.Timestamp = td.Timestamp.Truncate(time.Second)
		case k%37 == 0:
			td.Timestamp = td.Timestamp.Truncate(time.Millisecond)
		}
		appendBoth(ledger.AppendRequest{Meta: meta, Thought: td, Author: author}, &tips)
		if n == 20 {
			fork = tips
		}
	}
	// A branch from thought 20, and the main chain again between its
	// thoughts.
	btips := fork
	for k := 0; k < 40; k++ {
		td := benchThought(21 + k)
		td.BranchFromThought, td.BranchID = ptr(20), "alt"
		td.Timestamp = t0.Add(time.Hour + time.Duration(k)*time.Second + time.Duration(rng.Int64N(1e9)))
		appendBoth(ledger.AppendRequest{Meta: meta, Branch: "alt", NewBranch: k == 0, Thought: td, Author: author}, &btips)
		if k%10 == 9 {
			n++
			td := benchThought(n)
			td.Timestamp = t0.Add(2*time.Hour + time.Duration(k)*time.Second + time.Duration(rng.Int64N(1e9)))
			appendBoth(ledger.AppendRequest{Meta: meta, Thought: td, Author: author}, &tips)
		}
	}
	t.Logf("%d hashes begun ahead, %d used", begun, used)
	if begun < 1500 || used < begun*3/4 {
		t.Fatalf("%d hashes begun ahead, %d used: the guesses should mostly be right", begun, used)
	}
}

func ptr(n int) *int { return &n }
