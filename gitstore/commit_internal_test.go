package gitstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/ledger"
)

func TestRetryCAS(t *testing.T) {
	ctx := context.Background()
	calls := 0
	err := retryCAS(ctx, func(attempt int) error {
		calls++
		if attempt != calls {
			t.Fatalf("attempt %d on call %d", attempt, calls)
		}
		if attempt < 3 {
			return errConflict
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("won on the third try: err %v after %d calls", err, calls)
	}

	other := errors.New("disk full")
	calls = 0
	if err := retryCAS(ctx, func(int) error { calls++; return other }); err != other || calls != 1 {
		t.Fatalf("another error: %v after %d calls, want it at once", err, calls)
	}

	calls = 0
	err = retryCAS(ctx, func(int) error { calls++; return errConflict })
	var gaveUp *gaveUpError
	if !errors.As(err, &gaveUp) || gaveUp.attempts != casAttempts || calls != casAttempts || !errors.Is(err, errConflict) || !errors.Is(err, errGaveUp) {
		t.Fatalf("always losing: %v after %d calls, want gaveUpError{%d} wrapping errConflict", err, calls, casAttempts)
	}

	cctx, cancel := context.WithCancel(ctx)
	calls = 0
	err = retryCAS(cctx, func(int) error { calls++; cancel(); return errConflict })
	// A pause may race its (zero-length) timer against the cancelled
	// context once or twice; it must not run to the bound.
	if !errors.Is(err, context.Canceled) || calls >= casAttempts {
		t.Fatalf("cancelled while pausing: %v after %d calls", err, calls)
	}
}

// TestAddCommit: an agent's commit has the agent as author and Thoughtbox
// as committer at one instant; Thoughtbox's own is authored by itself; a
// zero parent is left out.
func TestAddCommit(t *testing.T) {
	when := time.Date(2026, 11, 22, 10, 0, 0, 0, time.FixedZone("", 3600))
	tree := object.HashObject(typeTree, nil)
	b := &batch{}
	id := addCommit(b, commitSpec{tree: tree, parents: []hash{zeroHash}, message: "m\n", author: &ledger.Author{Name: "Agent"}, when: when})
	if len(b.Objects) != 1 || b.Objects[0].ID != id || b.Objects[0].Type != typeCommit {
		t.Fatalf("logged %+v", b.Objects)
	}
	want := "tree " + tree.String() + "\nauthor Agent <agent@agents.thoughtbox.invalid> 1795338000 +0000\ncommitter " +
		committerName + " <" + committerEmail + "> 1795338000 +0000\n\nm\n"
	if got := string(b.Objects[0].Data); got != want {
		t.Fatalf("commit:\n%s\nwant\n%s", got, want)
	}
	parent := object.HashObject(typeCommit, []byte("p"))
	addCommit(b, commitSpec{tree: tree, parents: []hash{parent}, message: "own\n", when: when})
	pc, err := object.ParseCommit(b.Objects[1].Data)
	if err != nil || len(pc.Parents) != 1 || pc.Parents[0] != parent {
		t.Fatalf("parents %v, %v", pc, err)
	}
	if own := string(b.Objects[1].Data); !strings.Contains(own, "\nauthor "+committerName+" <"+committerEmail+"> 1795338000 +0000\n") {
		t.Fatalf("Thoughtbox's own commit:\n%s", own)
	}
}
