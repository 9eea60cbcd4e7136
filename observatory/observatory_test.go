package observatory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/gorilla/websocket"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/gitstore"
	gitremote "github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/observatory"
)

// relay lets the ledger be created before the Observatory that reads it.
type relay struct {
	o atomic.Pointer[observatory.Observatory]
}

func (r *relay) Publish(e ledger.Event) {
	if o := r.o.Load(); o != nil {
		o.Publish(e)
	}
}

type fixture struct {
	t     *testing.T
	l     *ledger.Ledger
	store *gitstore.Store
	obs   *observatory.Observatory
	srv   *server
	ctx   context.Context
}

var agent = ledger.Author{Name: "test-agent", Email: "agent@example.org"}

func newFixture(t *testing.T, cfg observatory.Config) *fixture {
	t.Helper()
	store, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{}
	l := ledger.New(store, ledger.Options{Events: r})
	if cfg.Authors == nil {
		cfg.Authors = store
	}
	obs := observatory.New(l, cfg)
	r.o.Store(obs)
	srv := serve(t, obs)
	t.Cleanup(func() {
		obs.Close()
		srv.Close()
		store.Close()
	})
	return &fixture{t: t, l: l, store: store, obs: obs, srv: srv, ctx: context.Background()}
}

// server runs an Observatory as the CLI does, with Serve on a loopback
// port the test picks.
type server struct {
	URL  string
	stop context.CancelFunc
	done chan error
}

func serve(tb testing.TB, o *observatory.Observatory) *server {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{URL: "http://" + ln.Addr().String(), stop: cancel, done: make(chan error, 1)}
	go func() { s.done <- o.Serve(ctx, ln) }()
	return s
}

func (s *server) Close() {
	if s.stop != nil {
		s.stop()
		<-s.done
		s.stop = nil
	}
}

func (f *fixture) start(title string, tags ...string) string {
	f.t.Helper()
	s, err := f.l.StartSession(f.ctx, ledger.CreateSessionParams{Title: title, Tags: tags}, agent)
	if err != nil {
		f.t.Fatal(err)
	}
	return s.ID
}

