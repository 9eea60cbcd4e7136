package observatory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// writeWait bounds one write to a client; a client that does not take a
// message within it is disconnected.
const writeWait = 10 * time.Second

// serveWS upgrades a request to the Observatory's socket and runs it.
func (o *Observatory) serveWS(w http.ResponseWriter, r *http.Request) { o.serveSocket(w, r, false) }

// serveSocket is serveWS; seedPath says the client connected to the root
// path, seed 000's endpoint, so that errors before its first message are
// in the seed's form (the first message decides the form after that).
func (o *Observatory) serveSocket(w http.ResponseWriter, r *http.Request, seedPath bool) {
	if a, identity := o.authorize(r); a != accessGranted {
		status, p := o.refusal(a, identity)
		writeError(w, status, p)
		return
	}
	if !o.originAllowed(r) {
		writeError(w, http.StatusForbidden, ErrorPayload{Code: ledger.CodeInvalidOperation,
			Message: fmt.Sprintf("origin %q is not allowed: add it to THOUGHTBOX_OBSERVATORY_CORS", r.Header.Get("Origin")),
			Details: map[string]any{"origin": r.Header.Get("Origin")}})
		return
	}
	c, err := o.hub.join(o.cfg.MaxConnections)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, ErrorPayload{Code: ledger.CodeInvalidOperation, Message: err.Error()})
		return
	}
	up := websocket.Upgrader{
		ReadBufferSize: 4096, WriteBufferSize: 16384,
		// The origin was checked above, against the allow-list.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		o.hub.leave(c)
		return // Upgrade has answered the request
	}
	o.hub.mu.Lock()
	c.abort = func() { ws.NetConn().SetWriteDeadline(time.Now()) }
	c.seedOut = seedPath
	o.hub.mu.Unlock()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go o.readLoop(ctx, ws, c, cancel)
	o.writeLoop(ctx, ws, c)
	o.hub.leave(c)
	ws.Close()
}

// writeLoop sends c's queue, pings, and closes the connection when the
// hub cuts c off, the reader ends, or the connection idles.
func (o *Observatory) writeLoop(ctx context.Context, ws *websocket.Conn, c *client) {
	ping := time.NewTicker(o.cfg.PingInterval)
	defer ping.Stop()
	idleSince := time.Now()
	cork, _ := ws.NetConn().(*corkConn)
	var spare [][]byte
	var lastWrite time.Time
	cutOff := func() {
		o.cfg.Log.Info("observatory: closing a connection", "reason", c.reason)
		closeWith(ws, websocket.CloseTryAgainLater, c.reason)
	}
	for {
		select {
		case <-c.wake:
			if ctx.Err() != nil {
				return
			}
			// While a writer streams thoughts, each write(2) to a
			// subscriber costs about as much as the writer's own work
			// on a thought, times every subscriber. Writing each
			// connection at most once per CorkDelay lets the thoughts
			// that arrive meanwhile share one system call, for at most
			// CorkDelay of latency; after a quiet spell the first
			// message goes at once.
			if c.queueLen() == 0 {
				continue // woken for messages an earlier take got
			}
			if wait := o.cfg.CorkDelay - time.Since(lastWrite); o.cfg.CorkDelay > 0 && wait > 0 {
				select {
				case <-o.after(wait):
				case <-c.gone:
					cutOff()
					return
				case <-ctx.Done():
					return
				}
			}
			batch := c.take(spare)
			if len(batch) == 0 {
				continue // woken for messages an earlier take got
			}
			ws.SetWriteDeadline(time.Now().Add(writeWait))
			// Everything queued goes out in as few system calls as the
			// socket takes: under load, a subscriber's messages pile up
			// between two turns of this loop.
			cork.cork()
			for _, msg := range batch {
				if err := ws.WriteMessage(websocket.TextMessage, msg); err != nil {
					return
				}
			}
			if err := cork.uncork(); err != nil {
				return
			}
			c.sent(batch)
			lastWrite = time.Now()
			clear(batch) // let the messages go
			spare = batch
		case <-ping.C:
			if o.hub.subscribedTo(c) > 0 {
				idleSince = time.Now()
			} else if time.Since(idleSince) > o.cfg.IdleTimeout {
				closeWith(ws, websocket.ClosePolicyViolation, "idle: no subscription")
				return
			}
			if err := ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				return
			}
		case <-c.gone:
			cutOff()
			return
		case <-ctx.Done():
			return
		}
	}
}

