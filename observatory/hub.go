package observatory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// Topics of the wire protocol.
const (
	// TopicObservatory carries what concerns all sessions: the active list,
	// listings, sessions starting and ending.
	TopicObservatory = "observatory"
	// TopicReasoningPrefix, followed by a session id, carries one session:
	// its snapshot, then its thoughts as they are committed.
	TopicReasoningPrefix = "reasoning:"
)

// hub routes the ledger's events to the connections subscribed to them.
//
// Publish runs on the writer's goroutine with the session's lock held, so
// it only puts the event on the hub's queue (one channel send, never a
// wait); the hub's dispatcher encodes it once and hands it to each
// subscriber's bounded queue. A subscriber whose queue is full is cut off
// (it reconnects and gets a fresh snapshot); the thought is unaffected.
// One dispatcher keeps the events in the order they were published, which
// for one session is commit order.
type hub struct {
	o *Observatory

	// events is the dispatcher's queue; quit stops the dispatcher.
	events chan ledger.Event
	quit   chan struct{}
	// subscribed counts subscriptions, so that Publish skips the queue
	// while nobody watches.
	subscribed atomic.Int64

	// mu guards clients and topics, and is held while messages are put on
	// queues, so that a snapshot and the events that follow it reach a
	// subscriber in commit order.
	mu      sync.Mutex
	clients map[*client]struct{}
	topics  map[string]map[*client]*subscription
	closed  bool
	// loads are the snapshot reads under way, by session (snapload.go).
	loads map[string]*sessionLoads

	// dropped counts clients cut off for falling behind; coalesced the
	// subscribes answered by a snapshot already on its way.
	dropped   atomic.Int64
	coalesced atomic.Int64
}

// client is one WebSocket connection as the hub sees it.
type client struct {
	// qmu guards queue, queued, flight, credit, enq, written and since.
	// It is taken inside hub.mu by the hub, and alone by the
	// connection's writer.
	qmu    sync.Mutex
	queue  [][]byte
	queued int // bytes in queue
	// flight is the bytes the writer has taken and not yet written;
	// queued plus flight is what Config.QueueBytes bounds, beyond credit,
	// the largest snapshot among them (a snapshot may be larger than the
	// bound, and a client must be able to receive one).
	flight, credit int
	// enq numbers the messages queued, written those written, so that a
	// subscription knows whether its snapshot has gone (see snapSeq).
	enq, written uint64
	// since is when the oldest message in queue was queued: the writer
	// takes the whole queue at once, so this is how long the connection
	// has taken nothing.
	since time.Time
	// wake tells the writer that the queue is not empty.
	wake chan struct{}
	// gone is closed when the hub stops delivering to the client: it fell
	// behind, or the Observatory is closing. reason says which.
	gone     chan struct{}
	goneOnce sync.Once
	reason   string
	// subs are the client's topics; guarded by hub.mu.
	subs map[string]*subscription
	// speaks is the wire form of the client's first message, and seedOut
	// whether what is sent to it is in the seed's form (before its first
	// message, as the path it connected to says); both guarded by hub.mu.
	speaks  form
	seedOut bool
	// abort interrupts a write in progress, so that a client cut off
	// gives back the memory of what was being written at once.
	abort func()
	// tokens and refilled are the subscribe rate limit's bucket; only
	// the connection's reader uses them.
	tokens   float64
	refilled time.Time
}

// subscription is one client's interest in one topic. A reasoning
// subscription starts pending: events wait in pending until the snapshot is
// queued, then those the snapshot already holds are dropped and the rest
// follow it.
type subscription struct {
	live bool
	// only, when set, keeps the events of that session alone (a seed
	// subscription to the sessions channel with a session id).
	only string
	// loading is set while the snapshot is read; snapSeq is the number
	// of the snapshot's message in its client's queue. A subscribe while
	// either says a snapshot is on its way is answered by that snapshot.
	loading bool
	snapSeq uint64
	pending []pendingEvent
	// have holds the snapshot's thoughts until the first event of a
	// thought it lacks: events published before the snapshot was read
	// may still be on the hub's queue, and must not repeat it.
	have map[string]bool
}