func (f *fixture) add(id string, in ledger.ThoughtInput) *ledger.AddResult {
	f.t.Helper()
	res, err := f.l.AddThought(f.ctx, id, in, agent)
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

func ptr(n int) *int { return &n }

func (f *fixture) wsURL() string { return "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/ws" }

type wsClient struct {
	t  *testing.T
	ws *websocket.Conn
}

func (f *fixture) dial(h http.Header) *wsClient {
	f.t.Helper()
	ws, resp, err := websocket.DefaultDialer.Dial(f.wsURL(), h)
	if err != nil {
		body := ""
		if resp != nil {
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
		}
		f.t.Fatalf("dial: %v %s", err, body)
	}
	f.t.Cleanup(func() { ws.Close() })
	return &wsClient{t: f.t, ws: ws}
}

func (c *wsClient) send(v ...any) {
	c.t.Helper()
	if err := c.ws.WriteJSON(v); err != nil {
		c.t.Fatal(err)
	}
}

type msg struct {
	Topic, Event string
	Payload      json.RawMessage
}

func (c *wsClient) next() msg {
	c.t.Helper()
	c.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	var parts []json.RawMessage
	if err := c.ws.ReadJSON(&parts); err != nil {
		c.t.Fatalf("read: %v", err)
	}
	if len(parts) != 3 {
		c.t.Fatalf("message has %d parts, want [topic, event, payload]", len(parts))
	}
	var m msg
	json.Unmarshal(parts[0], &m.Topic)
	json.Unmarshal(parts[1], &m.Event)
	m.Payload = parts[2]
	return m
}

// expect reads the next message and checks its topic and event.
func (c *wsClient) expect(topic, event string, into any) {
	c.t.Helper()
	m := c.next()
	if m.Topic != topic || m.Event != event {
		c.t.Fatalf("got [%s %s] %s, want [%s %s]", m.Topic, m.Event, m.Payload, topic, event)
	}
	if into != nil {
		if err := json.Unmarshal(m.Payload, into); err != nil {
			c.t.Fatalf("%s payload: %v", event, err)
		}
	}
}

type thoughtPayload struct {
	Thought               observatory.Thought `json:"thought"`
	ParentID              *string             `json:"parentId"`
	OriginalThoughtNumber *int                `json:"originalThoughtNumber"`
	BranchID              string              `json:"branchId"`
	FromThoughtNumber     *int                `json:"fromThoughtNumber"`
}

func TestSubscribeSnapshotAndEveryEvent(t *testing.T) {
	f := newFixture(t, observatory.Config{})
	id := f.start("Pick a cache", "infra")
	f.add(id, ledger.ThoughtInput{Thought: "What is slow?", NextThoughtNeeded: true})
	f.add(id, ledger.ThoughtInput{Thought: "Reads of user profiles.", NextThoughtNeeded: true})

	c := f.dial(nil)
	c.send("observatory", "subscribe")
	c.expect("observatory", "subscribed", nil)
	var active struct{ Sessions []observatory.Session }
	c.expect("observatory", "sessions:active", &active)
	if len(active.Sessions) != 1 || active.Sessions[0].ID != id || active.Sessions[0].Status != observatory.StatusActive {
		t.Fatalf("sessions:active = %+v, want the one active session", active.Sessions)
	}

	topic := "reasoning:" + id
	c.send(topic, "subscribe")
	c.expect(topic, "subscribed", nil)
	var snap observatory.Snapshot
	c.expect(topic, "session:snapshot", &snap)
	if snap.Session.ID != id || len(snap.Thoughts) != 2 || snap.Thoughts[1].Thought != "Reads of user profiles." || len(snap.Branches) != 0 {
		t.Fatalf("snapshot = %+v", snap)
	}
	if snap.Thoughts[0].ParentID != nil || snap.Thoughts[1].ParentID == nil || *snap.Thoughts[1].ParentID != snap.Thoughts[0].ID {
		t.Errorf("snapshot parents: %v, %v", snap.Thoughts[0].ParentID, snap.Thoughts[1].ParentID)
	}
	if snap.Thoughts[0].Commit == "" {
		t.Error("snapshot thought has no commit")
	}

	long := strings.Repeat("full text is kept. ", 20)
	f.add(id, ledger.ThoughtInput{Thought: long, NextThoughtNeeded: true})
	f.add(id, ledger.ThoughtInput{Thought: "Try Redis", BranchID: "redis", BranchFromThought: ptr(2), NextThoughtNeeded: true})
	f.add(id, ledger.ThoughtInput{Thought: "Redis needs ops", BranchID: "redis", BranchFromThought: ptr(2), NextThoughtNeeded: true})
	f.add(id, ledger.ThoughtInput{Thought: "Reads AND writes", IsRevision: true, RevisesThought: ptr(2), NextThoughtNeeded: true})
	f.add(id, ledger.ThoughtInput{Thought: "Use an in-process cache.", NextThoughtNeeded: false})

	var p thoughtPayload
	c.expect(topic, "thought:added", &p)
	if p.Thought.ThoughtNumber != 3 || p.Thought.Thought != long || p.ParentID == nil || *p.ParentID != snap.Thoughts[1].ID {
		t.Errorf("thought:added = %+v", p)
	}
	c.expect("observatory", "session:updated", nil)
	p = thoughtPayload{}
	c.expect(topic, "thought:branched", &p)
	if p.BranchID != "redis" || p.FromThoughtNumber == nil || *p.FromThoughtNumber != 2 || p.Thought.BranchID != "redis" || *p.ParentID != snap.Thoughts[1].ID {
		t.Errorf("thought:branched = %+v", p)
	}
	c.expect("observatory", "session:updated", nil)
	p = thoughtPayload{}
	c.expect(topic, "thought:added", &p)
	if p.Thought.BranchID != "redis" || p.Thought.ThoughtNumber != 4 {
		t.Errorf("branch thought:added = %+v", p.Thought)
	}
	c.expect("observatory", "session:updated", nil)
	p = thoughtPayload{}
	c.expect(topic, "thought:revised", &p)
	if p.OriginalThoughtNumber == nil || *p.OriginalThoughtNumber != 2 || p.Thought.RevisesNode != snap.Thoughts[1].ID {
		t.Errorf("thought:revised = %+v", p)
	}
	c.expect("observatory", "session:updated", nil)
	c.expect(topic, "thought:added", nil)
	c.expect("observatory", "session:updated", nil)
	var ended struct {
		SessionID         string `json:"sessionId"`
		FinalThoughtCount int    `json:"finalThoughtCount"`
	}
	c.expect(topic, "session:ended", &ended)
	if ended.SessionID != id || ended.FinalThoughtCount != 7 {
		t.Errorf("session:ended = %+v, want 7 thoughts", ended)
	}
	c.expect("observatory", "session:ended", nil)

	// A new session is announced on the observatory topic.
	other := f.start("Another")
	var started struct{ Session observatory.Session }
	c.expect("observatory", "session:started", &started)
	if started.Session.ID != other || *started.Session.Title != "Another" {
		t.Errorf("session:started = %+v", started.Session)
	}

	// The detail of a thought names its commit's author.
	c.send(topic, "thought:detail", map[string]string{"thoughtId": snap.Thoughts[0].ID})
	var d observatory.ThoughtDetail
	c.expect(topic, "thought:detail", &d)
	if d.Author != agent.Name || d.AuthorEmail != agent.Email || d.Commit != snap.Thoughts[0].Commit {
		t.Errorf("thought:detail = %+v", d)
	}

	// Unsubscribed, the session's thoughts no longer arrive.
	c.send(topic, "unsubscribe")
	c.expect(topic, "unsubscribed", nil)
	c.send("observatory", "unsubscribe")
	c.expect("observatory", "unsubscribed", nil)
	f.add(id, ledger.ThoughtInput{Thought: "Reopened", NextThoughtNeeded: true})
	c.send("observatory", "list:active")
	c.expect("observatory", "sessions:active", nil)
}

func TestBadMessages(t *testing.T) {
	f := newFixture(t, observatory.Config{ReadLimit: 1024})
	c := f.dial(nil)
	for _, tt := range []struct {
		raw, code string
	}{
		{`not json`, "INVALID_PAYLOAD"},
		{`{"topic":"observatory"}`, "INVALID_PAYLOAD"},
		{`["observatory"]`, "INVALID_PAYLOAD"},
		{`[1, "subscribe"]`, "INVALID_PAYLOAD"},
		{`["weather", "subscribe"]`, "INVALID_PAYLOAD"},
		{`["reasoning:", "subscribe"]`, "INVALID_PAYLOAD"},
		{`["reasoning:no-such-session", "subscribe"]`, "SESSION_NOT_FOUND"},
		{`["observatory", "dance"]`, "INVALID_OPERATION"},
		{`["observatory", "unsubscribe"]`, "INVALID_OPERATION"},
		{`["observatory", "list:sessions", {"status": "sleeping"}]`, "INVALID_PAYLOAD"},
		{`["observatory", "list:sessions", {"limit": 1000}]`, "INVALID_PAYLOAD"},
		{`["observatory", "list:sessions", "all"]`, "INVALID_PAYLOAD"},
	} {
		if err := c.ws.WriteMessage(websocket.TextMessage, []byte(tt.raw)); err != nil {
			t.Fatal(err)
		}
		m := c.next()
		var e observatory.ErrorPayload
		json.Unmarshal(m.Payload, &e)
		if m.Event != "error" || string(e.Code) != tt.code || e.Message == "" {
			t.Errorf("%s: got [%s %s] %s, want error %s", tt.raw, m.Topic, m.Event, m.Payload, tt.code)
		}
	}
	// The connection is still usable after bad messages.
	c.send("observatory", "list:sessions", map[string]any{"limit": 5})
	c.expect("observatory", "sessions:list", nil)

	// A message over the read limit ends the connection.
	c.ws.WriteMessage(websocket.TextMessage, []byte(`["observatory","list:sessions",{"search":"`+strings.Repeat("x", 2048)+`"}]`))
	c.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, _, err := c.ws.ReadMessage(); err == nil {
		t.Error("a message over the read limit was answered; want the connection closed")
	}
}

func TestMaxConnections(t *testing.T) {
	f := newFixture(t, observatory.Config{MaxConnections: 2})
	a := f.dial(nil)
	f.dial(nil)
	_, resp, err := websocket.DefaultDialer.Dial(f.wsURL(), nil)
	if err == nil {
		t.Fatal("a third connection was accepted with MaxConnections 2")
	}
	var e observatory.ErrorPayload
	json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(e.Message, "THOUGHTBOX_OBSERVATORY_MAX_CONNECTIONS") {
		t.Errorf("refusal: %d %+v", resp.StatusCode, e)
	}
	// A closed connection frees its place.
	a.ws.Close()
	for i := 0; ; i++ {
		ws, _, err := websocket.DefaultDialer.Dial(f.wsURL(), nil)
		if err == nil {
			ws.Close()
			break
		}
		if i > 200 {
			t.Fatal("the place of a closed connection was never freed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestOrigins(t *testing.T) {
	f := newFixture(t, observatory.Config{Origins: []string{"https://team.example"}})
	for _, tt := range []struct {
		origin string
		ok     bool
	}{
		{"", true},
		{f.srv.URL, true}, // its own origin
		{"http://localhost:5173", true},
		{"http://127.0.0.1:9999", true},
		{"https://team.example", true},
		{"https://evil.example", false},
		{"http://127.0.0.1.evil.example", false},
		{"null", false},
	} {
		h := http.Header{}
		if tt.origin != "" {
			h.Set("Origin", tt.origin)
		}
		ws, resp, err := websocket.DefaultDialer.Dial(f.wsURL(), h)
		if tt.ok != (err == nil) {
			t.Errorf("origin %q: err %v, want allowed=%v", tt.origin, err, tt.ok)
		}
		if ws != nil {
			ws.Close()
		}
		if !tt.ok && resp != nil && resp.StatusCode != http.StatusForbidden {
			t.Errorf("origin %q refused with %d, want 403", tt.origin, resp.StatusCode)
		}
	}
}

func TestAuthToken(t *testing.T) {
	f := newFixture(t, observatory.Config{AuthToken: "s3cret", HTTPAPI: true})
	if _, resp, err := websocket.DefaultDialer.Dial(f.wsURL(), nil); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("socket without token: %v", err)
	}
	f.dial(http.Header{"Authorization": {"Bearer s3cret"}})
	for _, path := range []string{"/", "/app.js", "/api/sessions"} {
		resp, err := http.Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without token: %d, want 401", path, resp.StatusCode)
		}
	}
	resp, err := http.Get(f.srv.URL + "/?token=s3cret")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		cookie = c
	}
	if resp.StatusCode != http.StatusOK || cookie == nil || !cookie.HttpOnly {
		t.Fatalf("GET /?token=: %d, cookie %v", resp.StatusCode, cookie)
	}
	// The page's own requests carry the cookie.
	req, _ := http.NewRequest("GET", f.srv.URL+"/api/sessions", nil)
	req.AddCookie(cookie)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("API with the cookie: %d", resp.StatusCode)
	}
}

