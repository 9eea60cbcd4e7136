package httptransport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway/internal/direct"
	"github.com/thoughtbox/thoughtbox/gateway/internal/wire"
)

// errRejected is the SDK's "rejected by transport" (-32005): a write that
// fails with it fails only that message, not the whole session (the
// SDK's jsonrpc2 layer tells it apart by its code).
var errRejected = &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}

func rejected(why string) error { return fmt.Errorf("%w: %s", errRejected, why) }

// maxStandalone bounds the messages kept for the client's GET stream while
// it is not connected (the SDK drops them): list_changed sent right after
// initialize reaches a client whose GET arrives a moment later.
const maxStandalone = 64

// session is one MCP session: the mcp.Connection its *mcp.Server reads
// from and writes to, fed by the POSTs that carry the session's id.
type session struct {
	id     string
	h      *Handler
	ss     *mcp.ServerSession
	userID string // of the token that opened it; later requests must match

	incoming chan jsonrpc.Message
	done     chan struct{}

	mu     sync.Mutex
	closed bool
	// calls are the client's requests not answered yet, by id, each with
	// the response stream of the POST that carried it.
	calls map[jsonrpc.ID]*call
	// byExtra finds the call a handler's context belongs to (see
	// Correlate): messages the server sends during a call go on that
	// call's response.
	byExtra map[*mcp.RequestExtra]*call
	// standalone is the client's GET stream, if one is connected, and
	// queued what was sent to it while none was.
	standalone *stream
	queued     []item

	// busy counts the requests in progress (POSTs, and the GET stream
	// while open) and lastUsed is when the last one ended (UnixNano):
	// what Handler.reserve reads to find the session idle longest.
	busy     atomic.Int32
	lastUsed atomic.Int64

	// timer closes the session after Options.SessionTimeout without a
	// POST; refs counts the POSTs in progress, which pause it.
	timerMu sync.Mutex
	timer   *time.Timer
	refs    int

	// direct takes calls before the server sees them (see Direct); dctx
	// is the parent of their contexts, cancelled when the session closes.
	direct  Direct
	dctx    context.Context
	dcancel context.CancelFunc
	// directs are the direct calls under way, for notifications/cancelled,
	// and running counts them, for shut; draining (guarded by mu) is set
	// once the session is closing, after which no call is taken.
	directs  direct.Running
	running  sync.WaitGroup
	draining bool
}

type call struct {
	s     *stream
	extra *mcp.RequestExtra
}

// stream is where the messages for one HTTP response are queued; the
// request's own goroutine writes them, so that a slow client holds up
// only its own response.
type stream struct {
	mu      sync.Mutex
	queue   []item
	gone    bool // the HTTP request has ended: nothing more is written
	pending int  // calls of this POST not answered yet
	wake    chan struct{}
	// spawn, while a call is answered inline (see answerInline), starts
	// the writer of this response, whose end closes writer; the first
	// message that is not the answer calls it.
	spawn  func()
	writer chan struct{}
}

func newStream(pending int) *stream {
	return &stream{pending: pending, wake: make(chan struct{}, 1)}
}

// item is one encoded message; answer marks the answer to a call.
type item struct {
	data   []byte
	answer bool
}

// push queues data, reporting false if the response has ended.
func (s *stream) push(data []byte, answers bool) bool {
	s.mu.Lock()
	if s.gone {
		s.mu.Unlock()
		return false
	}
	s.queue = append(s.queue, item{data, answers})
	if answers {
		s.pending--
	} else if s.spawn != nil && s.writer == nil {
		s.spawn()
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

// take returns what is queued and whether every call has been answered.
func (s *stream) take() ([]item, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue = nil
	return q, s.pending <= 0
}

func (s *stream) end() {
	s.mu.Lock()
	s.gone = true
	s.queue = nil
	s.mu.Unlock()
}

// Connect implements mcp.Transport: the session is its own connection.
func (c *session) Connect(context.Context) (mcp.Connection, error) { return c, nil }

func (c *session) SessionID() string { return c.id }

func (c *session) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case m := <-c.incoming:
		return m, nil
	case <-c.done:
		return nil, io.EOF
	}
}

// deliver hands the messages of a POST to the server, reporting false if
// the session closed first.
func (c *session) deliver(msgs []jsonrpc.Message) bool {
	for _, m := range msgs {
		select {
		case c.incoming <- m:
		case <-c.done:
			return false
		}
	}
	return true
}

func (c *session) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a message: %v", err)
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		cl := c.calls[resp.ID]
		if cl != nil {
			delete(c.calls, resp.ID)
			delete(c.byExtra, cl.extra)
		}
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return rejected("the session is closed")
		}
		if cl == nil || !cl.s.push(data, true) {
			return rejected(fmt.Sprintf("the request %v is no longer waiting for its answer", resp.ID.Raw()))
		}
		return nil
	}
	// A request or notification: on the response of the call it was made
	// for, if it is still being answered, else on the GET stream.
	extra, _ := ctx.Value(extraKey{}).(*mcp.RequestExtra)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return rejected("the session is closed")
	}
	var cl *call
	if extra != nil {
		cl = c.byExtra[extra]
	}
	if cl == nil {
		if s := c.standalone; s != nil && s.push(data, false) {
			c.mu.Unlock()
			return nil
		}
		if len(c.queued) >= maxStandalone {
			c.mu.Unlock()
			return rejected("the client has no GET stream open and too many messages wait for one")
		}
		c.queued = append(c.queued, item{data: data})
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	if !cl.s.push(data, false) {
		return rejected("the request this message belongs to has ended")
	}
	return nil
}