type pendingEvent struct {
	nodeID string // "" for events that are not about one thought
	msg    []byte
}

// eventQueue is how many events may wait for the dispatcher.
const eventQueue = 8192

func newHub(o *Observatory) *hub {
	h := &hub{o: o, clients: map[*client]struct{}{}, topics: map[string]map[*client]*subscription{}, loads: map[string]*sessionLoads{},
		events: make(chan ledger.Event, eventQueue), quit: make(chan struct{})}
	go h.run()
	return h
}

func (h *hub) run() {
	for {
		select {
		case e := <-h.events:
			h.dispatch(e)
		case <-h.quit:
			return
		}
	}
}

// join registers a new connection; false when the hub is closed or full.
func (h *hub) join(max int) (*client, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("the Observatory is shutting down")
	}
	if max > 0 && len(h.clients) >= max {
		return nil, fmt.Errorf("too many Observatory connections: %d open, THOUGHTBOX_OBSERVATORY_MAX_CONNECTIONS is %d", len(h.clients), max)
	}
	c := &client{wake: make(chan struct{}, 1), gone: make(chan struct{}), subs: map[string]*subscription{}}
	h.clients[c] = struct{}{}
	return c, nil
}

// leave forgets a connection and its subscriptions.
func (h *hub) leave(c *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.removeLocked(c)
}

func (h *hub) removeLocked(c *client) {
	for topic := range c.subs {
		h.unsubscribeLocked(c, topic)
	}
	delete(h.clients, c)
}

func (h *hub) unsubscribeLocked(c *client, topic string) {
	if _, ok := c.subs[topic]; ok {
		h.subscribed.Add(-1)
	}
	delete(c.subs, topic)
	if subs := h.topics[topic]; subs != nil {
		delete(subs, c)
		if len(subs) == 0 {
			delete(h.topics, topic)
		}
	}
}

// cutOffLocked stops delivering to c; its connection closes with reason.
func (h *hub) cutOffLocked(c *client, reason string) {
	c.goneOnce.Do(func() {
		c.reason = reason
		close(c.gone)
	})
	h.removeLocked(c)
}

// dropLocked cuts off a client that fell behind and lets go of what waits
// for it at once, the write in progress included: it is not reading, and
// its queue is the memory a flood of subscribes would pin.
func (h *hub) dropLocked(c *client, reason string) {
	h.dropped.Add(1)
	h.cutOffLocked(c, reason)
	c.qmu.Lock()
	clear(c.queue)
	c.queue, c.queued = nil, 0
	c.qmu.Unlock()
	if c.abort != nil {
		c.abort()
	}
}

// queueSlack is how many times QueueSize a client's queue may hold while
// its writer still takes from it.
const queueSlack = 16

const behind = "fell behind the ledger's events; reconnect for a fresh snapshot"

// queueLocked puts msg on c's queue, or cuts c off if c is stuck or too
// far behind. A queue past QueueSize alone is not enough: on a loaded
// machine a reader that keeps up on average can be a few hundred messages
// behind for a moment, and cutting it off would cost it a snapshot. Bytes
// are bounded whatever the count: QueueBytes, plus the largest snapshot
// waiting.
func (h *hub) queueLocked(c *client, msg []byte) {
	if c.seedOut {
		msg = seedMessage(msg)
	}
	h.enqueueLocked(c, msg, false)
}

// enqueueLocked is queueLocked; snapshot marks msg as a snapshot, which
// the byte bound allows on top of QueueBytes. It returns msg's number in
// c's queue, 0 if c was cut off.
func (h *hub) enqueueLocked(c *client, msg []byte, snapshot bool) uint64 {
	select {
	case <-c.gone:
		return 0 // cut off: nothing more is kept for it
	default:
	}
	now := time.Now()
	c.qmu.Lock()
	n := len(c.queue)
	credit := c.credit
	if snapshot {
		credit = max(credit, len(msg))
	}
	if c.queued+c.flight+len(msg) > h.o.cfg.QueueBytes+credit ||
		n >= h.o.cfg.QueueSize && (n >= queueSlack*h.o.cfg.QueueSize || now.Sub(c.since) > h.o.cfg.StallTimeout) {
		c.qmu.Unlock()
		h.dropLocked(c, behind)
		return 0
	}
	if n == 0 {
		c.since = now
	}
	c.queue = append(c.queue, msg)
	c.queued += len(msg)
	c.credit = credit
	c.enq++
	seq := c.enq
	c.qmu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default: // the writer has been told already
	}
	return seq
}