// TestAuthTokensFile guards the page, the socket and the API with the
// tokens of a tokens file (parsed by the gateway, as serve does): a token
// that may read the project (or write it, which implies reading) is let
// in, one in the file without the project in its scope is refused with
// 403 naming its holder, one not in the file with 401; the single token
// set beside the file still opens everything.
func TestAuthTokensFile(t *testing.T) {
	const (
		reader   = "reader-token-0123456789"
		writer   = "writer-token-0123456789"
		outsider = "outsider-token-0123456"
		single   = "single-token-0123456789"
	)
	tokens, err := gateway.ParseTokens(strings.NewReader(
		reader+" rita read:alpha\n"+
			writer+" walt write:alpha\n"+
			outsider+" otto read:beta write:gamma\n"), "tokens")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, observatory.Config{Tokens: tokens, Project: "alpha", AuthToken: single, HTTPAPI: true})
	f.start("visible")
	get := func(path string, h http.Header) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
		for k, v := range h {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	for _, tc := range []struct {
		name   string
		token  string
		status int
		body   string
	}{
		{"reader", reader, http.StatusOK, ""},
		{"writer", writer, http.StatusOK, ""},
		{"single token", single, http.StatusOK, ""},
		{"token out of scope", outsider, http.StatusForbidden, "otto may not read project"},
		{"unknown token", "unknown-token-0123456789", http.StatusUnauthorized, "token"},
		{"no token", "", http.StatusUnauthorized, "token"},
	} {
		var h http.Header
		if tc.token != "" {
			h = bearer(tc.token)
		}
		for _, path := range []string{"/", "/api/sessions", "/?token=" + tc.token} {
			hh := h
			if strings.Contains(path, "token=") {
				hh = nil
			}
			status, body := get(path, hh)
			if status != tc.status || !strings.Contains(body, tc.body) {
				t.Errorf("%s: GET %s = %d %q, want %d with %q", tc.name, path, status, body, tc.status, tc.body)
			}
			if tc.status == http.StatusOK && path == "/api/sessions" && !strings.Contains(body, "visible") {
				t.Errorf("%s: the API lists %s", tc.name, body)
			}
		}
		ws, resp, err := websocket.DefaultDialer.Dial(f.wsURL(), h)
		switch {
		case tc.status == http.StatusOK && err != nil:
			t.Errorf("%s: socket refused: %v", tc.name, err)
		case tc.status != http.StatusOK && (err == nil || resp == nil || resp.StatusCode != tc.status):
			t.Errorf("%s: socket: %v (response %v), want %d", tc.name, err, resp, tc.status)
		}
		if ws != nil {
			ws.Close()
		}
	}
	// The cookie the page sets from ?token= carries the token's scope.
	req, _ := http.NewRequest("GET", f.srv.URL+"/api/sessions", nil)
	req.AddCookie(&http.Cookie{Name: "thoughtbox_observatory_token", Value: outsider})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("API with an out-of-scope cookie: %d, want 403", resp.StatusCode)
	}
}