func closeWith(ws *websocket.Conn, code int, reason string) {
	if len(reason) > 120 { // a close frame's payload is at most 125 bytes
		reason = reason[:120]
	}
	ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
}

// clientMessage is what a client sends: [topic, event, payload].
type clientMessage struct {
	topic, event string
	payload      json.RawMessage
}

func parseClientMessage(data []byte) (clientMessage, error) {
	var parts []json.RawMessage
	if err := json.Unmarshal(data, &parts); err != nil {
		return clientMessage{}, ledger.Errorf(ledger.CodeInvalidPayload, "message is not valid JSON: %v", err)
	}
	if len(parts) < 2 || len(parts) > 3 {
		return clientMessage{}, ledger.Errorf(ledger.CodeInvalidPayload, "message must be a JSON array [topic, event, payload], got %d elements", len(parts))
	}
	var m clientMessage
	if err := json.Unmarshal(parts[0], &m.topic); err != nil {
		return m, ledger.InvalidField("topic", "must be a string")
	}
	if err := json.Unmarshal(parts[1], &m.event); err != nil {
		return m, ledger.InvalidField("event", "must be a string")
	}
	if len(parts) == 3 {
		m.payload = parts[2]
	}
	return m, nil
}

// readLoop handles the client's messages until the connection fails.
func (o *Observatory) readLoop(ctx context.Context, ws *websocket.Conn, c *client, done func()) {
	defer func() {
		done()
		// The peer is gone or closing: a write blocked on its full
		// socket would otherwise hold the connection for writeWait.
		ws.NetConn().SetWriteDeadline(time.Now())
	}()
	ws.SetReadLimit(o.cfg.ReadLimit)
	deadline := func() { ws.SetReadDeadline(time.Now().Add(2 * o.cfg.PingInterval)) }
	deadline()
	ws.SetPongHandler(func(string) error { deadline(); return nil })
	for {
		typ, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		deadline()
		if typ != websocket.TextMessage {
			o.hub.sendError(c, "", ledger.Errorf(ledger.CodeInvalidPayload, "binary messages are not understood: send JSON text"))
			continue
		}
		o.dispatchMessage(ctx, c, data)
	}
}

// handle runs one client request.
func (o *Observatory) handle(ctx context.Context, c *client, m clientMessage) {
	switch m.event {
	case "subscribe":
		if err := o.allowSubscribe(c); err != nil {
			o.hub.sendError(c, m.topic, err)
			return
		}
		o.hub.subscribe(ctx, c, m.topic)
	case "unsubscribe":
		o.hub.unsubscribe(c, m.topic)
	case "list:sessions", "list:active":
		if m.topic != TopicObservatory {
			o.hub.sendError(c, m.topic, ledger.Errorf(ledger.CodeInvalidOperation, "%s is asked on the %q topic, not %q", m.event, TopicObservatory, m.topic))
			return
		}
		if m.event == "list:active" {
			list, err := o.activeSessions(ctx)
			if err != nil {
				o.hub.sendError(c, m.topic, err)
				return
			}
			o.hub.send(c, encode(m.topic, "sessions:active", map[string]any{"sessions": list}))
			return
		}
		var q listQuery
		if len(m.payload) > 0 && string(m.payload) != "null" {
			if err := json.Unmarshal(m.payload, &q); err != nil {
				o.hub.sendError(c, m.topic, ledger.Errorf(ledger.CodeInvalidPayload, "list:sessions payload must be {status, limit, offset, search, tags}: %v", err))
				return
			}
		}
		page, err := o.listSessions(ctx, q)
		if err != nil {
			o.hub.sendError(c, m.topic, err)
			return
		}
		o.hub.send(c, encode(m.topic, "sessions:list", page))
	case "thought:detail":
		var q struct {
			ThoughtID string `json:"thoughtId"`
		}
		if err := json.Unmarshal(m.payload, &q); err != nil || q.ThoughtID == "" {
			o.hub.sendError(c, m.topic, ledger.InvalidField("thoughtId", "must name a thought's node id"))
			return
		}
		d, err := o.detail(ctx, m.topic, q.ThoughtID)
		if err != nil {
			o.hub.sendError(c, m.topic, err)
			return
		}
		o.hub.send(c, encode(m.topic, "thought:detail", d))
	default:
		e := ledger.Errorf(ledger.CodeInvalidOperation, "unknown event %q: expected subscribe, unsubscribe, list:sessions, list:active or thought:detail", m.event)
		e.Details = map[string]any{"event": m.event}
		o.hub.sendError(c, m.topic, e)
	}
}

