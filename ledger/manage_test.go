package ledger_test

import (
	"context"
	"errors"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

func sp(s string) *string { return &s }

// TestUpdateSession: title, description and tags change with one commit on
// the main chain; thoughts stay; the next thought goes on after it; a
// reload (another process) sees the change; bad input changes nothing.
func TestUpdateSession(t *testing.T) {
	ctx := context.Background()
	st, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l := ledger.New(st, ledger.Options{})
	s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "old", Tags: []string{"a"}}, agent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddThought(ctx, s.ID, th("one"), agent); err != nil {
		t.Fatal(err)
	}
	tags := []string{"b", " b ", "c", ""}
	got, err := l.UpdateSession(ctx, s.ID, ledger.UpdateSessionParams{Title: sp("  new title "), Description: sp("why"), Tags: &tags}, agent)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "new title" || got.Description != "why" || len(got.Tags) != 2 || got.Tags[0] != "b" || got.Tags[1] != "c" {
		t.Fatalf("updated session = %+v", got)
	}
	if _, err := l.AddThought(ctx, s.ID, th("two"), agent); err != nil {
		t.Fatalf("a thought after the update: %v", err)
	}
	// Another ledger on the same store reads the change and both thoughts.
	other := ledger.New(st, ledger.Options{})
	v, err := other.View(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Session.Title != "new title" || v.Session.ThoughtCount != 2 {
		t.Fatalf("reloaded: %+v", v.Session)
	}
	list, _ := other.List(ctx)
	if len(list) != 1 || list[0].Title != "new title" {
		t.Fatalf("listed: %+v", list)
	}
	// Bad input: refused, nothing changed.
	for _, p := range []ledger.UpdateSessionParams{{Title: sp("  ")}, {}} {
		if _, err := l.UpdateSession(ctx, s.ID, p, agent); ledger.AsError(err).Code != ledger.CodeInvalidPayload {
			t.Fatalf("UpdateSession(%+v) = %v, want INVALID_PAYLOAD", p, err)
		}
	}
	if _, err := l.UpdateSession(ctx, "nope", ledger.UpdateSessionParams{Title: sp("x")}, agent); !errors.Is(err, ledger.ErrSessionNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
	// The other ledger's stale view loses the race, catches up and wins.
	if _, err := other.UpdateSession(ctx, s.ID, ledger.UpdateSessionParams{Title: sp("third")}, agent); err != nil {
		t.Fatal(err)
	}
	if _, err := l.UpdateSession(ctx, s.ID, ledger.UpdateSessionParams{Description: sp("from the first")}, agent); err != nil {
		t.Fatalf("a stale writer: %v", err)
	}
	v, _ = ledger.New(st, ledger.Options{}).View(ctx, s.ID)
	if v.Session.Title != "third" || v.Session.Description != "from the first" || v.Session.ThoughtCount != 2 {
		t.Fatalf("after both updates: %+v", v.Session)
	}
}