// TestSnapshotThenEventsWithoutGapOrRepeat subscribes while a writer is
// writing: the snapshot and the events after it must hold every thought
// exactly once, in commit order.
func TestSnapshotThenEventsWithoutGapOrRepeat(t *testing.T) {
	f := newFixture(t, observatory.Config{})
	id := f.start("race")
	const n = 300
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; i <= n; i++ {
			f.add(id, ledger.ThoughtInput{Thought: fmt.Sprint("t", i), NextThoughtNeeded: i < n})
		}
	}()
	for f.obsThoughts(id) < 20 {
		time.Sleep(time.Millisecond)
	}
	c := f.dial(nil)
	topic := "reasoning:" + id
	c.send(topic, "subscribe")
	c.expect(topic, "subscribed", nil)
	var snap observatory.Snapshot
	c.expect(topic, "session:snapshot", &snap)
	var got []int
	for _, th := range snap.Thoughts {
		got = append(got, th.ThoughtNumber)
	}
	for len(got) < n {
		m := c.next()
		if m.Event == "session:ended" {
			break
		}
		var p thoughtPayload
		json.Unmarshal(m.Payload, &p)
		got = append(got, p.Thought.ThoughtNumber)
	}
	wg.Wait()
	if len(got) != n {
		t.Fatalf("got %d thoughts, want %d", len(got), n)
	}
	for i, num := range got {
		if num != i+1 {
			t.Fatalf("thought %d arrived as number %d (snapshot had %d): %v", i+1, num, len(snap.Thoughts), got)
		}
	}
}

func (f *fixture) obsThoughts(id string) int {
	v, err := f.l.View(f.ctx, id)
	if err != nil {
		return 0
	}
	return v.Graph.Len()
}

