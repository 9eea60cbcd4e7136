package observatory_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/observatory"
)

// countingStore counts the sessions read whole from the store; embedding
// keeps every capability of the store (its index included).
type countingStore struct {
	*gitstore.Store
	loads atomic.Int64
}

func (c *countingStore) LoadSession(ctx context.Context, id string) (*ledger.StoredSession, error) {
	c.loads.Add(1)
	return c.Store.LoadSession(ctx, id)
}

// Joining the Observatory lists the active sessions from the session
// index, newest first, and stops at the first one too old to be active:
// it reads the few recent sessions, not the ledger's whole history.
func TestSessionsActiveReadsOnlyRecentSessions(t *testing.T) {
	store, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	now := time.Now().UTC().Add(-3 * time.Hour)
	writer := ledger.New(store, ledger.Options{Now: func() time.Time { return now }})
	write := func(title string, next bool) string {
		s, err := writer.StartSession(ctx, ledger.CreateSessionParams{Title: title}, agent)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := writer.AddThought(ctx, s.ID, ledger.ThoughtInput{Thought: title, NextThoughtNeeded: next}, agent); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second)
		return s.ID
	}
	const old = 300
	for i := 0; i < old; i++ {
		write("old work", true) // three hours ago: abandoned after one
	}
	now = time.Now().UTC()
	write("finished just now", false)
	open := write("still going", true)

	counted := &countingStore{Store: store}
	reader := ledger.New(counted, ledger.Options{})
	obs := observatory.New(reader, observatory.Config{AbandonAfter: time.Hour, Authors: store})
	srv := serve(t, obs)
	defer func() { obs.Close(); srv.Close() }()
	f := &fixture{t: t, l: reader, store: store, obs: obs, srv: srv, ctx: ctx}

	c := f.dial(nil)
	c.send("observatory", "subscribe")
	c.expect("observatory", "subscribed", nil)
	var active struct{ Sessions []observatory.Session }
	c.expect("observatory", "sessions:active", &active)
	if len(active.Sessions) != 1 || active.Sessions[0].ID != open {
		t.Fatalf("sessions:active = %+v, want only %s", active.Sessions, open)
	}
	if n := counted.loads.Load(); n > 3 {
		t.Fatalf("joining read %d sessions of %d, want at most the 3 newest", n, old+2)
	}

	// A page of the list reads the page's sessions, not the ledger's.
	counted.loads.Store(0)
	c.send("observatory", "list:sessions", map[string]any{"limit": 5, "offset": 100})
	var list observatory.SessionList
	c.expect("observatory", "sessions:list", &list)
	if len(list.Sessions) != 5 || list.Total != old+2 || !list.HasMore || list.Sessions[0].Status != observatory.StatusAbandoned {
		t.Fatalf("sessions:list = %d sessions, total %d, more %v", len(list.Sessions), list.Total, list.HasMore)
	}
	if n := counted.loads.Load(); n > 5 {
		t.Fatalf("a page of 5 read %d sessions of %d", n, old+2)
	}
}
