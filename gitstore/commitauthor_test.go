package gitstore

import (
	"context"
	"testing"

	"github.com/thoughtbox/thoughtbox/ledger"
)

func TestCommitAuthor(t *testing.T) {
	s, err := OpenMemory(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := ledger.New(s, ledger.Options{})
	ctx := context.Background()
	sess, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "authors"}, ledger.Author{Name: "starter", Email: "s@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.AddThought(ctx, sess.ID, ledger.ThoughtInput{Thought: "one", NextThoughtNeeded: true}, ledger.Author{Name: "agent-7", Email: "agent-7@thoughtbox"})
	if err != nil {
		t.Fatal(err)
	}
	a, when, err := s.CommitAuthor(ctx, res.Node.Commit())
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "agent-7" || a.Email != "agent-7@thoughtbox" {
		t.Errorf("author = %+v, want agent-7 <agent-7@thoughtbox>", a)
	}
	if !when.Equal(res.Thought.Timestamp.Truncate(1e9)) {
		t.Errorf("time = %v, want %v", when, res.Thought.Timestamp)
	}
	if _, _, err := s.CommitAuthor(ctx, "not-a-commit"); err == nil {
		t.Error("a malformed commit id gave no error")
	}
}
