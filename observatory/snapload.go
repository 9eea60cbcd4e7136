package observatory

import (
	"context"
	"sync"
)

// A snapshot is a read of the whole session under its lock, so the
// subscribers of one session share their reads: while a read runs, those
// who ask join the next one, which starts when it ends. Twenty browsers
// opening a session at once then cost two reads, not twenty, and the
// agent writing to it waits for at most two. A subscriber never joins a
// read already under way: that read may have passed the moment it
// registered for events, and it would miss the ones in between.

// sessionLoads are the reads of one session's snapshot: the one running
// and the one that starts after it.
type sessionLoads struct {
	running, next *snapLoad
}

// snapLoad is one read of a session, shared by the subscribers who asked
// for it; done is closed once snap and err are set.
type snapLoad struct {
	// waiters counts the subscribers that joined it while another read
	// ran (guarded by hub.mu).
	waiters int
	done    chan struct{}
	snap    *sharedSnapshot
	err     error
}

// sharedSnapshot is a loaded session as every subscriber of the read
// sends it: the encoded message, made once, and the node ids it holds.
type sharedSnapshot struct {
	have     map[string]bool
	snap     Snapshot
	once     sync.Once
	msg      []byte
	seedOnce sync.Once
	seed     []byte
}

// message is the snapshot encoded for topic (the same for every
// subscriber of the read) in our form or the seed's, each encoded by the
// first who asks for it.
func (s *sharedSnapshot) message(topic string, seedForm bool) []byte {
	s.once.Do(func() { s.msg = encode(topic, "session:snapshot", s.snap) })
	if !seedForm {
		return s.msg
	}
	s.seedOnce.Do(func() { s.seed = seedMessage(s.msg) })
	return s.seed
}

// loadSnapshot reads session id for a subscriber that has registered, in
// a read that starts after it asked (see above).
func (h *hub) loadSnapshot(ctx context.Context, id string) (*sharedSnapshot, error) {
	h.mu.Lock()
	sl := h.loads[id]
	if sl == nil {
		sl = &sessionLoads{}
		h.loads[id] = sl
	}
	if sl.running == nil {
		r := &snapLoad{done: make(chan struct{})}
		sl.running = r
		h.mu.Unlock()
		// The read outlives this subscriber if it leaves: others may
		// share it.
		h.runLoad(context.WithoutCancel(ctx), id, sl, r)
		return r.snap, r.err
	}
	if sl.next == nil {
		sl.next = &snapLoad{done: make(chan struct{})}
	}
	r := sl.next
	r.waiters++
	h.mu.Unlock()
	select {
	case <-r.done:
		return r.snap, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// runLoad performs r, then starts the read that waited for it, if any.
func (h *hub) runLoad(ctx context.Context, id string, sl *sessionLoads, r *snapLoad) {
	for r != nil {
		v, err := h.o.ledger.Load(ctx, id)
		if err == nil {
			s := &sharedSnapshot{snap: snapshotOf(v, h.o.now(), h.o.cfg.AbandonAfter), have: make(map[string]bool, v.Graph.Len())}
			for _, n := range v.Graph.Nodes() {
				s.have[n.ID] = true
			}
			r.snap = s
		}
		r.err = err
		close(r.done)
		h.mu.Lock()
		r, sl.running, sl.next = sl.next, sl.next, nil
		if r == nil {
			delete(h.loads, id)
		}
		h.mu.Unlock()
	}
}