// queueLen is how many messages wait for c's writer.
func (c *client) queueLen() int {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	return len(c.queue)
}

// take empties c's queue and returns what it held; spare, emptied, becomes
// the new queue, so that two slices serve a connection's whole life.
func (c *client) take(spare [][]byte) [][]byte {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if len(c.queue) == 0 {
		return nil // and spare stays the caller's
	}
	q := c.queue
	c.flight += c.queued
	c.queue, c.queued = spare[:0], 0
	return q
}

// sent records that the writer has written batch, which take gave it.
func (c *client) sent(batch [][]byte) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	for _, m := range batch {
		c.flight -= len(m)
	}
	c.written += uint64(len(batch))
	if c.queued+c.flight == 0 {
		c.credit = 0
	}
}

// snapshotGone reports whether the message numbered seq has been written.
func (c *client) snapshotGone(seq uint64) bool {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	return c.written >= seq
}

// pendingBytes is what waits for c: queued and being written.
func (c *client) pendingBytes() int {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	return c.queued + c.flight
}

// deliver sends msg to every live subscriber of topic, and holds it for
// pending ones.
func (h *hub) deliver(topic, sessionID, nodeID string, msg []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var seed []byte // msg in the seed's form, made for the first who needs it
	for c, s := range h.topics[topic] {
		if s.only != "" && s.only != sessionID {
			continue
		}
		if s.live {
			if s.have != nil && nodeID != "" {
				if s.have[nodeID] {
					continue // the snapshot holds it
				}
				s.have = nil
			}
			out := msg
			if c.seedOut {
				if seed == nil {
					seed = seedMessage(msg)
				}
				out = seed
			}
			h.enqueueLocked(c, out, false)
			continue
		}
		if len(s.pending) >= queueSlack*h.o.cfg.QueueSize {
			h.dropLocked(c, behind)
			continue
		}
		s.pending = append(s.pending, pendingEvent{nodeID: nodeID, msg: msg})
	}
}

func (h *hub) hasSubscribers(topics ...string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range topics {
		if len(h.topics[t]) > 0 {
			return true
		}
	}
	return false
}

// close cuts every client off.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		close(h.quit)
	}
	h.closed = true
	for c := range h.clients {
		h.cutOffLocked(c, "the Observatory is shutting down")
	}
}

// encode builds one wire message, [topic, event, payload].
func encode(topic, event string, payload any) []byte {
	b, err := json.Marshal([]any{topic, event, payload})
	if err != nil {
		// Payloads are this package's own types; failing to encode one is
		// a defect, reported to the client rather than dropped silently.
		b, _ = json.Marshal([]any{topic, "error", ErrorPayload{Code: ledger.CodeInternal, Message: "encode " + event + ": " + err.Error()}})
	}
	return b
}

// publish queues a ledger event for the dispatcher. It never waits and
// never calls the ledger (it runs under the writer's session lock). An
// event that finds the queue full is lost to the subscribers of its
// session, who are cut off so that they resume from a snapshot.
//
// While nobody is subscribed, events are not queued at all: a subscriber
// that arrives later reads its snapshot through the session's lock, after
// any event published under it, so it misses nothing.
func (h *hub) publish(e ledger.Event) {
	switch e.Type {
	case ledger.EventSessionStarted, ledger.EventThoughtAdded, ledger.EventThoughtRevised, ledger.EventBranchCreated,
		ledger.EventCritiqueAdded:
	default:
		return
	}
	if h.subscribed.Load() == 0 {
		return
	}
	select {
	case h.events <- e:
	default:
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, topic := range []string{TopicObservatory, TopicReasoningPrefix + e.SessionID} {
			for c := range h.topics[topic] {
				h.dropLocked(c, "the Observatory fell behind the ledger's events; reconnect for a fresh snapshot")
			}
		}
	}
}

