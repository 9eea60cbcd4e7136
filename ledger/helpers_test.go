package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

var agent = ledger.Author{Name: "test-agent", Email: "agent@example.com"}

// clock ticks one second per reading, so creation order is visible in
// timestamps and tests are deterministic.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

type sink struct {
	mu     sync.Mutex
	events []ledger.Event
}

func (s *sink) Publish(e ledger.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}

func (s *sink) types() []ledger.EventType {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ledger.EventType
	for _, e := range s.events {
		out = append(out, e.Type)
	}
	return out
}

type env struct {
	l     *ledger.Ledger
	store *fakeStore
	sink  *sink
	clock *clock
}

func setup(t *testing.T) env {
	t.Helper()
	store := newFakeStore()
	return setupWith(t, store)
}

// setupWith builds a ledger over store; several ledgers over one store play
// several processes sharing a repository.
func setupWith(t *testing.T, store *fakeStore) env {
	t.Helper()
	var n atomic.Int64
	e := env{store: store, sink: &sink{}, clock: &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}}
	e.l = ledger.New(store, ledger.Options{
		Now:    e.clock.now,
		NewID:  func() string { return fmt.Sprintf("s%d", n.Add(1)) },
		Events: e.sink,
	})
	return e
}

func (e env) start(t *testing.T) string {
	t.Helper()
	s, err := e.l.StartSession(context.Background(), ledger.CreateSessionParams{Title: "test"}, agent)
	if err != nil {
		t.Fatalf("StartSession: %v", err)
	}
	return s.ID
}

func (e env) add(t *testing.T, id string, in ledger.ThoughtInput) *ledger.AddResult {
	t.Helper()
	res, err := e.l.AddThought(context.Background(), id, in, agent)
	if err != nil {
		t.Fatalf("AddThought(%+v): %v", in, err)
	}
	return res
}

func (e env) view(t *testing.T, id string) *ledger.SessionView {
	t.Helper()
	v, err := e.l.View(context.Background(), id)
	if err != nil {
		t.Fatalf("View(%s): %v", id, err)
	}
	return v
}

func ip(n int) *int { return &n }

// th is a plain thought with everything else left to the ledger.
func th(text string) ledger.ThoughtInput {
	return ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true}
}

func num(text string, n int) ledger.ThoughtInput {
	in := th(text)
	in.ThoughtNumber = ip(n)
	return in
}

func onBranch(in ledger.ThoughtInput, b string, from int) ledger.ThoughtInput {
	in.BranchID, in.BranchFromThought = b, ip(from)
	return in
}

func revises(in ledger.ThoughtInput, n int) ledger.ThoughtInput {
	in.IsRevision, in.RevisesThought = true, ip(n)
	return in
}

// wantErr describes an expected failure; the zero value expects success.
type wantErr struct {
	code     ledger.Code
	field    string
	sentinel error
}

func (w wantErr) check(t *testing.T, err error) {
	t.Helper()
	if w.code == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("got no error, want %s on %q", w.code, w.field)
	}
	var e *ledger.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *ledger.Error", err, err)
	}
	if e.Code != w.code {
		t.Errorf("code = %s, want %s (%v)", e.Code, w.code, err)
	}
	if w.field != "" && e.Details["field"] != w.field {
		t.Errorf("details.field = %v, want %q (%v)", e.Details["field"], w.field, err)
	}
	if w.sentinel != nil && !errors.Is(err, w.sentinel) {
		t.Errorf("errors.Is(%v, %v) = false", err, w.sentinel)
	}
}