// TestReaderThatNeverReads: a client that subscribes and then reads
// nothing does not hold up the writer, and a client that reads gets every
// thought, in order, however slow the machine. The writer's time with and
// without the stuck client is logged, not asserted: on a shared machine
// it says more about the neighbours than about the Observatory. What is
// asserted is structural: the reading client is never cut off (a queue is
// cut off only when stalled or 16 times over QueueSize, and 600 messages
// are within 16 × 64), and Publish never waits (every write completes
// while the stuck client's socket is blocked).
func TestReaderThatNeverReads(t *testing.T) {
	f := newFixture(t, observatory.Config{QueueSize: 64})
	id := f.start("stuck reader")
	topic := "reasoning:" + id

	good := f.dial(nil)
	good.send(topic, "subscribe")
	good.expect(topic, "subscribed", nil)
	good.expect(topic, "session:snapshot", nil)
	good.ws.SetReadDeadline(time.Time{})

	// Each phase writes 600 thoughts of 8 KiB: more than the stuck
	// socket's buffers hold with Linux's defaults, so its writer blocks.
	const n = 600
	text := strings.Repeat("y", 8<<10)
	received := make(chan int, 1)
	go func() {
		count := 0
		defer func() { received <- count }()
		key := []byte(`"thoughtNumber":`)
		for count < 2*n {
			_, data, err := good.ws.ReadMessage()
			if err != nil {
				t.Errorf("the reading client, after %d thoughts: %v", count, err)
				return
			}
			if !bytes.Contains(data[:min(len(data), 80)], []byte(`"thought:`)) {
				continue
			}
			num := -1
			if k := bytes.Index(data, key); k >= 0 {
				rest := data[k+len(key):]
				num, _ = strconv.Atoi(string(rest[:max(0, bytes.IndexAny(rest, ",}"))]))
			}
			if num != count+1 {
				t.Errorf("the reading client got thought %d after %d", num, count)
				return
			}
			count++
		}
	}()
	write := func() (elapsed, slowest time.Duration) {
		start := time.Now()
		for i := 0; i < n; i++ {
			t0 := time.Now()
			f.add(id, ledger.ThoughtInput{Thought: fmt.Sprint(i, text), NextThoughtNeeded: true})
			slowest = max(slowest, time.Since(t0))
		}
		return time.Since(start), slowest
	}
	alone, slowestAlone := write()

	// The stuck client's socket gets a tiny receive buffer before it
	// connects, so that the server's writes to it block soon. It reads
	// its subscription's first two messages, so that it is known to be
	// subscribed, and nothing after.
	d := websocket.Dialer{NetDial: func(network, addr string) (net.Conn, error) {
		nd := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) {
				smallReceiveBuffer(fd)
			})
		}}
		return nd.Dial(network, addr)
	}}
	ws, _, err := d.Dial(f.wsURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	stuck := &wsClient{t: t, ws: ws}
	stuck.send(topic, "subscribe")
	stuck.expect(topic, "subscribed", nil)
	stuck.expect(topic, "session:snapshot", nil)

	withStuck, slowestStuck := write()
	if got := <-received; got != 2*n {
		t.Errorf("the reading client got %d thoughts, want %d", got, 2*n)
	}
	if d := f.obs.Dropped(); d > 1 {
		t.Errorf("%d clients cut off; only the stuck one may be", d)
	}
	t.Logf("%d thoughts of 8 KiB: %v alone (slowest write %v), %v with a stuck subscriber (slowest %v); clients cut off: %d",
		n, alone, slowestAlone, withStuck, slowestStuck, f.obs.Dropped())
}

