package wal

import (
	"context"
	"errors"
	"sync"
)

// ErrClosed is returned by Group.Commit once Close has begun.
var ErrClosed = errors.New("store is closed")

// Request is one caller's batch in a commit group; the group's commit
// function sets Err for it (nil: committed).
type Request struct {
	Batch *Batch
	Err   error
	done  chan struct{}
	// promote tells a waiting caller to lead the next group.
	promote chan struct{}
}

// Group lets concurrent callers commit for each other (group commit): the
// first to arrive leads — it takes every batch queued so far, commits them
// together (one append, one fsync), and wakes their callers — while the
// others wait; when it is done, the first caller still waiting leads the
// next group. A lone writer thus commits on its own goroutine, with no
// handoff to a committing goroutine and back.
//
// Its mutex is a leaf: it is let go before the commit function runs.
type Group struct {
	mu       sync.Mutex
	queue    []*Request
	leading  bool
	stopping bool
	inflight sync.WaitGroup
}

// Commit queues b and returns its verdict. commit is called by the leader
// with the whole group and sets each request's Err. ctx is honoured until
// the batch is queued; once queued it may be committed by another caller's
// group, so the verdict is awaited rather than a cancellation reported
// that did not happen.
func (g *Group) Commit(ctx context.Context, b *Batch, commit func([]*Request)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &Request{Batch: b, done: make(chan struct{}), promote: make(chan struct{}, 1)}
	g.mu.Lock()
	if g.stopping {
		g.mu.Unlock()
		return ErrClosed
	}
	g.inflight.Add(1)
	defer g.inflight.Done()
	g.queue = append(g.queue, r)
	if g.leading {
		g.mu.Unlock()
		select {
		case <-r.done:
			return r.Err
		case <-r.promote:
		}
		g.mu.Lock()
	} else {
		g.leading = true
	}
	group := g.queue
	g.queue = nil
	g.mu.Unlock()

	commit(group)
	for _, q := range group {
		close(q.done)
	}

	g.mu.Lock()
	if len(g.queue) > 0 {
		g.queue[0].promote <- struct{}{} // leading stays true: handed on
	} else {
		g.leading = false
	}
	g.mu.Unlock()
	return r.Err
}

// Close refuses new batches and waits for those under way.
func (g *Group) Close() {
	g.mu.Lock()
	g.stopping = true
	g.mu.Unlock()
	g.inflight.Wait()
}
