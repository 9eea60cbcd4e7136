// Package httptransport serves MCP's Streamable HTTP transport (protocol
// versions 2025-03-26 to 2025-11-25) for *mcp.Server sessions, in place of
// the go-sdk's mcp.StreamableHTTPHandler, with a cheaper request path.
//
// Each POST body is read into a pooled buffer and decoded once; the SDK's
// handler decodes a message three times with a fresh 32 KB buffer each
// time, which under many agents made the collector and the kernel's page
// faults a large share of the server's work. A POST whose calls produce
// only their answers is answered with application/json; one during which
// the server also sends requests or notifications (sampling, roots,
// progress) is answered as an event stream carrying them in order, as the
// protocol allows. A GET opens the session's stream for messages sent
// outside any call (list_changed), DELETE ends the session.
//
// What it keeps of the SDK's handler: Mcp-Session-Id sessions, each with
// its own *mcp.Server; the Mcp-Protocol-Version check; the loopback Host
// check against DNS rebinding; a session tied to the bearer token that
// opened it; sessions closed after an idle timeout; batches before
// 2025-06-18. It differs in refusing, with a JSON-RPC error and 400, a
// body or id it cannot take (the SDK answers some with plain text, which
// its own client takes as a broken session), and in keeping messages for
// a GET stream that is not connected yet instead of dropping them.
package httptransport

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway/internal/direct"
	"github.com/thoughtbox/thoughtbox/gateway/internal/wire"
	"github.com/thoughtbox/thoughtbox/internal/hostcheck"
)

const (
	sessionIDHeader       = "Mcp-Session-Id"
	protocolVersionHeader = "Mcp-Protocol-Version"
	lastEventIDHeader     = "Last-Event-ID"
)

// DefaultMaxBody bounds a POST body, as the SDK's DefaultMaxRequestBodyBytes.
const DefaultMaxBody = 4 << 20

// DefaultMaxSessions bounds the open sessions of a Handler.
const DefaultMaxSessions = 1000

// codeTooManySessions is the JSON-RPC error code (one of the range the
// specification leaves to servers) of an initialize refused for the cap.
const codeTooManySessions = -32000