func TestHTTPAPI(t *testing.T) {
	now := time.Now()
	f := newFixture(t, observatory.Config{HTTPAPI: true, AbandonAfter: time.Hour, Now: func() time.Time { return now }})
	done := f.start("Finished work", "alpha", "beta")
	f.add(done, ledger.ThoughtInput{Thought: "one", NextThoughtNeeded: true})
	closing := f.add(done, ledger.ThoughtInput{Thought: "two", NextThoughtNeeded: false})
	open := f.start("Open question", "beta")
	f.add(open, ledger.ThoughtInput{Thought: "hmm", NextThoughtNeeded: true})

	get := func(path string, want int, into any) string {
		t.Helper()
		resp, err := http.Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("GET %s: %d %s, want %d", path, resp.StatusCode, b, want)
		}
		if into != nil {
			if err := json.Unmarshal(b, into); err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
		}
		return string(b)
	}
	var list observatory.SessionList
	get("/api/sessions", 200, &list)
	if list.Total != 2 {
		t.Fatalf("list = %+v", list)
	}
	get("/api/sessions?status=completed", 200, &list)
	if list.Total != 1 || list.Sessions[0].ID != done || list.Sessions[0].CompletedAt == nil ||
		!list.Sessions[0].CompletedAt.Equal(closing.Thought.Timestamp) {
		t.Errorf("completed = %+v", list.Sessions)
	}
	get("/api/sessions?tag=alpha", 200, &list)
	if list.Total != 1 || list.Sessions[0].ID != done {
		t.Errorf("tag=alpha: %+v", list.Sessions)
	}
	get("/api/sessions?search=question", 200, &list)
	if list.Total != 1 || list.Sessions[0].ID != open {
		t.Errorf("search=question: %+v", list.Sessions)
	}
	get("/api/sessions?limit=1&offset=1", 200, &list)
	if len(list.Sessions) != 1 || list.Total != 2 || list.HasMore {
		t.Errorf("page 2: %+v", list)
	}

	// Two hours on, the open session counts as abandoned.
	now = now.Add(2 * time.Hour)
	get("/api/sessions?status=abandoned", 200, &list)
	if list.Total != 1 || list.Sessions[0].ID != open || list.Sessions[0].Status != observatory.StatusAbandoned {
		t.Errorf("abandoned: %+v", list.Sessions)
	}

	var snap observatory.Snapshot
	get("/api/sessions/"+done, 200, &snap)
	if len(snap.Thoughts) != 2 || snap.Session.Status != observatory.StatusCompleted {
		t.Errorf("snapshot = %+v", snap)
	}
	md := get("/api/sessions/"+done+"/export?format=markdown", 200, nil)
	if !strings.Contains(md, "Finished work") {
		t.Errorf("markdown export: %s", md)
	}
	var export struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
		Nodes []struct {
			Data struct {
				Thought string `json:"thought"`
			} `json:"data"`
		} `json:"nodes"`
	}
	get("/api/sessions/"+done+"/export?format=json", 200, &export)
	if export.Session.ID != done || len(export.Nodes) != 2 || export.Nodes[1].Data.Thought != "two" {
		t.Errorf("json export: %+v", export)
	}
	cipher := get("/api/sessions/"+done+"/export?format=cipher", 200, nil)
	if !strings.HasPrefix(cipher, "# session "+done+": Finished work\n") || !strings.Contains(cipher, "S1||") ||
		!strings.Contains(cipher, "S2||") || !strings.Contains(cipher, "|two\n") {
		t.Errorf("cipher export:\n%s", cipher)
	}
	var analysis map[string]any
	get("/api/sessions/"+done+"/analysis", 200, &analysis)
	if analysis["sessionId"] != done {
		t.Errorf("analysis = %v", analysis)
	}
	for _, tt := range []struct {
		path, code string
		status     int
	}{
		{"/api/sessions/nope", "SESSION_NOT_FOUND", 404},
		{"/api/sessions/nope/analysis", "SESSION_NOT_FOUND", 404},
		{"/api/sessions/" + done + "/export?format=pdf", "INVALID_PAYLOAD", 400},
		{"/api/sessions?limit=ten", "INVALID_PAYLOAD", 400},
		{"/api/sessions?status=sleeping", "INVALID_PAYLOAD", 400},
	} {
		var e observatory.ErrorPayload
		get(tt.path, tt.status, &e)
		if string(e.Code) != tt.code || e.Message == "" {
			t.Errorf("GET %s: %+v, want %s", tt.path, e, tt.code)
		}
	}
}

// TestHTTPAPIOff: without HTTPAPI the API is not served, the page is.
func TestHTTPAPIOff(t *testing.T) {
	f := newFixture(t, observatory.Config{})
	for path, want := range map[string]int{"/api/sessions": 404, "/": 200, "/app.js": 200, "/style.css": 200} {
		resp, err := http.Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// TestSessionWrittenElsewhere: a session another ledger (another process)
// wrote to the same store opens with its thoughts.
func TestSessionWrittenElsewhere(t *testing.T) {
	f := newFixture(t, observatory.Config{})
	other := ledger.New(f.store, ledger.Options{})
	s, err := other.StartSession(f.ctx, ledger.CreateSessionParams{Title: "elsewhere"}, agent)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := other.AddThought(f.ctx, s.ID, ledger.ThoughtInput{Thought: "x", NextThoughtNeeded: true}, agent); err != nil {
			t.Fatal(err)
		}
	}
	c := f.dial(nil)
	topic := "reasoning:" + s.ID
	c.send(topic, "subscribe")
	c.expect(topic, "subscribed", nil)
	var snap observatory.Snapshot
	c.expect(topic, "session:snapshot", &snap)
	if len(snap.Thoughts) != 3 {
		t.Errorf("snapshot of a session written elsewhere has %d thoughts, want 3", len(snap.Thoughts))
	}
}

// TestCritiquePushedLive: a critique recorded on a thought reaches the
// session's subscribers as thought:critiqued, with the thought and the
// critique; a later snapshot holds it too.
func TestCritiquePushedLive(t *testing.T) {
	f := newFixture(t, observatory.Config{})
	id := f.start("Critiqued")
	f.add(id, ledger.ThoughtInput{Thought: "Cache everything.", NextThoughtNeeded: true})
	c := f.dial(nil)
	topic := "reasoning:" + id
	c.send(topic, "subscribe")
	c.expect(topic, "subscribed", nil)
	c.expect(topic, "session:snapshot", nil)
	crit := ledger.Critique{Text: "Everything is too much: what is hot?", Model: "test-model"}
	if _, err := f.l.AddCritique(f.ctx, id, "", 1, crit, agent); err != nil {
		t.Fatal(err)
	}
	var p struct {
		ThoughtID string
		Thought   observatory.Thought
		Critique  ledger.Critique
	}
	c.expect(topic, "thought:critiqued", &p)
	if p.ThoughtID != p.Thought.ID || p.Thought.ThoughtNumber != 1 || p.Critique.Text != crit.Text || p.Critique.Model != "test-model" ||
		p.Thought.Critique == nil || p.Thought.Critique.Text != crit.Text {
		t.Fatalf("thought:critiqued = %+v", p)
	}
	c2 := f.dial(nil)
	c2.send(topic, "subscribe")
	c2.expect(topic, "subscribed", nil)
	var snap observatory.Snapshot
	c2.expect(topic, "session:snapshot", &snap)
	if snap.Thoughts[0].Critique == nil || snap.Thoughts[0].Critique.Text != crit.Text {
		t.Fatalf("snapshot after the critique: %+v", snap.Thoughts[0])
	}
}

// TestPreflight: a page from an allowed origin that sends its token in an
// Authorization header gets its CORS preflight answered, and then its
// call; a page from another origin gets neither.
func TestPreflight(t *testing.T) {
	f := newFixture(t, observatory.Config{HTTPAPI: true, AuthToken: "s3cret", Origins: []string{"https://team.example.org"}})
	f.start("Seen from the team's page")
	preflight := func(origin string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodOptions, f.srv.URL+"/api/sessions", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "GET")
		req.Header.Set("Access-Control-Request-Headers", "authorization")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := preflight("https://team.example.org")
	h := resp.Header
	if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "https://team.example.org" ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "GET") {
		t.Fatalf("preflight from an allowed origin: %d %v", resp.StatusCode, h)
	}
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/api/sessions", nil)
	req.Header.Set("Origin", "https://team.example.org")
	req.Header.Set("Authorization", "Bearer s3cret")
	get, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list observatory.SessionList
	json.NewDecoder(get.Body).Decode(&list)
	get.Body.Close()
	if get.StatusCode != 200 || get.Header.Get("Access-Control-Allow-Origin") != "https://team.example.org" || list.Total != 1 {
		t.Errorf("the call after the preflight: %d %v %+v", get.StatusCode, get.Header, list)
	}

	resp = preflight("https://elsewhere.example.com")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin: %d %v", resp.StatusCode, resp.Header)
	}
}

