package observatory_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/observatory"
)

// TestDNSRebindingRefused: a page on evil.example that made its name
// resolve to 127.0.0.1 sends Host and Origin evil.example:P. Every route
// (page, API, socket) refuses it with 403 and no CORS grant; the same
// requests under localhost, 127.0.0.1 or a name the operator configured
// (the host of a THOUGHTBOX_OBSERVATORY_CORS origin) work.
func TestDNSRebindingRefused(t *testing.T) {
	f := newFixture(t, observatory.Config{HTTPAPI: true, Origins: []string{"https://dash.example"}})
	id := f.start("secret plans")
	f.add(id, ledger.ThoughtInput{Thought: "the plan", NextThoughtNeeded: true})
	u, _ := url.Parse(f.srv.URL)
	port := u.Port()
	evil := "evil.example:" + port

	get := func(path, host, origin string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, path := range []string{"/", "/index.html", "/api/sessions", "/api/sessions/" + id, "/api/sessions/" + id + "/export"} {
		resp, body := get(path, evil, "http://"+evil)
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" || strings.Contains(body, "secret plans") {
			t.Errorf("GET %s with Host %s: %s, ACAO %q, body %.200s; want 403 without the session", path, evil, resp.Status, resp.Header.Get("Access-Control-Allow-Origin"), body)
		}
		if !strings.Contains(body, "evil.example") {
			t.Errorf("GET %s: the refusal does not name the host: %s", path, body)
		}
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "dash.example:" + port} {
		resp, body := get("/api/sessions", host, "")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "secret plans") {
			t.Errorf("GET /api/sessions with Host %s: %s %.200s", host, resp.Status, body)
		}
	}
	if resp, _ := get("/api/sessions", "localhost:"+port, "http://"+evil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("Origin %s under Host localhost: %s, want 403", evil, resp.Status)
	}

	dial := func(host, origin string) (*websocket.Conn, *http.Response, error) {
		h := http.Header{}
		h.Set("Host", host)
		if origin != "" {
			h.Set("Origin", origin)
		}
		return websocket.DefaultDialer.Dial(f.wsURL(), h)
	}
	for _, tt := range []struct{ host, origin string }{
		{evil, "http://" + evil},
		{evil, ""},
		{"127.0.0.1:" + port, "http://" + evil},
	} {
		ws, resp, err := dial(tt.host, tt.origin)
		if err == nil {
			ws.Close()
			t.Errorf("socket with Host %q Origin %q was opened", tt.host, tt.origin)
			continue
		}
		if resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("socket with Host %q Origin %q: %v, want 403", tt.host, tt.origin, err)
		}
	}
	ws, _, err := dial("localhost:"+port, "http://localhost:"+port)
	if err != nil {
		t.Fatalf("socket from the page's own localhost origin: %v", err)
	}
	defer ws.Close()
	c := &wsClient{t: t, ws: ws}
	c.send("reasoning:"+id, "subscribe")
	c.expect("reasoning:"+id, "subscribed", nil)
	var snap observatory.Snapshot
	c.expect("reasoning:"+id, "session:snapshot", &snap)
	if len(snap.Thoughts) != 1 {
		t.Errorf("snapshot over localhost: %d thoughts, want 1", len(snap.Thoughts))
	}
}
