package gitstore_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestChangeStampWhileTimesAreRecent: the log keeps its size as thoughts
// are written (zeros are laid ahead), so its time is what moves. A time
// moves with the clock's tick (a second where times are coarse), so a
// thought written in the same tick as the last look leaves size and time
// as they were; while the time is that recent the stamp differs at every
// call, and a follower keeps looking until it has settled. A settled
// stamp stays put, and one whose log really changed moves.
func TestChangeStampWhileTimesAreRecent(t *testing.T) {
	dir := t.TempDir()
	// No flush while the test runs: one replaces the log, which moves
	// the stamp on its own.
	s, err := gitstore.Open(dir, gitstore.Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	l := ledger.New(s, ledger.Options{})
	ctx := context.Background()
	ss, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "stamps"}, ledger.Author{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "thoughtbox", "log")
	setTime := func(at time.Time) {
		t.Helper()
		if err := os.Chtimes(log, at, at); err != nil {
			t.Fatal(err)
		}
	}
	stamp := func() string {
		t.Helper()
		st, err := s.ChangeStamp()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	// Times a little ahead of the clock stay recent however slowly this
	// runs.
	for _, at := range []time.Time{
		time.Now().Truncate(time.Second).Add(time.Second), // coarse
		time.Now().Add(time.Second + 123),                 // fine, within a tick
	} {
		setTime(at)
		if first, second := stamp(), stamp(); first == second {
			t.Errorf("with the log's time recent (%s), two stamps are alike (%q): a write in that tick would go unseen", at.Format(time.RFC3339Nano), first)
		}
	}

	settled := time.Now().Add(-time.Minute).Truncate(time.Second)
	setTime(settled)
	first := stamp()
	if second := stamp(); second != first {
		t.Errorf("with the log's time settled, the stamp moved with nothing written: %q, then %q", first, second)
	}
	if _, err := l.AddThought(ctx, ss.ID, ledger.ThoughtInput{Thought: "a thought", NextThoughtNeeded: true}, ledger.Author{Name: "t"}); err != nil {
		t.Fatal(err)
	}
	// Without its racy part (a recent time makes every stamp differ),
	// the stamp still moved: the log's time did.
	settledPart := func(st string) string { return regexp.MustCompile(`racy \d+;`).ReplaceAllString(st, "") }
	if after := stamp(); settledPart(after) == settledPart(first) {
		t.Errorf("a thought written did not move the stamp (%q, then %q)", first, after)
	}
}