// readAll reads c's messages into a channel until its connection ends;
// the error that ended it comes last, on errc.
func readAll(ws *websocket.Conn) (<-chan []byte, <-chan error) {
	msgs, errc := make(chan []byte, 64), make(chan error, 1)
	go func() {
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				errc <- err
				return
			}
			msgs <- data
		}
	}()
	return msgs, errc
}

// TestKeepalive: the server pings every PingInterval; a client that
// answers stays connected across several intervals and still gets events,
// and a client that stops answering is disconnected after two intervals
// of silence. (The interval is long enough that a loaded machine answers
// a ping well within two of them.)
func TestKeepalive(t *testing.T) {
	f := newFixture(t, observatory.Config{PingInterval: 250 * time.Millisecond, IdleTimeout: time.Hour})
	id := f.start("kept alive")
	topic := "reasoning:" + id

	answering, silent := f.dial(nil), f.dial(nil)
	var answered, ignored atomic.Int32
	answering.ws.SetPingHandler(func(data string) error {
		answered.Add(1)
		return answering.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(5*time.Second))
	})
	silent.ws.SetPingHandler(func(string) error { ignored.Add(1); return nil })
	for _, c := range []*wsClient{answering, silent} {
		c.send(topic, "subscribe")
		c.expect(topic, "subscribed", nil)
		c.expect(topic, "session:snapshot", nil)
		c.ws.SetReadDeadline(time.Time{})
	}
	msgs, errc := readAll(answering.ws)
	_, silentErr := readAll(silent.ws)

	select {
	case err := <-silentErr:
		if ignored.Load() == 0 {
			t.Errorf("the silent client was disconnected (%v) without being pinged", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a client that answers no ping was still connected after 30 s (PingInterval 250 ms)")
	}
	// Four pings answered is twice the silence the server allows.
	for deadline := time.Now().Add(30 * time.Second); answered.Load() < 4; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d pings in 30 s (PingInterval 250 ms)", answered.Load())
		}
		select {
		case err := <-errc:
			t.Fatalf("the answering client was disconnected after %d pings: %v", answered.Load(), err)
		default:
		}
	}
	f.add(id, ledger.ThoughtInput{Thought: "still here", NextThoughtNeeded: true})
	awaitThoughtAdded(t, msgs, errc, "the answering client was disconnected")
}

// awaitThoughtAdded reads msgs until a thought:added arrives; the
// connection's ending first fails the test with ended.
func awaitThoughtAdded(t *testing.T, msgs <-chan []byte, errc <-chan error, ended string) {
	t.Helper()
	for {
		select {
		case m := <-msgs:
			if bytes.Contains(m, []byte(`"thought:added"`)) {
				return
			}
		case err := <-errc:
			t.Fatalf("%s: %v", ended, err)
		case <-time.After(30 * time.Second):
			t.Fatal("no thought:added within 30 s")
		}
	}
}

