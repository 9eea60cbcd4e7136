package project

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	gitremote "github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// countingStore is a gitstore.Store (every part of ledger.Store kept by
// embedding)
// that counts the appends made through it and those refused by
// compare-and-swap.
type countingStore struct {
	*gitstore.Store
	mu                 sync.Mutex
	appends, conflicts int
}

func (c *countingStore) Append(ctx context.Context, req ledger.AppendRequest) (ledger.CommitID, error) {
	id, err := c.Store.Append(ctx, req)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.appends++
	if errors.Is(err, ledger.ErrConflict) {
		c.conflicts++
	}
	return id, err
}

func (c *countingStore) counts() (appends, conflicts int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.appends, c.conflicts
}

// eventLog keeps the ledger's events.
type eventLog struct {
	mu     sync.Mutex
	events []ledger.Event
}

func (e *eventLog) Publish(ev ledger.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, ev)
}

func (e *eventLog) since(n int) []ledger.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]ledger.Event(nil), e.events[n:]...)
}

func (e *eventLog) len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.events)
}

// TestPullReloadsHeldSessions: a server's ledger has read session X; a
// teammate adds thoughts to X (one on a new branch) and pushes; the
// server's pull goes through its ledger, so its view of X is current at
// once — count, branches, load — before any write of its own, the pulled
// thoughts are announced as thought events in the order they were made
// (and the session, when it first arrives, as session_started), and the
// server's next thought commits on its first try.
func TestPullReloadsHeldSessions(t *testing.T) {
	remote := bareRemote(t)
	ctx := context.Background()
	a := newTeamMember(t)
	gs, err := gitstore.Open(filepath.Join(t.TempDir(), "server.git"), gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gs.Close() })
	store := &countingStore{Store: gs}
	events := &eventLog{}
	server := ledger.New(store, ledger.Options{Events: events})
	// Pulls run only when the test asks (p.pull), not on a timer.
	proj := &Project{store: gs, ledger: server, log: (&syncBuffer{}).logger()}
	p := newAutoPuller(proj, remote, time.Hour, time.Hour, gitremote.TransferOptions{}, proj.log)
	defer p.close()

	s, err := a.ledger.StartSession(ctx, ledger.CreateSessionParams{Title: "Why the cache misses"}, ledger.Author{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	a.think(t, s.ID, "The eviction counter climbs with every deploy.")
	a.push(t, remote)
	p.pull()
	// The session is new here: announced once, with its title, before
	// anyone read it.
	var started []ledger.Event
	for _, e := range events.since(0) {
		if e.Type == ledger.EventSessionStarted {
			started = append(started, e)
		}
	}
	if len(started) != 1 || started[0].SessionID != s.ID || started[0].Data["title"] != "Why the cache misses" || !started[0].Timestamp.Equal(s.CreatedAt) {
		t.Errorf("session_started events of the first pull: %+v", started)
	}
	if v, err := server.View(ctx, s.ID); err != nil || v.Graph.Len() != 1 {
		t.Fatalf("the server's first view: %v, %v", v, err)
	}

	a.think(t, s.ID, "Suspect the warmup job.")
	from := 2
	if _, err := a.ledger.AddThought(ctx, s.ID, ledger.ThoughtInput{Thought: "Or the TTL?", NextThoughtNeeded: true, BranchID: "ttl", BranchFromThought: &from}, ledger.Author{Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	a.think(t, s.ID, "The warmup job evicts the hottest keys.")
	a.push(t, remote)
	if v, _ := server.View(ctx, s.ID); v.Graph.Len() != 1 {
		t.Fatalf("the server's view moved before any pull (%d thoughts): this test no longer shows anything", v.Graph.Len())
	}
	seen := events.len()
	p.pull()

	// The view is current without a read from the store being asked for.
	v, err := server.View(ctx, s.ID)
	if err != nil || v.Graph.Len() != 4 || v.Session.ThoughtCount != 4 || v.Session.BranchCount != 1 {
		t.Fatalf("the server's view after the pull: %+v, %v; want 4 thoughts, 1 branch", v.Session, err)
	}
	if list, err := server.List(ctx); err != nil || len(list) != 1 || list[0].ThoughtCount != 4 {
		t.Errorf("the server's list after the pull: %+v, %v", list, err)
	}
	if found, err := server.Search(ctx, ledger.SearchQuery{Query: "hottest"}); err != nil || found.Total != 1 {
		t.Errorf("the server's search for a pulled word: %+v, %v", found, err)
	}
	var got []string
	for _, e := range events.since(seen) {
		if e.Type == ledger.EventSessionStarted {
			t.Errorf("a session that was not new was announced again: %+v", e)
		}
		if e.Node == nil {
			continue
		}
		got = append(got, string(e.Type)+" "+e.Node.Data.Thought)
		if e.SessionID != s.ID || e.ThoughtCount == 0 {
			t.Errorf("event %+v", e)
		}
	}
	want := []string{
		"thought_added Suspect the warmup job.",
		"branch_created Or the TTL?",
		"thought_added The warmup job evicts the hottest keys.",
	}
	if len(got) != len(want) {
		t.Fatalf("events of the pulled thoughts: %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: %q, want %q", i, got[i], want[i])
		}
	}

	// The server's next write commits first time: no stale tip to lose on.
	before, _ := store.counts()
	r, err := server.AddThought(ctx, s.ID, ledger.ThoughtInput{Thought: "Agreed; quarantine the warmup job.", NextThoughtNeeded: true}, ledger.Author{Name: "bob"})
	if err != nil || r.Thought.ThoughtNumber != 4 {
		t.Fatalf("the server's next thought: %+v, %v; want number 4 on the main chain", r, err)
	}
	if appends, conflicts := store.counts(); appends-before != 1 || conflicts != 0 {
		t.Errorf("the server's next thought took %d appends, %d refused by compare-and-swap; want 1 and 0", appends-before, conflicts)
	}
	// And its load reads the same.
	if lv, err := server.Load(ctx, s.ID); err != nil || lv.Graph.Len() != 5 {
		t.Errorf("load after the write: %v, %v", lv, err)
	}
}
