package observatory

import (
	"context"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

type relaySink struct{ o *Observatory }

func (r *relaySink) Publish(e ledger.Event) {
	if r.o != nil {
		r.o.Publish(e)
	}
}

// relayed builds an Observatory over a ledger in memory whose events it
// receives, as serve wires the two; config makes its Config, given the
// store. Both are closed when the test ends.
func relayed(tb testing.TB, config func(*gitstore.Store) Config) (*ledger.Ledger, *Observatory) {
	tb.Helper()
	store, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	r := &relaySink{}
	l := ledger.New(store, ledger.Options{Events: r})
	o := New(l, config(store))
	r.o = o
	tb.Cleanup(o.Close)
	return l, o
}

// TestStuckQueueIsCutOff: a subscriber whose messages are never taken (no
// writer drains its queue, as when its socket is blocked) is cut off, once
// its queue is past QueueSize and it has taken nothing for StallTimeout,
// or once it is past the hard bound however recently it took something.
// Every write still completes, and a subscriber that drains its queue gets
// every thought in order.
func TestStuckQueueIsCutOff(t *testing.T) {
	for _, tt := range []struct {
		name     string
		stall    time.Duration
		thoughts int
	}{
		// Stalled: 4 queued and nothing taken for a nanosecond.
		{"stalled", time.Nanosecond, 10},
		// Never stalled long enough, but 16 × 4 behind.
		{"too far behind", time.Hour, 100},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, o := relayed(t, func(*gitstore.Store) Config { return Config{QueueSize: 4, StallTimeout: tt.stall} })
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
			var got [][]byte
			take := func(what string) {
				t.Helper()
				for len(got) == 0 {
					select {
					case <-drained.wake:
						got = drained.take(nil)
					case <-drained.gone:
						t.Fatalf("the draining subscriber was cut off (%s)", what)
					}
				}
				got = got[1:]
			}
			take("subscribed")
			take("snapshot")
			// The draining subscriber takes each thought before the next is
			// written, so only the stuck one can fall behind.
			for i := 1; i <= tt.thoughts; i++ {
				if _, err := l.AddThought(ctx, s.ID, ledger.ThoughtInput{Thought: "t", NextThoughtNeeded: true}, ledger.Author{Name: "a"}); err != nil {
					t.Fatal(err)
				}
				take("thought")
			}
			select {
			case <-stuck.gone:
			default:
				t.Fatalf("the stuck subscriber was not cut off after %d thoughts with a queue of 4", tt.thoughts)
			}
			if o.Dropped() != 1 {
				t.Errorf("Dropped = %d, want 1", o.Dropped())
			}
		})
	}
}

// TestBehindButTakingIsKept: a subscriber past QueueSize that keeps taking
// from its queue (a reader slowed for a moment by a loaded machine) stays
// connected up to the hard bound.
func TestBehindButTakingIsKept(t *testing.T) {
	l, o := relayed(t, func(*gitstore.Store) Config { return Config{QueueSize: 4, StallTimeout: time.Hour} })
	ctx := context.Background()
	s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "slow"}, ledger.Author{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := o.hub.join(0)
	if err != nil {
		t.Fatal(err)
	}
	o.hub.subscribe(ctx, c, TopicReasoningPrefix+s.ID)
	total := 0
	// Take every 40 thoughts: ten times QueueSize behind each time, but
	// within 16 times.
	for i := 1; i <= 200; i++ {
		if _, err := l.AddThought(ctx, s.ID, ledger.ThoughtInput{Thought: "t", NextThoughtNeeded: true}, ledger.Author{Name: "a"}); err != nil {
			t.Fatal(err)
		}
		if i%40 == 0 {
			// The dispatcher runs on its own goroutine: wait until it
			// has queued this thought.
			for deadline := time.Now().Add(10 * time.Second); ; {
				c.qmu.Lock()
				n := len(c.queue)
				c.qmu.Unlock()
				if total+n == i+2 || time.Now().After(deadline) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			total += len(c.take(nil))
		}
	}
	select {
	case <-c.gone:
		t.Fatalf("cut off (%s) while taking its queue", c.reason)
	default:
	}
	if total != 202 || o.Dropped() != 0 {
		t.Errorf("took %d messages (want 202: subscribed, snapshot, 200 thoughts), dropped %d", total, o.Dropped())
	}
}
