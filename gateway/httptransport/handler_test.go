package httptransport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway/httptransport"
)

var versions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// fixture is a server with a tool of each kind a transport must carry:
// a plain answer, a sampling request to the client during the call with
// a progress notification before it, a roots request, a tool that adds a
// tool (list_changed, sent outside any call), and one that blocks until
// released.
type fixture struct {
	started chan struct{}
	release chan struct{}
	mu      sync.Mutex
	servers int
	closed  int
}

func newFixture() *fixture {
	return &fixture{started: make(chan struct{}, 16), release: make(chan struct{})}
}

type textArgs struct {
	Text string `json:"text,omitempty"`
}

func reply(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func (f *fixture) server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: versions})
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
		return reply("echo: " + a.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sample"}, func(ctx context.Context, req *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "asking the model"}); err != nil {
				return nil, nil, err
			}
		}
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: a.Text}}}})
		if err != nil {
			return nil, nil, err
		}
		return reply("model said: " + res.Content.(*mcp.TextContent).Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ textArgs) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return reply(strings.Join(uris, ",")), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "grow"}, func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
		mcp.AddTool(s, &mcp.Tool{Name: a.Text}, func(context.Context, *mcp.CallToolRequest, textArgs) (*mcp.CallToolResult, any, error) {
			return reply(a.Text), nil, nil
		})
		return reply("grown"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ textArgs) (*mcp.CallToolResult, any, error) {
		f.started <- struct{}{}
		select {
		case <-f.release:
		case <-ctx.Done():
		}
		return reply("released"), nil, nil
	})
	f.mu.Lock()
	f.servers++
	f.mu.Unlock()
	return s
}

// transcript is what a client saw of one scripted session.
type transcript struct {
	Tools        []string
	Echo         string
	Sample       string
	Progress     []string
	Roots        string
	ToolsChanged bool
	ToolsAfter   []string
	Unknown      string
}

// script drives a session with the SDK's own Streamable HTTP client
// through initialize, tools/list, tool calls, a notification, a sampling
// request and a roots request from the server, and list_changed.
func script(t *testing.T, url string) transcript {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var tr transcript
	var mu sync.Mutex
	changed := make(chan struct{}, 4)
	client := mcp.NewClient(&mcp.Implementation{Name: "conformance", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant",
				Content: &mcp.TextContent{Text: "about " + req.Params.Messages[0].Content.(*mcp.TextContent).Text}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			tr.Progress = append(tr.Progress, req.Params.Message)
			mu.Unlock()
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///work/project", Name: "project"})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	for _, tool := range tools.Tools {
		tr.Tools = append(tr.Tools, tool.Name)
	}
	text := func(name string, args map[string]any, meta mcp.Meta) string {
		t.Helper()
		p := &mcp.CallToolParams{Name: name, Arguments: args}
		p.Meta = meta
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			return "error: " + err.Error()
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	tr.Echo = text("echo", map[string]any{"text": "hello"}, nil)
	if err := cs.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "x", Progress: 1}); err != nil {
		t.Fatalf("a notification from the client: %v", err)
	}
	tr.Sample = text("sample", map[string]any{"text": "the index"}, mcp.Meta{"progressToken": "p1"})
	tr.Roots = text("roots", nil, nil)
	// list_changed goes out on the GET stream, which the client opens
	// after initialize; grow until it is seen (the SDK's handler drops
	// a notification sent before the GET is connected).
	for i := 0; i < 50 && !tr.ToolsChanged; i++ {
		text("grow", map[string]any{"text": fmt.Sprintf("grown%d", i)}, nil)
		select {
		case <-changed:
			tr.ToolsChanged = true
		case <-time.After(100 * time.Millisecond):
		}
	}
	tools, err = cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	for _, tool := range tools.Tools {
		if !strings.HasPrefix(tool.Name, "grown") {
			tr.ToolsAfter = append(tr.ToolsAfter, tool.Name)
		}
	}
	tr.Unknown = text("nonesuch", nil, nil)
	return tr
}

