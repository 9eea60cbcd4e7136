package ledger_test

import (
	"context"
	"sync"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

type eventRecorder struct {
	mu     sync.Mutex
	events []ledger.Event
}

func (r *eventRecorder) Publish(e ledger.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *eventRecorder) thoughts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if e.Node != nil {
			out = append(out, string(e.Type)+" "+e.Node.Data.Thought)
		}
	}
	return out
}

// twoLedgers opens one in-memory store with two ledgers on it: writer
// stands for another process or a pull moving the refs, server for the
// ledger that holds views (its events go to rec).
func twoLedgers(t *testing.T) (writer, server *ledger.Ledger, rec *eventRecorder) {
	t.Helper()
	gs, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gs.Close() })
	rec = &eventRecorder{}
	return ledger.New(gs, ledger.Options{}), ledger.New(gs, ledger.Options{Events: rec}), rec
}

// TestPulledReloadsOnlyHeldViews: two ledgers on one store, as a server
// and a pull moving its refs. Pulled reads again the sessions the server
// holds and announces only what they gained; one it never read stays
// unread and unannounced, yet searchable; an unknown id is no error.
func TestPulledReloadsOnlyHeldViews(t *testing.T) {
	ctx := context.Background()
	writer, server, rec := twoLedgers(t)
	held, err := writer.StartSession(ctx, ledger.CreateSessionParams{Title: "held"}, agent)
	if err != nil {
		t.Fatal(err)
	}
	unread, err := writer.StartSession(ctx, ledger.CreateSessionParams{Title: "unread"}, agent)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{held.ID, unread.ID} {
		if _, err := writer.AddThought(ctx, id, th("one"), agent); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := server.View(ctx, held.ID); err != nil || v.Graph.Len() != 1 {
		t.Fatalf("first view: %v, %v", v, err)
	}
	old, _ := server.View(ctx, held.ID)
	for _, text := range []string{"two", "three"} {
		if _, err := writer.AddThought(ctx, held.ID, th(text), agent); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := writer.AddThought(ctx, unread.ID, th("zebra"), agent); err != nil {
		t.Fatal(err)
	}
	if err := server.Pulled(ctx, ledger.PulledSessions{Moved: []string{held.ID, unread.ID, "0bad1d00-0000-4000-8000-000000000000"}}); err != nil {
		t.Fatal(err)
	}
	if got := rec.thoughts(); len(got) != 2 || got[0] != "thought_added two" || got[1] != "thought_added three" {
		t.Errorf("events: %q; want the held session's two new thoughts only", got)
	}
	if old.Graph.Len() != 1 {
		t.Errorf("a snapshot handed out before the pull changed under its reader: %d thoughts", old.Graph.Len())
	}
	if v, err := server.View(ctx, held.ID); err != nil || v.Graph.Len() != 3 {
		t.Errorf("held view after Pulled: %v, %v", v, err)
	}
	if r, err := server.Search(ctx, ledger.SearchQuery{Query: "zebra"}); err != nil || r.Total != 1 {
		t.Errorf("search for the unread session's pulled word: %+v, %v", r, err)
	}

	// A session new here is announced from its listing, with its title; an
	// id the store does not list (deleted meanwhile) is not.
	if err := server.Pulled(ctx, ledger.PulledSessions{New: []string{unread.ID, "0bad1d00-0000-4000-8000-000000000000"}}); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	last := rec.events[len(rec.events)-1]
	n := len(rec.events)
	rec.mu.Unlock()
	if n != 3 || last.Type != ledger.EventSessionStarted || last.SessionID != unread.ID || last.Data["title"] != "unread" {
		t.Errorf("after a pull that created a session: %d events, the last %+v", n, last)
	}
}

// TestViewDuringAPull: while a pull is under way (Pulling), a View shows
// what the store holds even though the ledger's view of the session is
// older — as a listing, which reads the refs, already does — and leaves
// that view for Pulled, which still announces every thought the pull
// brought. Afterwards views come from the ledger again.
func TestViewDuringAPull(t *testing.T) {
	ctx := context.Background()
	writer, server, rec := twoLedgers(t)
	s, err := writer.StartSession(ctx, ledger.CreateSessionParams{Title: "pulled"}, agent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writer.AddThought(ctx, s.ID, th("one"), agent); err != nil {
		t.Fatal(err)
	}
	if v, err := server.View(ctx, s.ID); err != nil || v.Graph.Len() != 1 {
		t.Fatalf("first view: %v, %v", v, err)
	}

	done := server.Pulling()
	// The pull moves the refs: the writer stands for it.
	for _, text := range []string{"two", "three"} {
		if _, err := writer.AddThought(ctx, s.ID, th(text), agent); err != nil {
			t.Fatal(err)
		}
	}
	page, _, err := server.ListPage(ctx, 0, 10)
	if err != nil || len(page) != 1 || page[0].ThoughtCount != 3 {
		t.Fatalf("listing during the pull: %+v, %v", page, err)
	}
	if v, err := server.View(ctx, s.ID); err != nil || v.Graph.Len() != 3 || v.Session.ThoughtCount != 3 {
		t.Fatalf("a view during the pull shows %v thoughts (%v); the listing showed 3", v.Graph.Len(), err)
	}
	if _, err := server.View(ctx, "0bad1d00-0000-4000-8000-000000000000"); err == nil {
		t.Fatal("a view during the pull found an unknown session")
	}
	if err := server.Pulled(ctx, ledger.PulledSessions{Moved: []string{s.ID}}); err != nil {
		t.Fatal(err)
	}
	done()
	done() // a second call changes nothing
	if got := rec.thoughts(); len(got) != 2 || got[0] != "thought_added two" || got[1] != "thought_added three" {
		t.Errorf("events: %q; want the two pulled thoughts", got)
	}
	if v, err := server.View(ctx, s.ID); err != nil || v.Graph.Len() != 3 {
		t.Errorf("view after the pull: %v, %v", v, err)
	}
	// Views come from the ledger again: a write behind its back (no pull
	// announced) is not seen until the ledger is told.
	if _, err := writer.AddThought(ctx, s.ID, th("four"), agent); err != nil {
		t.Fatal(err)
	}
	if v, _ := server.View(ctx, s.ID); v.Graph.Len() != 3 {
		t.Errorf("after done, a view read the store: %d thoughts", v.Graph.Len())
	}
}
