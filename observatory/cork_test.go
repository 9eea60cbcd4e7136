package observatory

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// countingConn records each Write it is given.
type countingConn struct {
	net.Conn
	writes [][]byte
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes = append(c.writes, bytes.Clone(p))
	return len(p), nil
}

// TestCorkBatchesWrites: between cork and uncork, writes reach the
// connection as one; past corkSize they are flushed in order; uncorked,
// each write goes straight through.
func TestCorkBatchesWrites(t *testing.T) {
	under := &countingConn{}
	c := &corkConn{Conn: under}
	c.Write([]byte("plain"))
	c.cork()
	var want bytes.Buffer
	for i := 0; i < 10; i++ {
		msg := bytes.Repeat([]byte{byte('a' + i)}, 100)
		c.Write(msg)
		want.Write(msg)
	}
	if len(under.writes) != 1 {
		t.Fatalf("%d writes before uncork, want only the uncorked one", len(under.writes))
	}
	if err := c.uncork(); err != nil {
		t.Fatal(err)
	}
	if len(under.writes) != 2 || !bytes.Equal(under.writes[1], want.Bytes()) {
		t.Fatalf("after uncork: %d writes, want 2 (the batch as one)", len(under.writes))
	}

	under.writes = nil
	c.cork()
	big := bytes.Repeat([]byte("x"), corkSize-2)
	c.Write([]byte("head"))
	c.Write(big)            // does not fit behind "head": "head" goes first
	c.Write([]byte("tail")) // nor behind big
	huge := bytes.Repeat([]byte("y"), corkSize+1)
	c.Write(huge) // flushes what is held, then goes through as is
	c.uncork()
	got := bytes.Join(under.writes, nil)
	if !bytes.Equal(got, bytes.Join([][]byte{[]byte("head"), big, []byte("tail"), huge}, nil)) {
		t.Fatalf("bytes out of order or lost across flushes (%d writes)", len(under.writes))
	}
	if len(under.writes) != 4 {
		t.Errorf("%d writes, want 4 (head, big, tail, huge): sizes %v", len(under.writes), sizes(under.writes))
	}

	var none *corkConn // a connection not from corkListener
	none.cork()
	if err := none.uncork(); err != nil {
		t.Fatal(err)
	}
}

func sizes(ws [][]byte) []int {
	var n []int
	for _, w := range ws {
		n = append(n, len(w))
	}
	return n
}

// recordingListener hands out connections that record what the server
// writes to each, one entry per Write, and pass it on.
type recordingListener struct {
	net.Listener
	mu     sync.Mutex
	writes [][]byte
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, l: l}, nil
}

func (l *recordingListener) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.writes)
}

type recordingConn struct {
	net.Conn
	l *recordingListener
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.l.mu.Lock()
	c.l.writes = append(c.l.writes, bytes.Clone(p))
	c.l.mu.Unlock()
	return c.Conn.Write(p)
}

// TestCorkDelayBatchesThoughts: a thought that finds its connection
// written to less than CorkDelay ago waits, and the thoughts recorded
// while it waits go out with it, in order, in one write. The test holds
// the delay's timer itself, so nothing in it depends on timing; closing
// the Observatory while a writer waits on the timer still ends it.
func TestCorkDelayBatchesThoughts(t *testing.T) {
	l, o := relayed(t, func(*gitstore.Store) Config { return Config{CorkDelay: time.Hour} })
	var (
		mu     sync.Mutex
		hold   bool
		timers = make(chan chan time.Time, 1)
	)
	o.after = func(time.Duration) <-chan time.Time {
		ch := make(chan time.Time, 1)
		mu.Lock()
		defer mu.Unlock()
		if !hold {
			ch <- time.Now()
			return ch
		}
		timers <- ch
		return ch
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingListener{Listener: ln}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Serve(ctx, rec) }()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	defer stop()

	s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "corked"}, ledger.Author{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	topic := TopicReasoningPrefix + s.ID
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+ln.Addr().String()+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	read := func() string {
		t.Helper()
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	ws.WriteJSON([]any{topic, "subscribe"})
	for _, want := range []string{`"subscribed"`, `"session:snapshot"`} {
		if got := read(); !strings.Contains(got, want) {
			t.Fatalf("got %.80s, want %s", got, want)
		}
	}

	mu.Lock()
	hold = true
	mu.Unlock()
	add := func() {
		t.Helper()
		if _, err := l.AddThought(ctx, s.ID, ledger.ThoughtInput{Thought: "step", NextThoughtNeeded: true}, ledger.Author{Name: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	// Events reach the queue through the hub's dispatcher, after
	// AddThought returns: wait for them there (not for a time).
	queued := func(want int) {
		t.Helper()
		for i := 0; ; i++ {
			o.hub.mu.Lock()
			n := 0
			for c := range o.hub.clients {
				n = c.queueLen()
			}
			o.hub.mu.Unlock()
			if n == want {
				return
			}
			if i == 10000 {
				t.Fatalf("%d messages queued, want %d", n, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	before := rec.count()
	add()
	var timer chan time.Time
	select {
	case timer = <-timers: // thought 1 found the connection just written to
	case <-time.After(10 * time.Second):
		t.Fatal("the writer did not wait out the cork delay before sending thought 1")
	}
	for n := 2; n <= 5; n++ {
		add()
	}
	queued(5)
	timer <- time.Now()
	for n := 1; n <= 5; n++ {
		got := read()
		if !strings.Contains(got, `"thought:added"`) || !strings.Contains(got, `"thoughtNumber":`+string(rune('0'+n))) {
			t.Fatalf("message %d: %.120s", n, got)
		}
	}
	rec.mu.Lock()
	after := rec.writes[before:]
	rec.mu.Unlock()
	if len(after) != 1 {
		t.Fatalf("thoughts 1-5 went out in %d writes, want 1: sizes %v", len(after), sizes(after))
	}
	if n := bytes.Count(after[0], []byte(`"thought:added"`)); n != 5 {
		t.Fatalf("the write carries %d thoughts, want 5", n)
	}

	// Closing does not wait for a writer's timer.
	add()
	<-timers
	stop()
}