// TestConformsToSDKHandler runs one script through the SDK's Streamable
// HTTP handler and through ours, each driven by the SDK's client, and
// requires the same transcript.
func TestConformsToSDKHandler(t *testing.T) {
	theirs := newFixture()
	sdk := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return theirs.server() }, nil))
	defer sdk.Close()
	mine := newFixture()
	h := httptransport.New(func(*http.Request) *mcp.Server { return mine.server() }, httptransport.Options{ProtocolVersions: versions})
	ours := httptest.NewServer(h)
	defer ours.Close()

	want := script(t, sdk.URL)
	got := script(t, ours.URL)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("through httptransport:\n%+v\nthrough the SDK's handler:\n%+v", got, want)
	}
	if got.Echo != "echo: hello" || got.Sample != "model said: about the index" || got.Roots != "file:///work/project" ||
		!reflect.DeepEqual(got.Progress, []string{"asking the model"}) || !got.ToolsChanged {
		t.Errorf("transcript = %+v", got)
	}
	waitFor(t, "the closed session to be forgotten", func() bool { return h.Sessions() == 0 })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// raw is a hand-made client, for what the SDK's client never sends.
type raw struct {
	t       *testing.T
	url     string
	session string
	version string
	header  http.Header
}

func (c *raw) do(method, body string) (*http.Response, string) {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.version != "" {
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res, string(data)
}

func (c *raw) initialize(version string) {
	c.t.Helper()
	res, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if res.StatusCode != http.StatusOK || res.Header.Get("Mcp-Session-Id") == "" {
		c.t.Fatalf("initialize: %d %s", res.StatusCode, body)
	}
	c.session, c.version = res.Header.Get("Mcp-Session-Id"), version
	if res, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); res.StatusCode != http.StatusAccepted {
		c.t.Fatalf("initialized: %d %s", res.StatusCode, body)
	}
}

func newRaw(t *testing.T, opts httptransport.Options) (*raw, *fixture, *httptransport.Handler) {
	f := newFixture()
	if opts.ProtocolVersions == nil {
		opts.ProtocolVersions = versions
	}
	h := httptransport.New(func(*http.Request) *mcp.Server { return f.server() }, opts)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	return &raw{t: t, url: srv.URL}, f, h
}

