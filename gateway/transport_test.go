package gateway_test

import (
	"context"
	"io"
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