// allowSubscribe takes one subscribe from c's bucket (SubscribeBurst,
// refilled one per SubscribeEvery), or says why not: each subscribe may
// read a whole session, and a client asking in a loop would hold the
// session's lock away from its writer.
func (o *Observatory) allowSubscribe(c *client) error {
	now := o.now()
	burst := float64(o.cfg.SubscribeBurst)
	if c.refilled.IsZero() {
		c.tokens = burst
	} else if d := now.Sub(c.refilled); d > 0 {
		c.tokens = min(burst, c.tokens+float64(d)/float64(o.cfg.SubscribeEvery))
	}
	c.refilled = now
	if c.tokens < 1 {
		e := ledger.Errorf(ledger.CodeInvalidOperation, "too many subscribes on this connection: at most %d at once, then one every %v; this one was ignored", o.cfg.SubscribeBurst, o.cfg.SubscribeEvery)
		e.Details = map[string]any{"burst": o.cfg.SubscribeBurst, "every": o.cfg.SubscribeEvery.String()}
		return e
	}
	c.tokens--
	return nil
}

// dispatchMessage runs one text message. The first message that is a
// valid request of either form fixes the connection's form; until then
// errors are in the form its path suggests and name both forms.
func (o *Observatory) dispatchMessage(ctx context.Context, c *client, data []byte) {
	if string(bytes.TrimSpace(data)) == "ping" {
		// The seed's heartbeat: text in, text out, in either form.
		o.hub.mu.Lock()
		o.hub.enqueueLocked(c, []byte("pong"), false)
		o.hub.mu.Unlock()
		return
	}
	got := formOf(data)
	o.hub.mu.Lock()
	speaks := c.speaks
	o.hub.mu.Unlock()
	if got == formUnknown || speaks != formUnknown && got != speaks {
		o.hub.sendError(c, "", wrongForm(speaks, data))
		return
	}
	fix := func() {
		o.hub.mu.Lock()
		if c.speaks == formUnknown {
			c.speaks, c.seedOut = got, got == formSeed
		}
		o.hub.mu.Unlock()
	}
	if got == formSeed {
		q, err := parseSeed(data)
		if err != nil {
			if speaks == formUnknown {
				err = ledger.Errorf(ledger.CodeInvalidPayload, "%v: expected %s, or %s", err, expectSeed, expectOurs)
			}
			topic := ""
			if q.Channel == ChannelReasoning || q.Channel == ChannelSessions {
				topic = channelTopic(q.Channel, "")
			}
			o.hub.sendError(c, topic, err)
			return
		}
		fix()
		o.handleSeed(ctx, c, q)
		return
	}
	m, err := parseClientMessage(data)
	if err != nil {
		o.hub.sendError(c, m.topic, err)
		return
	}
	fix()
	o.handle(ctx, c, m)
}
