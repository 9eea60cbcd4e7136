// Package events writes Thoughtbox's event stream: every ledger.Event (seed
// 002, ThoughtboxEvent — thought_added, thought_revised, branch_created,
// session_started, session_loaded, session_exported, cipher_loaded,
// stage_changed) as one JSON line, for tools that tail the stream.
//
// The ledger publishes its events after each commit, the gateway its own
// (stages, cipher, exports); a JSONL sink is handed to both:
//
//	sink, err := cfg.OpenEvents(os.Stderr) // package config reads the settings
//	if err != nil { … }
//	defer sink.Close()
//	l := ledger.New(store, ledger.Options{Events: sink})
//	g := gateway.New(l, gateway.Options{Events: sink})
//
// A nil *JSONL (the stream off) is a sink whose methods are no-ops, so it
// can be wired unconditionally.
package events

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// DefaultBuffer is how many events may wait to be written before new ones
// are dropped.
const DefaultBuffer = 4096

// JSONL is a ledger.EventSink that writes each event as a JSON line.
//
// Publish never blocks: the ledger calls it with a session's lock held, so
// a slow reader of the stream must not slow down writes. Events wait in a
// buffer for a writer goroutine, in the order they were published; when the
// buffer is full they are dropped and counted (see Dropped).
type JSONL struct {
	ch      chan ledger.Event
	done    chan struct{}
	w       *bufio.Writer
	closer  io.Closer // nil when the destination is not ours to close
	dropped atomic.Int64
	werr    error // the first write error, set by the writer goroutine

	// mu guards closed: Publish holds it shared, so that Close does not
	// close the channel under a send.
	mu     sync.RWMutex
	closed bool
}

// NewJSONL starts a sink writing to w; buffer is the number of events that
// may wait (DefaultBuffer if not positive). If w is an io.Closer, Close
// closes it.
func NewJSONL(w io.Writer, buffer int) *JSONL {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	s := &JSONL{ch: make(chan ledger.Event, buffer), done: make(chan struct{}), w: bufio.NewWriter(w)}
	if c, ok := w.(io.Closer); ok {
		s.closer = c
	}
	go s.run()
	return s
}

// run writes events until the channel is closed, flushing whenever it has
// caught up, so that a reader tailing the stream sees each event promptly.
func (s *JSONL) run() {
	defer close(s.done)
	for e := range s.ch {
		b, err := json.Marshal(e)
		if err != nil {
			// An unencodable payload: say so in the stream rather than
			// lose the line silently.
			b, _ = json.Marshal(ledger.Event{Type: e.Type, SessionID: e.SessionID, Timestamp: e.Timestamp,
				Data: map[string]any{"error": "event data could not be encoded: " + err.Error()}})
		}
		b = append(b, '\n')
		if _, err := s.w.Write(b); err != nil && s.werr == nil {
			s.werr = err
		}
		if len(s.ch) == 0 {
			if err := s.w.Flush(); err != nil && s.werr == nil {
				s.werr = err
			}
		}
	}
}

// Publish queues an event for writing; it drops the event if the buffer is
// full or the sink is closed.
func (s *JSONL) Publish(e ledger.Event) {
	if s == nil || e.Type == ledger.EventCritiqueAdded {
		// critique_added is not among seed 002's ThoughtboxEvent types:
		// it is for sinks in the process (the Observatory).
		return
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		s.dropped.Add(1)
		return
	}
	select {
	case s.ch <- e:
	default:
		s.dropped.Add(1)
	}
}

// Dropped is the number of events that were not written because the
// buffer was full or the sink closed.
func (s *JSONL) Dropped() int64 {
	if s == nil {
		return 0
	}
	return s.dropped.Load()
}

// Close writes the events still waiting, then closes the destination if it
// is a file this package opened (or a Closer given to NewJSONL). It reports
// the first write error, and how many events were dropped.
func (s *JSONL) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.ch)
	s.mu.Unlock()
	<-s.done
	err := s.werr
	if s.closer != nil {
		err = errors.Join(err, s.closer.Close())
	}
	if n := s.dropped.Load(); n > 0 {
		err = errors.Join(err, fmt.Errorf("events: %d events dropped: the stream's reader fell %d events behind", n, cap(s.ch)))
	}
	return err
}

// Open returns a sink writing to dest: stderr (given here, so that tests
// and the CLI's injected environment work) when dest is "" or "stderr" in
// any case, else the file dest, opened for appending, its folder created
// if needed. Package config reads and checks the settings that choose
// dest (THOUGHTBOX_EVENTS_DEST).
func Open(dest string, stderr io.Writer) (*JSONL, error) {
	switch strings.ToLower(dest) {
	case "", "stderr":
		// stderr is shared with diagnostics and the thought log; the
		// sink must not close it.
		return NewJSONL(writerOnly{stderr}, 0), nil
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(dest, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return NewJSONL(f, 0), nil
}

// writerOnly hides a writer's Close method.
type writerOnly struct{ io.Writer }

// Tee returns a sink that hands each event to every non-nil sink, in order
// (the JSONL stream and the Observatory, say); nil if there are none. A nil
// *JSONL counts as none.
func Tee(sinks ...ledger.EventSink) ledger.EventSink {
	var live []ledger.EventSink
	for _, s := range sinks {
		if s == nil {
			continue
		}
		if j, ok := s.(*JSONL); ok && j == nil {
			continue
		}
		live = append(live, s)
	}
	switch len(live) {
	case 0:
		return nil
	case 1:
		return live[0]
	}
	return tee(live)
}

type tee []ledger.EventSink

func (t tee) Publish(e ledger.Event) {
	for _, s := range t {
		s.Publish(e)
	}
}
