package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway"
)

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func (e *env) connectHTTP(t *testing.T, url string, hc *http.Client) *client {
	t.Helper()
	c := &client{t: t, toolsChanged: make(chan struct{}, 16)}
	impl, opts := clientOptions(clientOpts{}, c.toolsChanged)
	var err error
	c.cs, err = mcp.NewClient(impl, opts).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect over HTTP: %v", err)
	}
	t.Cleanup(func() { c.cs.Close() })
	return c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHTTP(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	srv := httptest.NewServer(e.g.HTTPHandler())
	t.Cleanup(srv.Close)
	url := srv.URL + "/mcp"

	a := e.connectHTTP(t, url, nil)
	b := e.connectHTTP(t, url, nil)
	if !strings.HasPrefix(srv.Listener.Addr().String(), "127.0.0.1:") {
		t.Fatalf("test server not on loopback: %s", srv.Listener.Addr())
	}
	id := a.ready("over http")
	a.awaitToolsChanged()
	b.noToolsChanged()
	if got := a.think("S1|O|over the wire", nil); got["sessionId"] != id {
		t.Errorf("thought = %v", got)
	}
	if st := b.ok("get_state", nil); st["stage"] != 0.0 {
		t.Errorf("b's stage = %v, want 0: each HTTP session has its own state", st["stage"])
	}
	if names := a.toolNames(); len(names) != 4 {
		t.Errorf("a's tools = %v", names)
	}
	if names := b.toolNames(); len(names) != 1 {
		t.Errorf("b's tools = %v", names)
	}

	waitFor(t, "two live connections", func() bool { return e.g.Connections() == 2 })
	a.cs.Close()
	waitFor(t, "the closed session to be freed", func() bool { return e.g.Connections() == 1 })
	b.ok("get_state", nil)
}

func post(t *testing.T, url, host, auth string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if host != "" {
		req.Host = host
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

func TestHTTPBearerToken(t *testing.T) {
	e := newEnv(t, gateway.Options{AuthToken: "s3cret"})
	srv := httptest.NewServer(e.g.HTTPHandler())
	t.Cleanup(srv.Close)
	url := srv.URL + "/mcp"

	for _, auth := range []string{"", "Bearer wrong", "Basic s3cret", "s3cret"} {
		res := post(t, url, "", auth)
		if res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("Authorization %q: status %d, WWW-Authenticate %q; want 401", auth, res.StatusCode, res.Header.Get("WWW-Authenticate"))
		}
	}
	if res := post(t, url, "", "Bearer s3cret"); res.StatusCode != http.StatusOK {
		t.Errorf("with the token: status %d", res.StatusCode)
	}
	c := e.connectHTTP(t, url, &http.Client{Transport: bearer{"s3cret", http.DefaultTransport}})
	c.ok("get_state", nil)

	_, err := mcp.NewClient(&mcp.Implementation{Name: "x"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err == nil {
		t.Errorf("a client without the token connected")
	}
}

func TestHTTPDNSRebindingAndPaths(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	srv := httptest.NewServer(e.g.HTTPHandler())
	t.Cleanup(srv.Close)
	if res := post(t, srv.URL+"/mcp", "evil.example:1731", ""); res.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host header on loopback: status %d, want 403", res.StatusCode)
	}
	if res := post(t, srv.URL+"/mcp", "localhost:1731", ""); res.StatusCode != http.StatusOK {
		t.Errorf("localhost Host header: status %d, want 200", res.StatusCode)
	}
	if res := post(t, srv.URL+"/other", "", ""); res.StatusCode != http.StatusNotFound {
		t.Errorf("/other: status %d, want 404", res.StatusCode)
	}
}

func TestServeStdio(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.g.ServeStdio(ctx, serverIn, serverOut) }()

	c := &client{t: t, toolsChanged: make(chan struct{}, 16)}
	impl, opts := clientOptions(clientOpts{}, c.toolsChanged)
	var err error
	c.cs, err = mcp.NewClient(impl, opts).Connect(t.Context(), &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.ready("stdio")
	c.think("over stdio", nil)
	if !contains(e.log.String(), "over stdio") {
		t.Errorf("thought log = %q", e.log.String())
	}
	c.cs.Close()
	clientOut.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeStdio returned %v after the client left", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeStdio did not return after the client closed its end")
	}
	waitFor(t, "the stdio connection to be freed", func() bool { return e.g.Connections() == 0 })
}

// TestHTTPOrigin checks the Origin rules: none, a local one or a configured
// one passes; any other (including "null") gets 403.
func TestHTTPOrigin(t *testing.T) {
	e := newEnv(t, gateway.Options{AllowedOrigins: []string{"https://team.example"}})
	srv := httptest.NewServer(e.g.HTTPHandler())
	t.Cleanup(srv.Close)
	for origin, want := range map[string]int{
		"":                          http.StatusOK,
		"http://localhost:3000":     http.StatusOK,
		"http://127.0.0.1":          http.StatusOK,
		"http://[::1]:8080":         http.StatusOK,
		"https://team.example":      http.StatusOK,
		"https://evil.example":      http.StatusForbidden,
		"http://localhost.evil.com": http.StatusForbidden,
		"null":                      http.StatusForbidden,
		"file://":                   http.StatusForbidden,
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"o","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("Origin %q: status %d, want %d", origin, res.StatusCode, want)
		}
	}
}

// TestHTTPRefusesInexactIDs checks that an id the SDK would not echo as
// sent is refused with -32600 naming it.
func TestHTTPRefusesInexactIDs(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	srv := httptest.NewServer(e.g.HTTPHandler())
	t.Cleanup(srv.Close)
	for _, id := range []string{"18446744073709551615", "1e30", "9007199254740993", "1.5"} {
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"o","version":"1"}}}`
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(got), `"id":null,"error":{"code":-32600,"message":"invalid request: field id: `+id) {
			t.Errorf("id %s: %d %s", id, res.StatusCode, got)
		}
	}
}

// TestHTTPSlowBody checks that a client sending its body too slowly is cut
// off, while the server keeps serving others.
func TestHTTPSlowBody(t *testing.T) {
	e := newEnv(t, gateway.Options{HTTPReadTimeout: 100 * time.Millisecond})
	srv := httptest.NewServer(e.g.HTTPHandler())
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{", srv.Listener.Addr())
	// Never send the rest: the server must answer (400) or close, not wait.
	reply, _ := io.ReadAll(conn)
	if len(reply) > 0 && !strings.Contains(string(reply), " 400 ") {
		t.Errorf("slow body answered with %q, want 400 or a closed connection", reply)
	}
	c := e.connectHTTP(t, srv.URL+"/mcp", nil)
	c.ok("get_state", nil)
}
