package observatory

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// gatedStore holds its first LoadSession until gate is closed, and counts
// them all.
type gatedStore struct {
	*gitstore.Store
	loads   atomic.Int32
	entered chan struct{}
	gate    chan struct{}
}

func (s *gatedStore) LoadSession(ctx context.Context, id string) (*ledger.StoredSession, error) {
	if s.loads.Add(1) == 1 {
		close(s.entered)
		<-s.gate
	}
	return s.Store.LoadSession(ctx, id)
}

// TestSubscribersShareSnapshotReads: 20 subscribers of one session asking
// while its snapshot is being read cost one more read, not 20 (the agent
// writing to the session waits for each read, under the session's lock),
// and each gets its subscribed message and the snapshot.
func TestSubscribersShareSnapshotReads(t *testing.T) {
	mem, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	store := &gatedStore{Store: mem, entered: make(chan struct{}), gate: make(chan struct{})}
	r := &relaySink{}
	l := ledger.New(store, ledger.Options{Events: r})
	o := New(l, Config{})
	r.o = o
	defer o.Close()
	ctx := context.Background()
	s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "shared"}, ledger.Author{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	topic := TopicReasoningPrefix + s.ID
	join := func() *client {
		c, err := o.hub.join(0)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	first := join()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); o.hub.subscribe(ctx, first, topic) }()
	<-store.entered // the first read is under way, and held
	var others []*client
	for range 20 {
		c := join()
		others = append(others, c)
		wg.Add(1)
		go func() { defer wg.Done(); o.hub.subscribe(ctx, c, topic) }()
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		o.hub.mu.Lock()
		n := 0
		if sl := o.hub.loads[s.ID]; sl != nil && sl.next != nil {
			n = sl.next.waiters
		}
		o.hub.mu.Unlock()
		if n == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 20 subscribers joined the next read", n)
		}
	}
	close(store.gate)
	wg.Wait()
	if n := store.loads.Load(); n != 2 {
		t.Errorf("21 subscribers made %d reads of the session, want 2", n)
	}
	for i, c := range append(others, first) {
		if q := c.take(nil); len(q) != 2 {
			t.Errorf("subscriber %d has %d messages, want subscribed and the snapshot", i, len(q))
		}
	}
}

// TestCutOffLetsGo: a client whose waiting bytes pass QueueBytes is cut
// off, its queue is emptied at once (not when its connection's goroutines
// end), and the write in progress is interrupted.
func TestCutOffLetsGo(t *testing.T) {
	l, o := relayed(t, func(*gitstore.Store) Config { return Config{QueueBytes: 64 << 10} })
	ctx := context.Background()
	s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "held"}, ledger.Author{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := o.hub.join(0)
	if err != nil {
		t.Fatal(err)
	}
	var aborted atomic.Bool
	c.abort = func() { aborted.Store(true) }
	o.hub.subscribe(ctx, c, TopicReasoningPrefix+s.ID)
	c.take(nil) // the writer has taken subscribed and the snapshot, and is stuck writing them
	text := string(make([]byte, 4<<10))
	for i := 0; i < 100; i++ {
		if _, err := l.AddThought(ctx, s.ID, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true}, ledger.Author{Name: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-c.gone: // cut off by the dispatcher, which runs on its own
	case <-time.After(30 * time.Second):
		t.Fatal("100 thoughts of 4 KiB did not pass a bound of 64 KiB")
	}
	o.hub.mu.Lock() // the cut-off happened under it
	o.hub.mu.Unlock()
	c.qmu.Lock()
	n, queued := len(c.queue), c.queued
	c.qmu.Unlock()
	if n != 0 || queued != 0 || !aborted.Load() {
		t.Errorf("after the cut-off: %d messages and %d bytes still queued, write aborted %v", n, queued, aborted.Load())
	}
	if o.Dropped() != 1 {
		t.Errorf("Dropped = %d, want 1", o.Dropped())
	}
}