// Options configure a Handler.
type Options struct {
	// ProtocolVersions are the versions the servers offer; a request whose
	// Mcp-Protocol-Version header names another (older than 2026-07-28)
	// gets 400. Empty: mcp.SupportedProtocolVersions.
	ProtocolVersions []string
	// SessionTimeout closes a session after this long without a POST; 0
	// means never.
	SessionTimeout time.Duration
	// ReadTimeout bounds the reading of a POST body; 0 means none.
	ReadTimeout time.Duration
	// MaxBody bounds a POST body; 0 means DefaultMaxBody.
	MaxBody int64
	// MaxSessions bounds the open sessions; 0 means DefaultMaxSessions,
	// negative means no bound. A new session past it takes the place of
	// the session idle longest (no request in progress, no GET stream
	// open); with none idle it is refused with 503.
	MaxSessions int
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// Handler serves Streamable HTTP. It is safe for concurrent use.
type Handler struct {
	newSession func(*http.Request) (*mcp.Server, Direct)
	opts       Options

	mu       sync.Mutex
	sessions map[string]*session
	// opening counts sessions being connected, not yet in sessions: the
	// cap counts them too.
	opening int
	// evicted counts sessions closed to make room for new ones.
	evicted int
}

// New returns a Handler that starts each session with a server from
// newServer, called once per new session with the request that opens it.
// It must return a new server each time (nil refuses the session): the
// Handler adds its Correlate middleware to it.
func New(newServer func(*http.Request) *mcp.Server, opts Options) *Handler {
	if opts.MaxBody == 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if len(opts.ProtocolVersions) == 0 {
		opts.ProtocolVersions = mcp.SupportedProtocolVersions()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxSessions == 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	return &Handler{newSession: func(r *http.Request) (*mcp.Server, Direct) { return newServer(r), nil }, opts: opts, sessions: map[string]*session{}}
}

// Sessions is the number of open sessions.
func (h *Handler) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

// Close ends every session.
func (h *Handler) Close() {
	h.mu.Lock()
	all := make([]*session, 0, len(h.sessions))
	for _, s := range h.sessions {
		all = append(all, s)
	}
	h.mu.Unlock()
	for _, s := range all {
		_ = s.shut()
	}
}

func (h *Handler) forget(id string) {
	h.mu.Lock()
	delete(h.sessions, id)
	h.mu.Unlock()
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// DNS rebinding: a page on another site must not reach a server on
	// this machine through a name that resolves to it.
	if !hostcheck.Allowed(r, nil) {
		http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
		return
	}
	version := r.Header.Get(protocolVersionHeader)
	if version != "" && version < wire.Stateless && !slices.Contains(h.opts.ProtocolVersions, version) {
		http.Error(w, fmt.Sprintf("Bad Request: Unsupported protocol version (supported versions: %s)", strings.Join(h.opts.ProtocolVersions, ",")), http.StatusBadRequest)
		return
	}
	if version == "" {
		version = wire.AssumedHTTPVersion
	}
	switch r.Method {
	case http.MethodPost:
		h.servePOST(w, r, version)
	case http.MethodGet:
		h.serveGET(w, r)
	case http.MethodDelete:
		h.serveDELETE(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// lookup finds the session r names, answering 400, 404 or 403 if it
// cannot be used.
func (h *Handler) lookup(w http.ResponseWriter, r *http.Request) *session {
	id := r.Header.Get(sessionIDHeader)
	if id == "" {
		http.Error(w, "Bad Request: "+r.Method+" requires an Mcp-Session-Id header", http.StatusBadRequest)
		return nil
	}
	h.mu.Lock()
	s := h.sessions[id]
	h.mu.Unlock()
	if s == nil {
		http.Error(w, "session not found", http.StatusNotFound)
		return nil
	}
	if s.userID != "" && userID(r) != s.userID {
		http.Error(w, "session user mismatch", http.StatusForbidden)
		return nil
	}
	return s
}

func userID(r *http.Request) string {
	if info := auth.TokenInfoFromContext(r.Context()); info != nil {
		return info.UserID
	}
	return ""
}

func (h *Handler) serveDELETE(w http.ResponseWriter, r *http.Request) {
	s := h.lookup(w, r)
	if s == nil {
		return
	}
	_ = s.shut()
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) serveGET(w http.ResponseWriter, r *http.Request) {
	if _, sse := accepts(r.Header.Values("Accept")); !sse {
		http.Error(w, "Accept must contain 'text/event-stream' for GET requests", http.StatusBadRequest)
		return
	}
	if r.Header.Get(sessionIDHeader) == "" {
		http.Error(w, "Bad Request: GET requires an Mcp-Session-Id header", http.StatusBadRequest)
		return
	}
	s := h.lookup(w, r)
	if s == nil {
		return
	}
	if len(r.Header.Values(lastEventIDHeader)) > 0 {
		http.Error(w, "stream replay unsupported", http.StatusBadRequest)
		return
	}
	st := newStream(1) // never done: it lasts until the client leaves
	if !s.attach(st) {
		http.Error(w, "stream ID conflicts with ongoing stream", http.StatusConflict)
		return
	}
	defer s.detach(st)
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	// A comment, so that proxies forward the headers at once.
	_, _ = io.WriteString(w, ": ok\n\n")
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	ev := &eventWriter{w: w, rc: rc}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-st.wake:
		}
		q, _ := st.take()
		for _, it := range q {
			if ev.write(it.data) != nil {
				return
			}
		}
	}
}

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readBody reads a POST body under the read deadline, then lifts it: the
// deadline is per request, not per connection, because an event stream
// lives far longer than any read timeout. On a refusal it stays set: the
// server then discards the rest of the body, which a slow client must not
// be able to stretch out.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer) bool {
	rc := http.NewResponseController(w)
	if h.opts.ReadTimeout > 0 {
		_ = rc.SetReadDeadline(time.Now().Add(h.opts.ReadTimeout))
	}
	if r.ContentLength > h.opts.MaxBody {
		http.Error(w, fmt.Sprintf("Request Entity Too Large: the body is over %d bytes", h.opts.MaxBody), http.StatusRequestEntityTooLarge)
		return false
	}
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + 1)
	}
	n, err := buf.ReadFrom(io.LimitReader(r.Body, h.opts.MaxBody+1))
	if err != nil {
		http.Error(w, "Bad Request: reading the body: "+err.Error(), http.StatusBadRequest)
		return false
	}
	if n > h.opts.MaxBody {
		http.Error(w, fmt.Sprintf("Request Entity Too Large: the body is over %d bytes", h.opts.MaxBody), http.StatusRequestEntityTooLarge)
		return false
	}
	if h.opts.ReadTimeout > 0 {
		_ = rc.SetReadDeadline(time.Time{})
	}
	return true
}

