package ledger_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// loadCounter is a real store that counts whole-session loads.
type loadCounter struct {
	*gitstore.Store
	loads atomic.Int32
}

func (s *loadCounter) LoadSession(ctx context.Context, id string) (*ledger.StoredSession, error) {
	s.loads.Add(1)
	return s.Store.LoadSession(ctx, id)
}

// TestCatchUpAfterConflict: two ledgers on one store, as two processes on
// one repository. The one whose view is stale loses the compare-and-swap
// and catches up with only the thoughts it missed (no whole load): an
// auto-numbered thought is renumbered, an explicit number now taken is
// refused, and its view ends up as a fresh load would build it.
func TestCatchUpAfterConflict(t *testing.T) {
	gs, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer gs.Close()
	store := &loadCounter{Store: gs}
	ctx := context.Background()
	l1, l2 := ledger.New(store, ledger.Options{}), ledger.New(store, ledger.Options{})
	s, err := l1.StartSession(ctx, ledger.CreateSessionParams{Title: "shared"}, agent)
	if err != nil {
		t.Fatal(err)
	}
	add := func(l *ledger.Ledger, in ledger.ThoughtInput) (int, error) {
		t.Helper()
		res, err := l.AddThought(ctx, s.ID, in, agent)
		if err != nil {
			return 0, err
		}
		return res.Thought.ThoughtNumber, nil
	}
	if _, err := add(l1, th("one")); err != nil {
		t.Fatal(err)
	}
	if _, err := l2.Load(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"two", "three"} {
		if _, err := add(l1, th(text)); err != nil {
			t.Fatal(err)
		}
	}
	loads := store.loads.Load()
	if n, err := add(l2, th("four, from the stale view")); err != nil || n != 4 {
		t.Fatalf("auto-numbered thought from the stale view: #%d, %v; want #4", n, err)
	}
	if _, err := add(l1, th("five")); err != nil { // l1 catches up with four
		t.Fatal(err)
	}
	taken := th("five again")
	taken.ThoughtNumber = ip(5)
	if _, err := add(l2, taken); !errors.Is(err, ledger.ErrNumberTaken) || ledger.AsError(err).Details["field"] != "thoughtNumber" {
		t.Fatalf("explicit number taken meanwhile: %v, want ErrNumberTaken naming thoughtNumber", err)
	}
	if got := store.loads.Load() - loads; got != 0 {
		t.Errorf("%d whole-session loads after conflicts, want 0 (catch up with the new thoughts only)", got)
	}

	fresh, err := ledger.New(store, ledger.Options{}).Load(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range []*ledger.Ledger{l1, l2} {
		v, err := l.View(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(nodes(fresh.Graph.MainChain()), nodes(v.Graph.MainChain())); diff != "" {
			t.Errorf("ledger %d's view differs from a fresh load (-fresh +view):\n%s", i+1, diff)
		}
		if v.Session.ThoughtCount != 5 || !v.Session.UpdatedAt.Equal(fresh.Session.UpdatedAt) {
			t.Errorf("ledger %d: %d thoughts, updated %v; want 5, %v", i+1, v.Session.ThoughtCount, v.Session.UpdatedAt, fresh.Session.UpdatedAt)
		}
	}
}

func nodes(ns []ledger.ThoughtNode) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.ID+" "+n.Prev+" "+n.Data.Thought)
	}
	return out
}

// TestForgetDropsStaleViews: two ledgers on one store, as a server and a
// pull moving its refs. The ledger that holds a view answers reads from
// it until told the session changed; after Forget its view, search and
// next number follow the store, and a session it never read costs nothing.
func TestForgetDropsStaleViews(t *testing.T) {
	ctx := context.Background()
	writer, server, _ := twoLedgers(t)
	s, err := writer.StartSession(ctx, ledger.CreateSessionParams{Title: "shared"}, agent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writer.AddThought(ctx, s.ID, th("one"), agent); err != nil {
		t.Fatal(err)
	}
	if v, err := server.View(ctx, s.ID); err != nil || v.Graph.Len() != 1 {
		t.Fatalf("first view: %v, %v", v, err)
	}
	if r, err := server.Search(ctx, ledger.SearchQuery{Query: "one"}); err != nil || r.Total != 1 {
		t.Fatalf("search: %+v, %v", r, err)
	}
	if _, err := writer.AddThought(ctx, s.ID, th("zebra"), agent); err != nil {
		t.Fatal(err)
	}
	if v, _ := server.View(ctx, s.ID); v.Graph.Len() != 1 {
		t.Fatalf("the view was reloaded without Forget (%d thoughts): this test no longer shows anything", v.Graph.Len())
	}
	server.Forget(s.ID, "never-read-by-this-ledger")
	if v, err := server.View(ctx, s.ID); err != nil || v.Graph.Len() != 2 {
		t.Fatalf("view after Forget: %d thoughts, %v", v.Graph.Len(), err)
	}
	if r, err := server.Search(ctx, ledger.SearchQuery{Query: "zebra"}); err != nil || r.Total != 1 {
		t.Errorf("search after Forget: %+v, %v", r, err)
	}
	res, err := server.AddThought(ctx, s.ID, th("three"), agent)
	if err != nil || res.Thought.ThoughtNumber != 3 {
		t.Errorf("next thought after Forget: %+v, %v", res, err)
	}
}
