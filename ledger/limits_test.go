package ledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestMaxThoughtBytes: one limit bounds thoughts and critiques; a refusal is
// INVALID_PAYLOAD naming the field and the limit, and stores nothing.
func TestMaxThoughtBytes(t *testing.T) {
	ctx := context.Background()
	store := newFakeStore()
	l := ledger.New(store, ledger.Options{MaxThoughtBytes: 10})
	if got := l.MaxThoughtBytes(); got != 10 {
		t.Fatalf("MaxThoughtBytes() = %d, want 10", got)
	}
	if got := ledger.New(store, ledger.Options{}).MaxThoughtBytes(); got != ledger.DefaultMaxThoughtBytes {
		t.Fatalf("default MaxThoughtBytes() = %d, want %d", got, ledger.DefaultMaxThoughtBytes)
	}
	s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "t"}, agent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddThought(ctx, s.ID, th("0123456789"), agent); err != nil {
		t.Fatalf("a thought at the limit: %v", err)
	}
	for _, text := range []string{"0123456789a", strings.Repeat("é", 6)} {
		_, err := l.AddThought(ctx, s.ID, th(text), agent)
		var le *ledger.Error
		if !errors.As(err, &le) || le.Code != ledger.CodeInvalidPayload || le.Details["field"] != "thought" || le.Details["limit"] != 10 {
			t.Fatalf("AddThought(%d bytes) = %v, want INVALID_PAYLOAD on thought with the limit", len(text), err)
		}
		if err := l.CheckThought(th(text)); !errors.As(err, &le) || le.Details["field"] != "thought" {
			t.Fatalf("CheckThought(%d bytes) = %v, want the same refusal", len(text), err)
		}
	}
	_, err = l.AddCritique(ctx, s.ID, "", 1, ledger.Critique{Text: "far too long a critique"}, agent)
	var le *ledger.Error
	if !errors.As(err, &le) || le.Details["field"] != "critique.text" {
		t.Fatalf("AddCritique over the limit = %v, want INVALID_PAYLOAD on critique.text", err)
	}
	v, err := l.View(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := v.Graph.Len(); n != 1 {
		t.Fatalf("session holds %d thoughts after refusals, want 1", n)
	}
}