func writeRPCError(w http.ResponseWriter, status int, e *rpcError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(e.Encode())
}

func (h *Handler) servePOST(w http.ResponseWriter, r *http.Request, version string) {
	msgs, batch, ok := h.readPOST(w, r, version)
	if !ok {
		return
	}

	var s *session
	fresh := false
	if r.Header.Get(sessionIDHeader) != "" {
		if s = h.lookup(w, r); s == nil {
			return
		}
	} else {
		if s = h.openOrRefuse(w, r, msgs); s == nil {
			return
		}
		fresh = true
		// A session whose first POST did not initialize it (a probe
		// such as server/discover) cannot be addressed again: it ends
		// with this request, as with the SDK's handler.
		defer func() {
			if s.ss.InitializeParams() == nil {
				_ = s.shut()
			}
		}()
	}
	s.startPOST()
	defer s.endPOST()

	calls, isInit := attachExtras(r, msgs)
	if len(calls) == 0 {
		if !s.deliver(s.takeDirect(msgs)) {
			http.Error(w, "session is closing", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	st := newStream(len(calls))
	if err := s.register(st, calls); err != nil {
		writeRPCError(w, http.StatusBadRequest, err)
		return
	}
	defer st.end()
	if fresh && isInit {
		w.Header().Set(sessionIDHeader, s.id)
	}
	if !batch && len(msgs) == 1 {
		// A lone call, as agents send them: taken directly, it is
		// answered on this goroutine (see answerInline); refused, the
		// server has it without a second offer.
		if fn := s.offer(calls[0]); fn != nil {
			h.answerInline(w, r, s, st, calls[0], fn)
			return
		}
	} else {
		msgs = s.takeDirect(msgs)
	}
	if !s.deliver(msgs) {
		http.Error(w, "session is closing", http.StatusNotFound)
		return
	}
	h.answer(w, r, s, st, batch)
}

// readPOST checks a POST's headers and reads its messages. When ok is
// false the request has been answered with the reason it was refused.
func (h *Handler) readPOST(w http.ResponseWriter, r *http.Request, version string) (msgs []jsonrpc.Message, batch, ok bool) {
	if !isJSON(r.Header.Get("Content-Type")) {
		http.Error(w, "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType)
		return nil, false, false
	}
	if j, sse := accepts(r.Header.Values("Accept")); !j || !sse {
		http.Error(w, "Accept must contain both 'application/json' and 'text/event-stream'", http.StatusBadRequest)
		return nil, false, false
	}
	if len(r.Header.Values(lastEventIDHeader)) > 0 {
		http.Error(w, "can't send Last-Event-ID for POST request", http.StatusBadRequest)
		return nil, false, false
	}
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	ok = h.readBody(w, r, buf)
	var derr *rpcError
	if ok {
		msgs, batch, derr = decodeBody(buf.Bytes())
	}
	if buf.Cap() <= 64<<10 {
		bodyPool.Put(buf) // the messages hold no reference to it
	}
	if !ok {
		return nil, false, false
	}
	if derr != nil {
		writeRPCError(w, http.StatusBadRequest, derr)
		return nil, false, false
	}
	if batch && version >= wire.BatchesUntil {
		writeRPCError(w, http.StatusBadRequest, wire.BatchesRefused("this request", version, "one message per POST"))
		return nil, false, false
	}
	return msgs, batch, true
}

// attachExtras gives the requests among msgs the request's token and
// header, and returns the calls among them (those that expect an answer)
// and whether one of them is initialize.
func attachExtras(r *http.Request, msgs []jsonrpc.Message) (calls []*jsonrpc.Request, isInit bool) {
	var extra *mcp.RequestExtra
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok {
			continue
		}
		if extra == nil {
			extra = &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header}
		}
		if req.IsCall() {
			// Each call its own Extra: it is how Correlate finds it.
			e := *extra
			req.Extra = &e
			calls = append(calls, req)
			isInit = isInit || req.Method == "initialize"
		} else {
			req.Extra = extra
		}
	}
	return calls, isInit
}

// answerInline runs a POST's lone call, taken directly, on the request's
// own goroutine and writes its answer. Run on a goroutine of its own, as
// the SDK runs calls, the call cost a goroutine and two wake-ups (its
// start and its answer), and with one agent each wake-up is a thread
// woken through the kernel: a good part of a call's processor time. What
// the call sends the client before its answer (progress, a sampling or
// roots request, whose reply comes in another POST) must reach the client
// while the call still runs: the first such message starts a writer, the
// same as answer, which this then waits for.
func (h *Handler) answerInline(w http.ResponseWriter, r *http.Request, s *session, st *stream, req *jsonrpc.Request, fn direct.Func) {
	st.mu.Lock()
	st.spawn = func() {
		st.writer = make(chan struct{})
		go func() {
			defer close(st.writer)
			h.answer(w, r, s, st, false)
		}()
	}
	st.mu.Unlock()
	resp := s.directs.Run(s.callContext(req), req.ID, fn)
	// Refused only when the client is gone (the request ended, the
	// session closed): the SDK drops such answers too.
	_ = s.Write(context.Background(), resp)
	s.running.Done()
	st.mu.Lock()
	st.spawn = nil
	writer := st.writer
	st.mu.Unlock()
	if writer != nil {
		<-writer
		return
	}
	if q, _ := st.take(); len(q) == 1 && q[0].answer {
		w.Header().Set("Cache-Control", "no-cache, no-transform")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(q[0].data)
	}
}

// answer writes what the server sends for the calls of one POST, until
// every call is answered, the client leaves or the session closes. A lone
// answer is sent as application/json; anything sent before it (or a
// batch's answers once one is preceded by other messages) as events.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, s *session, st *stream, batch bool) {
	var ev *eventWriter
	var collected []item // a batch's answers, while no event was sent
	for {
		select {
		case <-st.wake:
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		}
		q, done := st.take()
		if ev == nil && done && !batch && len(q) == 1 {
			w.Header().Set("Cache-Control", "no-cache, no-transform")
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(q[0].data)
			return
		}
		if ev == nil && batch && allResponses(q) {
			collected = append(collected, q...)
			if done {
				w.Header().Set("Cache-Control", "no-cache, no-transform")
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(joinArray(collected))
				return
			}
			continue
		}
		if ev == nil {
			w.Header().Set("Cache-Control", "no-cache, no-transform")
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			ev = &eventWriter{w: w, rc: http.NewResponseController(w)}
			q = append(collected, q...)
			collected = nil
		}
		for _, it := range q {
			if ev.write(it.data) != nil {
				return
			}
		}
		if done {
			return
		}
	}
}

// allResponses reports whether every message queued is an answer.
func allResponses(q []item) bool {
	for _, it := range q {
		if !it.answer {
			return false
		}
	}
	return true
}

// joinArray encodes a batch's answers as one JSON array.
func joinArray(parts []item) []byte {
	n := 2
	for _, p := range parts {
		n += len(p.data) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, p := range parts {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, p.data...)
	}
	return append(out, ']')
}

// eventWriter writes server-sent events, each flushed at once.
type eventWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte
}

