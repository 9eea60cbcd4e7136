//go:build unix

package observatory_test

import (
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/observatory"
)

// dialStuck opens a socket whose receive buffer is tiny, so that the
// server's writes to it block as soon as it stops reading.
func (f *fixture) dialStuck() *wsClient {
	f.t.Helper()
	d := websocket.Dialer{NetDial: func(network, addr string) (net.Conn, error) {
		nd := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) { smallReceiveBuffer(fd) })
		}}
		return nd.Dial(network, addr)
	}}
	ws, _, err := d.Dial(f.wsURL(), nil)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { ws.Close() })
	return &wsClient{t: f.t, ws: ws}
}

// bigSession is a session of about 10 MB: its snapshot is far more than a
// socket's buffers hold.
func (f *fixture) bigSession() string {
	id := f.start("big")
	text := strings.Repeat("z", 32<<10)
	for range 300 {
		f.add(id, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true})
	}
	return id
}

// TestResubscribesCoalesce: a client that subscribes to a 10 MB session
// 50 times without reading gets one snapshot, not 50: while a snapshot
// has not been written, it answers the subscribes that follow, and the
// session is not read again.
func TestResubscribesCoalesce(t *testing.T) {
	f := newFixture(t, observatory.Config{SubscribeBurst: 1000})
	id := f.bigSession()
	topic := "reasoning:" + id
	c := f.dialStuck()
	for range 50 {
		c.send(topic, "subscribe")
	}
	// Answered after the 50, which the server handles in order.
	c.send("observatory", "list:active")
	snapshots := 0
	for {
		m := c.next()
		if m.Event == "session:snapshot" {
			snapshots++
		}
		if m.Topic == "observatory" && m.Event == "sessions:active" {
			break
		}
	}
	if snapshots != 1 || f.obs.Coalesced() != 49 {
		t.Errorf("50 subscribes gave %d snapshots and %d coalesced; want 1 and 49", snapshots, f.obs.Coalesced())
	}
	// Once the snapshot has gone, subscribing again gives a fresh one.
	c.send(topic, "subscribe")
	c.expect(topic, "subscribed", nil)
	c.expect(topic, "session:snapshot", nil)
}

// TestSubscribesAreRateLimited: past SubscribeBurst, a connection gets one
// subscribe per SubscribeEvery; the others are refused with an error that
// says the limit. The clock is the test's, so nothing depends on timing.
func TestSubscribesAreRateLimited(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	f := newFixture(t, observatory.Config{SubscribeBurst: 3, SubscribeEvery: time.Second, Now: clock})
	id := f.start("watched")
	topic := "reasoning:" + id
	c := f.dial(nil)
	count := func(n int) (refused int) {
		t.Helper()
		for range n {
			c.send(topic, "subscribe")
		}
		c.send("observatory", "list:active")
		for {
			m := c.next()
			if m.Event == "error" {
				if !strings.Contains(string(m.Payload), "too many subscribes") || !strings.Contains(string(m.Payload), "one every 1s") {
					t.Errorf("refusal: %s", m.Payload)
				}
				refused++
			}
			if m.Topic == "observatory" && m.Event == "sessions:active" {
				return refused
			}
		}
	}
	if r := count(10); r != 7 {
		t.Errorf("10 subscribes with a burst of 3: %d refused, want 7", r)
	}
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	if r := count(5); r != 3 {
		t.Errorf("5 subscribes 2 s later: %d refused, want 3", r)
	}
}

// TestStuckSubscribersNeitherHoldWritesNorMemory: 20 subscribers that stop
// reading do not hold up the agent: every write returns while their
// sockets are full, each is cut off once what waits for it passes
// QueueBytes, what waited is let go, and their connections close.
func TestStuckSubscribersNeitherHoldWritesNorMemory(t *testing.T) {
	const bound = 256 << 10
	f := newFixture(t, observatory.Config{QueueBytes: bound})
	id := f.start("watched by the stuck")
	topic := "reasoning:" + id
	var stuck []*wsClient
	for range 20 {
		c := f.dialStuck()
		c.send(topic, "subscribe")
		c.expect(topic, "subscribed", nil)
		c.expect(topic, "session:snapshot", nil)
		stuck = append(stuck, c)
	}
	// No client reads from here on. Each thought is 8 KiB, so 20
	// subscribers blocked in a write fill their queues to the bound
	// within a few hundred thoughts; each AddThought returning is the
	// proof that the writer never waits for them.
	text := strings.Repeat("w", 8<<10)
	written := 0
	for ; f.obs.Dropped() < 20 && written < 5000; written++ {
		f.add(id, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true})
	}
	if f.obs.Dropped() != 20 {
		t.Fatalf("after %d thoughts of 8 KiB, %d of 20 stuck subscribers were cut off (bound %d bytes)", written, f.obs.Dropped(), bound)
	}
	waitForCond(t, "the memory of the cut-off clients to be let go", func() bool { return f.obs.PendingBytes() == 0 })
	for i, c := range stuck {
		c.ws.SetReadDeadline(time.Now().Add(time.Minute))
		var err error
		for err == nil {
			_, _, err = c.ws.ReadMessage()
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("stuck client %d: its connection is still open", i)
		}
	}
}

// waitForCond polls cond until it holds; the deadline only keeps a broken
// build from hanging.
func waitForCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