// TestWire checks the protocol's rules at the HTTP level: content types,
// status codes, batches by version, ids, sessions.
func TestWire(t *testing.T) {
	c, _, h := newRaw(t, httptransport.Options{})
	c.initialize("2025-03-26")

	res, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":"a","method":"ping"}`)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json" || body != `{"jsonrpc":"2.0","id":"a","result":{}}` {
		t.Errorf("ping: %d %q %s", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	res, body = c.do(http.MethodPost, `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}},{"jsonrpc":"2.0","id":3,"method":"ping"}]`)
	var answers []map[string]any
	if err := json.Unmarshal([]byte(body), &answers); res.StatusCode != http.StatusOK || err != nil || len(answers) != 2 {
		t.Errorf("batch under 2025-03-26: %d %s", res.StatusCode, body)
	}
	res, body = c.do(http.MethodPost, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
	if res.StatusCode != http.StatusOK || !strings.Contains(body, `echo: x`) {
		t.Errorf("tools/call: %d %s", res.StatusCode, body)
	}

	for _, tc := range []struct {
		name, method, body string
		header             http.Header
		version, session   string
		status             int
		has                string
	}{
		{name: "batch under 2025-06-18", method: "POST", body: `[{"jsonrpc":"2.0","id":5,"method":"ping"}]`, version: "2025-06-18", status: 400, has: `"code":-32600`},
		{name: "inexact id", method: "POST", body: `{"jsonrpc":"2.0","id":1e30,"method":"ping"}`, status: 400, has: `"id":null,"error":{"code":-32600,"message":"invalid request: field id: 1e30`},
		{name: "not JSON", method: "POST", body: `{"jsonrpc":`, status: 400, has: `"code":-32700`},
		{name: "too deep", method: "POST", body: strings.Repeat("[", 1001) + strings.Repeat("]", 1001), status: 400, has: `nests deeper`},
		{name: "wrong version tag", method: "POST", body: `{"jsonrpc":"1.0","id":9,"method":"ping"}`, status: 400, has: `"id":9`},
		{name: "unknown session", method: "POST", body: `{"jsonrpc":"2.0","id":6,"method":"ping"}`, session: "nonesuch", status: 404},
		{name: "unsupported version", method: "POST", body: `{"jsonrpc":"2.0","id":6,"method":"ping"}`, version: "2024-01-01", status: 400, has: "Unsupported protocol version"},
		{name: "text body", method: "POST", body: `{}`, header: http.Header{"Content-Type": {"text/plain"}}, status: 415},
		{name: "accept json only", method: "POST", body: `{}`, header: http.Header{"Accept": {"application/json"}}, status: 400},
		{name: "GET without event streams", method: "GET", header: http.Header{"Accept": {"application/json"}}, status: 400},
		{name: "GET replay", method: "GET", header: http.Header{"Last-Event-Id": {"x_1"}}, status: 400},
		{name: "PUT", method: "PUT", status: 405},
	} {
		saved := *c
		if tc.version != "" {
			c.version = tc.version
		}
		if tc.session != "" {
			c.session = tc.session
		}
		c.header = tc.header
		res, body := c.do(tc.method, tc.body)
		*c = saved
		if res.StatusCode != tc.status || !strings.Contains(body, tc.has) {
			t.Errorf("%s: %d %s; want %d with %q", tc.name, res.StatusCode, body, tc.status, tc.has)
		}
	}

	if n := h.Sessions(); n != 1 {
		t.Errorf("%d sessions, want 1", n)
	}
	if res, _ := c.do(http.MethodDelete, ""); res.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE: %d", res.StatusCode)
	}
	waitFor(t, "the deleted session to be forgotten", func() bool { return h.Sessions() == 0 })
	if res, _ := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":7,"method":"ping"}`); res.StatusCode != http.StatusNotFound {
		t.Errorf("POST after DELETE: %d, want 404", res.StatusCode)
	}
}

// TestProbeSessionIsNotKept checks that a POST without a session that
// does not initialize one (the SDK client's server/discover probe, or a
// stray ping) leaves no session behind.
func TestProbeSessionIsNotKept(t *testing.T) {
	c, f, h := newRaw(t, httptransport.Options{})
	res, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if res.StatusCode != http.StatusOK || res.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("ping without a session: %d %s, session %q", res.StatusCode, body, res.Header.Get("Mcp-Session-Id"))
	}
	waitFor(t, "the probe's session to end", func() bool { return h.Sessions() == 0 })
	if f.servers != 1 {
		t.Errorf("%d servers made, want 1", f.servers)
	}
}

// TestDuplicateIDInFlight checks that an id still being answered is
// refused, and that the first call is answered all the same.
func TestDuplicateIDInFlight(t *testing.T) {
	c, f, _ := newRaw(t, httptransport.Options{})
	c.initialize("2025-06-18")
	first := make(chan string, 1)
	go func() {
		_, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
		first <- body
	}()
	select {
	case <-f.started:
	case body := <-first:
		t.Fatalf("the blocking call returned: %s", body)
	}
	res, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "already in use") {
		t.Errorf("second id 7: %d %s", res.StatusCode, body)
	}
	close(f.release)
	if body := <-first; !strings.Contains(body, "released") {
		t.Errorf("first id 7: %s", body)
	}
}