// Close ends the session: its hanging requests return, and its id is
// forgotten. It is called by the SDK when the server session closes.
func (c *session) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.done)
	c.mu.Unlock()
	// Closed otherwise than by shut (which waited for them): the direct
	// calls still running end as the connection's own would.
	c.dcancel()
	c.timerMu.Lock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	c.timerMu.Unlock()
	c.h.forget(c.id)
	return nil
}

// startPOST marks the session busy and pauses the idle timer while a
// POST is served.
func (c *session) startPOST() {
	c.busy.Add(1)
	c.timerMu.Lock()
	defer c.timerMu.Unlock()
	if c.timer == nil {
		return
	}
	if c.refs == 0 {
		c.timer.Stop()
	}
	c.refs++
}

// endPOST restarts the idle timer once no POST is in progress.
func (c *session) endPOST() {
	c.idle()
	c.timerMu.Lock()
	defer c.timerMu.Unlock()
	if c.timer == nil {
		return
	}
	if c.refs--; c.refs == 0 {
		c.timer.Reset(c.h.opts.SessionTimeout)
	}
}

// register records the calls of a POST as answered on s, refusing an id
// still in flight (its answer could not be told from the other's).
func (c *session) register(s *stream, reqs []*jsonrpc.Request) *rpcError {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, r := range reqs {
		dup := c.calls[r.ID] != nil
		for _, o := range reqs[:i] {
			dup = dup || o.ID == r.ID
		}
		if dup {
			return &rpcError{ID: wire.RawID(r.ID), Code: jsonrpc.CodeInvalidRequest,
				Message: fmt.Sprintf("invalid request: id %v is already in use by a request not answered yet", r.ID.Raw())}
		}
	}
	for _, r := range reqs {
		extra := r.Extra.(*mcp.RequestExtra)
		cl := &call{s: s, extra: extra}
		c.calls[r.ID] = cl
		c.byExtra[extra] = cl
	}
	return nil
}

// attach makes s the GET stream, handing it what waited for one; it
// reports false if another GET holds the stream.
func (c *session) attach(s *stream) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.standalone != nil {
		return false
	}
	c.standalone = s
	c.busy.Add(1)
	for _, q := range c.queued {
		s.push(q.data, false)
	}
	c.queued = nil
	return true
}

func (c *session) detach(s *stream) {
	c.mu.Lock()
	if c.standalone == s {
		c.standalone = nil
		c.idle()
	}
	c.mu.Unlock()
	s.end()
}

// idle ends one request of those busy counts.
func (c *session) idle() {
	c.lastUsed.Store(time.Now().UnixNano())
	c.busy.Add(-1)
}

type extraKey struct{}

// Correlate is the receiving middleware the Handler adds to each server:
// it marks a handler's context with its request, so that what the server
// sends while handling it (a sampling or roots request, a progress
// notification) goes on that request's response, where a client that
// has no GET stream open still receives it.
func Correlate(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if extra := req.GetExtra(); extra != nil {
			ctx = context.WithValue(ctx, extraKey{}, extra)
		}
		return next(ctx, method, req)
	}
}

// errTooManySessions is returned by open when the cap is reached and no
// session is idle.
var errTooManySessions = errors.New("too many MCP sessions")

// reserve makes room for one more session under Options.MaxSessions:
// past the cap it closes the session idle longest, and with none idle
// (every session has a request in progress or a GET stream open) it
// refuses. Idle sessions go first because a client that is between calls
// loses nothing it cannot get back with a new initialize, whereas one in
// a call would lose its answer.
func (h *Handler) reserve() error {
	h.mu.Lock()
	max := h.opts.MaxSessions
	if max < 0 || len(h.sessions)+h.opening < max {
		h.opening++
		h.mu.Unlock()
		return nil
	}
	var victim *session
	for _, s := range h.sessions {
		if s.busy.Load() == 0 && (victim == nil || s.lastUsed.Load() < victim.lastUsed.Load()) {
			victim = s
		}
	}
	if victim == nil {
		n := len(h.sessions) + h.opening
		h.mu.Unlock()
		return fmt.Errorf("%w: %d are open, the most allowed (THOUGHTBOX_HTTP_MAX_SESSIONS), and every one is in use; try again once one ends", errTooManySessions, n)
	}
	// Forgotten now, so that it no longer counts and no other open picks
	// it; closed outside the lock, which Close takes to forget it again.
	delete(h.sessions, victim.id)
	h.evicted++
	h.opening++
	h.mu.Unlock()
	h.opts.Logger.Info("mcp http: closing the session idle longest to make room for a new one", "session", victim.id)
	_ = victim.shut()
	return nil
}

// Evicted is the number of sessions closed to make room for new ones.
func (h *Handler) Evicted() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.evicted
}

// firstCallID is the raw id of the first call among msgs, for an error
// that answers it (nil: none).
func firstCallID(msgs []jsonrpc.Message) json.RawMessage {
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			return wire.RawID(req.ID)
		}
	}
	return nil
}
