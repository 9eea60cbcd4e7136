package gitstore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// countingStore counts the listings the ledger asks for.
type countingStore struct {
	*Store
	lists int
}

func (c *countingStore) ListSessions(ctx context.Context) ([]ledger.SessionSummary, error) {
	c.lists++
	return c.Store.ListSessions(ctx)
}

// TestResolveWholeIDWithoutListing: naming a session by its whole id must
// not list the ledger (on 100,000 sessions that listing was most of what
// `show` cost), while an exact id still wins over the longer ids it is a
// prefix of, and a prefix, an unknown id and a deleted session are
// answered as before, from the listing.
func TestResolveWholeIDWithoutListing(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "p.git"), Options{FlushInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{"abc", "abcd", "zz-top"} {
		if _, _, err := s.CreateSession(ctx, ledger.SessionMeta{ID: id, Title: id, CreatedAt: time.Now().UTC()}, ledger.Author{Name: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	c := &countingStore{Store: s}
	l := ledger.New(c, ledger.Options{})

	for _, id := range []string{"abc", "abcd", "zz-top"} {
		got, err := l.Resolve(ctx, id)
		if err != nil || got != id {
			t.Fatalf("Resolve(%q) = %q, %v", id, got, err)
		}
	}
	if c.lists != 0 {
		t.Fatalf("whole ids listed the ledger %d times", c.lists)
	}
	if got, err := l.Resolve(ctx, "zz"); err != nil || got != "zz-top" {
		t.Fatalf("Resolve(zz) = %q, %v", got, err)
	}
	var amb *ledger.AmbiguousIDError
	if _, err := l.Resolve(ctx, "ab"); !errors.As(err, &amb) {
		t.Fatalf("Resolve(ab) = %v, want ambiguous", err)
	}
	if _, err := l.Resolve(ctx, "nope"); err == nil {
		t.Fatal("Resolve(nope) found a session")
	}
	if _, err := l.Resolve(ctx, "ABC"); err != nil {
		// Upper case is not a stored id; as a prefix it matches abc and abcd.
		if !errors.As(err, &amb) {
			t.Fatalf("Resolve(ABC) = %v, want ambiguous", err)
		}
	}
	if c.lists == 0 {
		t.Fatal("prefixes were answered without a listing")
	}
	if ok, err := s.HasSession(ctx, "ab"); err != nil || ok {
		t.Fatalf("HasSession(ab) = %v, %v", ok, err)
	}
	if ok, err := s.HasSession(ctx, "../x"); err != nil || ok {
		t.Fatalf("HasSession(../x) = %v, %v", ok, err)
	}
}