func (e *eventWriter) write(data []byte) error {
	e.buf = append(append(append(e.buf[:0], "event: message\ndata: "...), data...), "\n\n"...)
	if _, err := e.w.Write(e.buf); err != nil {
		return err
	}
	return e.rc.Flush()
}

// openOrRefuse opens a session for a POST without one, or answers why
// not: 503 with a JSON-RPC error for the first call when the cap is
// reached and no session is idle, 400 otherwise.
func (h *Handler) openOrRefuse(w http.ResponseWriter, r *http.Request, msgs []jsonrpc.Message) *session {
	s, err := h.open(r)
	switch {
	case errors.Is(err, errTooManySessions):
		writeRPCError(w, http.StatusServiceUnavailable, &rpcError{ID: firstCallID(msgs), Code: codeTooManySessions, Message: err.Error()})
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
	}
	return s
}

// open starts a session for r with a new server, making room for it
// first (see reserve).
func (h *Handler) open(r *http.Request) (*session, error) {
	if err := h.reserve(); err != nil {
		return nil, err
	}
	defer func() {
		h.mu.Lock()
		h.opening--
		h.mu.Unlock()
	}()
	srv, direct := h.newSession(r)
	if srv == nil {
		return nil, errors.New("no server available")
	}
	srv.AddReceivingMiddleware(Correlate)
	// The request's values (its token) are kept, not its end: the session
	// outlives the request that opened it.
	base := context.WithoutCancel(r.Context())
	dctx, dcancel := context.WithCancel(base)
	s := &session{
		direct:   direct,
		dctx:     dctx,
		dcancel:  dcancel,
		id:       rand.Text(),
		h:        h,
		userID:   userID(r),
		incoming: make(chan jsonrpc.Message, 10),
		done:     make(chan struct{}),
		calls:    map[jsonrpc.ID]*call{},
		byExtra:  map[*mcp.RequestExtra]*call{},
	}
	s.lastUsed.Store(time.Now().UnixNano())
	ss, err := srv.Connect(base, s, nil)
	if err != nil {
		dcancel()
		return nil, fmt.Errorf("connecting the session: %v", err)
	}
	s.ss = ss
	// Registered once connected: no request can name it before its id is
	// sent, and Close (which forgets it) needs ss.
	h.mu.Lock()
	h.sessions[s.id] = s
	h.mu.Unlock()
	select {
	case <-s.done: // closed while connecting: Close forgot it too early
		h.forget(s.id)
	default:
	}
	if t := h.opts.SessionTimeout; t > 0 {
		s.timerMu.Lock()
		s.timer = time.AfterFunc(t, func() { _ = s.shut() })
		s.timerMu.Unlock()
	}
	return s, nil
}

// accepts reports whether an Accept header admits JSON and event streams.
func accepts(values []string) (jsonOK, sseOK bool) {
	for _, v := range values {
		for v != "" {
			var token string
			token, v, _ = strings.Cut(v, ",")
			base, _, _ := strings.Cut(token, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				sseOK = true
			case "*/*":
				jsonOK, sseOK = true, true
			}
		}
	}
	return jsonOK, sseOK
}

// isJSON reports whether a Content-Type is application/json (with any
// parameters).
func isJSON(ct string) bool {
	base, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(base), "application/json")
}