// TestIdleConnectionClosed: a connection subscribed to nothing for
// IdleTimeout is closed with a policy-violation close saying why; one
// with a subscription stays. Idleness is checked at each ping, so the
// idle connection closes at the first (1 s), long before the two silent
// intervals after which an unanswering client would be dropped.
func TestIdleConnectionClosed(t *testing.T) {
	f := newFixture(t, observatory.Config{PingInterval: time.Second, IdleTimeout: 100 * time.Millisecond})
	id := f.start("watched")
	topic := "reasoning:" + id
	watching, idle := f.dial(nil), f.dial(nil)
	watching.send(topic, "subscribe")
	watching.expect(topic, "subscribed", nil)
	watching.expect(topic, "session:snapshot", nil)
	watching.ws.SetReadDeadline(time.Time{})
	msgs, errc := readAll(watching.ws)

	idle.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, _, err := idle.ws.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "idle") {
		t.Fatalf("the idle connection ended with %v, want a close 1008 saying idle", err)
	}
	f.add(id, ledger.ThoughtInput{Thought: "for the one watching", NextThoughtNeeded: true})
	awaitThoughtAdded(t, msgs, errc, "the subscribed connection was closed too")
}

// TestLoopbackByDefault: with no Host the Observatory listens on
// 127.0.0.1 only (the CLI's own default is checked in
// TestStandaloneObservatoryFollowsOtherProcesses).
func TestLoopbackByDefault(t *testing.T) {
	f := newFixture(t, observatory.Config{})
	if got := observatory.New(f.l, observatory.Config{Port: observatory.DefaultPort}).Addr(); got != "127.0.0.1:1729" {
		t.Errorf("default Addr = %s, want 127.0.0.1:1729", got)
	}
	if got := observatory.New(f.l, observatory.Config{Host: "0.0.0.0", Port: 8080}).Addr(); got != "0.0.0.0:8080" {
		t.Errorf("Addr with a host = %s", got)
	}
}

// TestSessionPulledFromRemote: a session another clone pushed, brought in
// by pull while the Observatory runs, opens with its thoughts and branch,
// and is listed.
func TestSessionPulledFromRemote(t *testing.T) {
	ctx := context.Background()
	remote := filepath.Join(t.TempDir(), "remote.git")
	if _, err := gogit.PlainInit(remote, true); err != nil {
		t.Fatal(err)
	}
	open := func(name string) *gitstore.Store {
		s, err := gitstore.Open(filepath.Join(t.TempDir(), name+".git"), gitstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if _, err := gitremote.AddRemote(s, "origin", remote); err != nil {
			t.Fatal(err)
		}
		return s
	}
	alice := open("alice")
	la := ledger.New(alice, ledger.Options{})
	s, err := la.StartSession(ctx, ledger.CreateSessionParams{Title: "Reasoned on another machine", Tags: []string{"remote"}}, agent)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []ledger.ThoughtInput{
		{Thought: "first", NextThoughtNeeded: true},
		{Thought: "second", NextThoughtNeeded: true},
		{Thought: "another way", NextThoughtNeeded: true, BranchID: "alt", BranchFromThought: ptr(1)},
	} {
		if _, err := la.AddThought(ctx, s.ID, in, agent); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := gitremote.Push(ctx, alice, "origin", gitremote.TransferOptions{BuiltinFile: true}); err != nil {
		t.Fatal(err)
	}

	bob := open("bob")
	r := &relay{}
	lb := ledger.New(bob, ledger.Options{Events: r})
	obs := observatory.New(lb, observatory.Config{Authors: bob})
	r.o.Store(obs)
	srv := serve(t, obs)
	t.Cleanup(func() { obs.Close(); srv.Close() })
	f := &fixture{t: t, l: lb, store: bob, obs: obs, srv: srv, ctx: ctx}
	c := f.dial(nil)
	c.send("observatory", "subscribe")
	c.expect("observatory", "subscribed", nil)
	c.expect("observatory", "sessions:active", nil)

	if _, err := gitremote.Pull(ctx, bob, "origin", gitremote.TransferOptions{BuiltinFile: true}); err != nil {
		t.Fatal(err)
	}
	topic := "reasoning:" + s.ID
	c.send(topic, "subscribe")
	c.expect(topic, "subscribed", nil)
	var snap observatory.Snapshot
	c.expect(topic, "session:snapshot", &snap)
	if len(snap.Thoughts) != 2 || len(snap.Branches["alt"].Thoughts) != 1 || snap.Session.Title == nil ||
		*snap.Session.Title != "Reasoned on another machine" || snap.Session.ThoughtCount != 3 {
		t.Errorf("snapshot of the pulled session: %d main thoughts, branches %+v, %+v", len(snap.Thoughts), snap.Branches, snap.Session)
	}
	c.send("observatory", "list:sessions", map[string]any{"limit": 10})
	var list observatory.SessionList
	c.expect("observatory", "sessions:list", &list)
	if list.Total != 1 || list.Sessions[0].ID != s.ID {
		t.Errorf("listing after the pull: %+v", list)
	}
}