// dispatch turns a ledger event into wire messages for its subscribers.
func (h *hub) dispatch(e ledger.Event) {
	switch e.Type {
	case ledger.EventSessionStarted:
		if !h.hasSubscribers(TopicObservatory) {
			return
		}
		title, _ := e.Data["title"].(string)
		tags, _ := e.Data["tags"].([]string)
		if tags == nil {
			tags = []string{}
		}
		s := Session{ID: e.SessionID, Title: &title, Tags: tags, CreatedAt: e.Timestamp, UpdatedAt: e.Timestamp, Status: StatusActive}
		h.deliver(TopicObservatory, e.SessionID, "", encode(TopicObservatory, "session:started", map[string]any{"session": s}))
	case ledger.EventThoughtAdded, ledger.EventThoughtRevised, ledger.EventBranchCreated:
		if e.Node == nil {
			return
		}
		topic := TopicReasoningPrefix + e.SessionID
		if !h.hasSubscribers(topic, topicAllReasoning, TopicObservatory) {
			return
		}
		t := thoughtOf(*e.Node)
		payload := map[string]any{"thought": t, "parentId": t.ParentID}
		event := "thought:added"
		switch e.Type {
		case ledger.EventThoughtRevised:
			event = "thought:revised"
			if t.RevisesThought != nil {
				payload["originalThoughtNumber"] = *t.RevisesThought
			}
			payload["revisedNodeId"] = t.RevisesNode
		case ledger.EventBranchCreated:
			event = "thought:branched"
			payload["branchId"] = t.BranchID
			if t.BranchFromThought != nil {
				payload["fromThoughtNumber"] = *t.BranchFromThought
			}
		}
		msg := encode(topic, event, payload)
		h.deliver(topic, e.SessionID, t.ID, msg)
		h.deliver(topicAllReasoning, e.SessionID, "", msg)
		h.deliver(TopicObservatory, e.SessionID, "", encode(TopicObservatory, "session:updated", map[string]any{
			"sessionId": e.SessionID, "thoughtCount": e.ThoughtCount, "updatedAt": t.Timestamp,
		}))
		if !t.NextThoughtNeeded {
			ended := map[string]any{"sessionId": e.SessionID, "finalThoughtCount": e.ThoughtCount, "completedAt": t.Timestamp}
			msg := encode(topic, "session:ended", ended)
			h.deliver(topic, e.SessionID, t.ID, msg)
			h.deliver(topicAllReasoning, e.SessionID, "", msg)
			h.deliver(TopicObservatory, e.SessionID, "", encode(TopicObservatory, "session:ended", ended))
		}
	case ledger.EventCritiqueAdded:
		// Not in the original's protocol: a critique arrives after its
		// thought, so it gets an event of its own carrying the thought
		// with its critique (and the critique alone, for a light client).
		if e.Node == nil || e.Node.Data.Critique == nil {
			return
		}
		topic := TopicReasoningPrefix + e.SessionID
		if !h.hasSubscribers(topic, topicAllReasoning) {
			return
		}
		t := thoughtOf(*e.Node)
		// nodeID "": a critique is not a thought a snapshot could already
		// hold, so a subscriber waiting for its snapshot keeps it.
		msg := encode(topic, "thought:critiqued", map[string]any{
			"thoughtId": t.ID, "thought": t, "critique": e.Node.Data.Critique,
		})
		h.deliver(topic, e.SessionID, "", msg)
		h.deliver(topicAllReasoning, e.SessionID, "", msg)
	}
}