// TestSessionTimeout checks that an idle session is closed, and that a
// session in use is not.
func TestSessionTimeout(t *testing.T) {
	c, f, h := newRaw(t, httptransport.Options{SessionTimeout: 100 * time.Millisecond})
	c.initialize("2025-06-18")
	done := make(chan string, 1)
	go func() {
		_, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
		done <- body
	}()
	select {
	case <-f.started:
	case body := <-done:
		t.Fatalf("the blocking call returned: %s", body)
	}
	// Longer than the timeout, during a call: the timer is paused while
	// a POST is in progress, whatever the time it takes.
	time.Sleep(300 * time.Millisecond)
	if n := h.Sessions(); n != 1 {
		t.Errorf("%d sessions during a call longer than the timeout, want 1", n)
	}
	close(f.release)
	if body := <-done; !strings.Contains(body, "released") {
		t.Errorf("the call outlasting the timeout: %s", body)
	}
	waitFor(t, "the idle session to be closed", func() bool { return h.Sessions() == 0 })
	if res, _ := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":4,"method":"ping"}`); res.StatusCode != http.StatusNotFound {
		t.Errorf("ping after the timeout: %d, want 404", res.StatusCode)
	}
}

// TestSessionBelongsToItsToken checks that a session opened with one
// bearer token cannot be used with another.
func TestSessionBelongsToItsToken(t *testing.T) {
	f := newFixture()
	h := httptransport.New(func(*http.Request) *mcp.Server { return f.server() }, httptransport.Options{ProtocolVersions: versions})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: token}, nil
	}
	srv := httptest.NewServer(auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h))
	defer srv.Close()
	defer h.Close()
	c := &raw{t: t, url: srv.URL, header: http.Header{"Authorization": {"Bearer alice"}}}
	c.initialize("2025-06-18")
	if res, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); res.StatusCode != http.StatusOK {
		t.Errorf("alice's ping: %d %s", res.StatusCode, body)
	}
	c.header = http.Header{"Authorization": {"Bearer mallory"}}
	if res, _ := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); res.StatusCode != http.StatusForbidden {
		t.Errorf("mallory using alice's session: %d, want 403", res.StatusCode)
	}
}

// TestSamplingOnTheCallsStream checks the content types: a call the server
// only answers gets JSON, one during which it asks the client something
// gets an event stream carrying the request, and the call completes once
// the client posts its answer.
func TestSamplingOnTheCallsStream(t *testing.T) {
	c, _, _ := newRaw(t, httptransport.Options{})
	res, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	c.session, c.version = res.Header.Get("Mcp-Session-Id"), "2025-06-18"
	if res.Header.Get("Content-Type") != "application/json" {
		t.Errorf("initialize answered as %q: %s", res.Header.Get("Content-Type"), body)
	}
	c.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	// Bounded: if the sampling request went anywhere but this response,
	// the read below would wait for ever.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url,
		strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sample","arguments":{"text":"q"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("Mcp-Protocol-Version", c.version)
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if stream.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("a sampling call answered as %q", stream.Header.Get("Content-Type"))
	}
	buf := make([]byte, 4096)
	n, _ := stream.Body.Read(buf)
	ev := string(buf[:n])
	if !strings.HasPrefix(ev, "event: message\ndata: ") || !strings.Contains(ev, `"method":"sampling/createMessage"`) {
		t.Fatalf("first event: %q", ev)
	}
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	json.Unmarshal([]byte(strings.TrimSpace(strings.TrimPrefix(ev, "event: message\ndata: "))), &msg)
	answer := `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"model":"m","role":"assistant","content":{"type":"text","text":"yes"}}}`
	if res, body := c.do(http.MethodPost, answer); res.StatusCode != http.StatusAccepted {
		t.Fatalf("posting the answer: %d %s", res.StatusCode, body)
	}
	rest, _ := io.ReadAll(stream.Body)
	if !strings.Contains(string(rest), `model said: yes`) || !strings.Contains(string(rest), `"id":2`) {
		t.Errorf("the call's answer: %q", rest)
	}
}
