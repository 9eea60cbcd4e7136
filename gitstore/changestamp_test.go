package gitstore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestChangeStampWhileTimesAreCoarse: the log keeps its size as thoughts
// are written (zeros are laid ahead), so its time is what moves. Where
// times are a whole second, a thought written in the same second as the
// last look leaves size and time as they were; so while that time is
// recent the stamp differs at every call, and a follower keeps looking
// until it has settled. A settled stamp stays put, and one whose log
// really changed moves.
func TestChangeStampWhileTimesAreCoarse(t *testing.T) {
	dir := t.TempDir()
	s, l := openAt(t, dir)
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

	setTime(time.Now().Truncate(time.Second))
	first := stamp()
	time.Sleep(time.Millisecond)
	if second := stamp(); second == first {
		t.Errorf("with the log's coarse time recent, two stamps are alike (%q): a write in that second would go unseen", first)
	}

	settled := time.Now().Add(-time.Minute).Truncate(time.Second)
	setTime(settled)
	first = stamp()
	if second := stamp(); second != first {
		t.Errorf("with the log's time settled, the stamp moved with nothing written: %q, then %q", first, second)
	}
	if _, err := l.AddThought(ctx, ss.ID, ledger.ThoughtInput{Thought: "a thought", NextThoughtNeeded: true}, ledger.Author{Name: "t"}); err != nil {
		t.Fatal(err)
	}
	if after := stamp(); after == first {
		t.Errorf("a thought written did not move the stamp (%q)", after)
	}
}
