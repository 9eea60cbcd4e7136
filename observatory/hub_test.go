package observatory

import (
	"context"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

type relaySink struct{ o *Observatory }

func (r *relaySink) Publish(e ledger.Event) {
	if r.o != nil {
		r.o.Publish(e)
	}
}

// TestStuckQueueIsCutOff: a subscriber whose messages are never taken (no
// writer drains its queue, as when its socket is blocked) is cut off once
// its queue is full; every write still completes, and a subscriber that
// drains its queue gets every thought in order.
func TestStuckQueueIsCutOff(t *testing.T) {
	store, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r := &relaySink{}
	l := ledger.New(store, ledger.Options{Events: r})
	o := New(l, Config{QueueSize: 4})
	r.o = o
	defer o.Close()
	ctx := context.Background()
	s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "stuck"}, ledger.Author{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	topic := TopicReasoningPrefix + s.ID
	stuck, err := o.hub.join(0)
	if err != nil {
		t.Fatal(err)
	}
	o.hub.subscribe(ctx, stuck, topic) // queues subscribed + snapshot: 2 of 4

	drained, err := o.hub.join(0)
	if err != nil {
		t.Fatal(err)
	}
	o.hub.subscribe(ctx, drained, topic)
	take := func(what string) {
		t.Helper()
		select {
		case <-drained.send:
		case <-drained.gone:
			t.Fatalf("the draining subscriber was cut off (%s)", what)
		}
	}
	take("subscribed")
	take("snapshot")
	// The draining subscriber takes each thought before the next is
	// written, so only the stuck one can fall behind.
	for i := 1; i <= 50; i++ {
		if _, err := l.AddThought(ctx, s.ID, ledger.ThoughtInput{Thought: "t", NextThoughtNeeded: true}, ledger.Author{Name: "a"}); err != nil {
			t.Fatal(err)
		}
		take("thought")
	}
	select {
	case <-stuck.gone:
	default:
		t.Fatal("the stuck subscriber was not cut off after 50 thoughts with a queue of 4")
	}
	if o.Dropped() != 1 {
		t.Errorf("Dropped = %d, want 1", o.Dropped())
	}
}