// subscribe adds c to topic and sends what a new subscriber gets: for a
// session, its snapshot read from the ledger; for the observatory topic,
// the active sessions.
func (h *hub) subscribe(ctx context.Context, c *client, topic string) {
	switch {
	case topic == TopicObservatory:
		h.mu.Lock()
		if _, ok := c.subs[topic]; !ok {
			h.addLocked(c, topic, &subscription{live: true})
		}
		h.queueLocked(c, encode(topic, "subscribed", map[string]any{"topic": topic}))
		h.mu.Unlock()
		list, err := h.o.activeSessions(ctx)
		if err != nil {
			h.sendError(c, topic, err)
			return
		}
		h.send(c, encode(topic, "sessions:active", map[string]any{"sessions": list}))
	case strings.HasPrefix(topic, TopicReasoningPrefix):
		id := strings.TrimPrefix(topic, TopicReasoningPrefix)
		if id == "" {
			h.sendError(c, topic, ledger.InvalidField("topic", "must be reasoning:<sessionId>, got %q", topic))
			return
		}
		s := &subscription{loading: true}
		h.mu.Lock()
		if old, ok := c.subs[topic]; ok && (old.loading || !c.snapshotGone(old.snapSeq)) {
			// A snapshot is being read or waits to be written: it and
			// the events after it are what a new one would say, so
			// this subscribe costs neither a read of the session nor
			// the memory of a second copy.
			h.mu.Unlock()
			h.coalesced.Add(1)
			return
		} else if ok {
			// Subscribing again once the snapshot has gone asks for a
			// fresh one: hold events again until it is queued.
			old.live, old.loading = false, true
			s = old
		} else {
			h.addLocked(c, topic, s)
		}
		h.mu.Unlock()
		shared, err := h.loadSnapshot(ctx, id)
		if err != nil {
			h.mu.Lock()
			if c.subs[topic] == s {
				h.unsubscribeLocked(c, topic)
			}
			h.mu.Unlock()
			h.sendError(c, topic, err)
			return
		}
		// Encoded outside the hub's lock: a snapshot may be megabytes.
		h.mu.Lock()
		seedOut := c.seedOut
		h.mu.Unlock()
		have, msg := shared.have, shared.message(topic, seedOut)
		h.mu.Lock()
		defer h.mu.Unlock()
		if c.subs[topic] != s {
			return // unsubscribed (or cut off) while the snapshot loaded
		}
		s.loading = false
		h.queueLocked(c, encode(topic, "subscribed", map[string]any{"topic": topic}))
		if s.snapSeq = h.enqueueLocked(c, msg, true); s.snapSeq == 0 {
			return // cut off
		}
		for _, p := range s.pending {
			if p.nodeID == "" || !have[p.nodeID] {
				h.queueLocked(c, p.msg)
			}
		}
		s.pending, s.live, s.have = nil, true, have
	default:
		e := ledger.Errorf(ledger.CodeInvalidPayload, "unknown topic %q: expected %q or %q followed by a session id", topic, TopicObservatory, TopicReasoningPrefix)
		e.Details = map[string]any{"topic": topic}
		h.sendError(c, topic, e)
	}
}

func (h *hub) addLocked(c *client, topic string, s *subscription) {
	h.subscribed.Add(1)
	c.subs[topic] = s
	subs := h.topics[topic]
	if subs == nil {
		subs = map[*client]*subscription{}
		h.topics[topic] = subs
	}
	subs[c] = s
}

func (h *hub) unsubscribe(c *client, topic string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := c.subs[topic]; !ok {
		h.queueLocked(c, encode(topic, "error", ErrorPayload{Code: ledger.CodeInvalidOperation,
			Message: fmt.Sprintf("not subscribed to %q", topic), Details: map[string]any{"topic": topic}}))
		return
	}
	h.unsubscribeLocked(c, topic)
	h.queueLocked(c, encode(topic, "unsubscribed", map[string]any{"topic": topic}))
}

func (h *hub) subscribedTo(c *client) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(c.subs)
}

// send queues one reply for c.
func (h *hub) send(c *client, msg []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.queueLocked(c, msg)
}

func (h *hub) sendError(c *client, topic string, err error) {
	h.send(c, encode(topic, "error", errorPayload(err)))
}

func errorPayload(err error) ErrorPayload {
	e := ledger.AsError(err)
	return ErrorPayload{Code: e.Code, Message: e.Error(), Details: e.Details}
}

// statusCache remembers each session's completion, keyed by what the
// listing says of it, so that listing does not reload unchanged sessions.
type statusCache struct {
	mu sync.Mutex
	m  map[string]statusEntry
}

type statusEntry struct {
	updated     time.Time
	count       int
	completed   bool
	completedAt time.Time
}
