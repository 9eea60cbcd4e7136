package gitstore

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestPeek: the read-only look into a repository sees published sessions,
// branches and remotes, and counts what still waits in the log, without
// opening a Store.
func TestPeek(t *testing.T) {
	ctx := context.Background()
	repo := filepath.Join(t.TempDir(), "p.git")
	s, err := Open(repo, Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(s, ledger.Options{})
	sess, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "peek"}, ledger.Author{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []ledger.ThoughtInput{
		{Thought: "one", NextThoughtNeeded: true},
		{Thought: "fork", NextThoughtNeeded: true, BranchID: "alt", BranchFromThought: new(int)},
	} {
		if in.BranchFromThought != nil {
			*in.BranchFromThought = 1
		}
		if _, err := l.AddThought(ctx, sess.ID, in, ledger.Author{Name: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing flushed yet: the log holds the session's start and thoughts.
	if n, size := PeekLog(repo); n < 3 || size == 0 {
		t.Fatalf("PeekLog before a flush = %d records, %d bytes; want at least 3", n, size)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n, _ := PeekLog(repo); n != 0 {
		t.Fatalf("PeekLog after close = %d records, want 0", n)
	}
	if got := PeekSessionIDs(repo, Standalone); !slices.Equal(got, []string{sess.ID}) {
		t.Fatalf("PeekSessionIDs = %v, want [%s]", got, sess.ID)
	}
	if got := PeekBranches(repo, Standalone, sess.ID); !slices.Equal(got, []string{"alt"}) {
		t.Fatalf("PeekBranches = %v, want [alt]", got)
	}
	if PeekSessionIDs(filepath.Join(t.TempDir(), "none.git"), Standalone) != nil {
		t.Fatal("a missing repository has sessions")
	}
}

// TestAccessTimesSurviveReopen: lastAccessedAt is kept beside the
// repository and read back by a new process's ledger.
func TestAccessTimesSurviveReopen(t *testing.T) {
	ctx := context.Background()
	repo := filepath.Join(t.TempDir(), "a.git")
	s, err := Open(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(s, ledger.Options{})
	sess, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "access"}, ledger.Author{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	s.RecordAccess(sess.ID, later)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	list, err := ledger.New(s2, ledger.Options{}).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || !list[0].LastAccessedAt.Equal(later) {
		t.Fatalf("after reopening, lastAccessedAt = %v, want %v", list[0].LastAccessedAt, later)
	}
}
