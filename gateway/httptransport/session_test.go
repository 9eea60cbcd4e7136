package httptransport_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gateway/httptransport"
)

// TestSessionCap checks Options.MaxSessions: past the cap a new session
// takes the place of the one idle longest; when every session is in use
// (a call in progress, or a GET stream open) initialize is refused with
// 503 and a JSON-RPC error answering its id, and nothing is closed.
func TestSessionCap(t *testing.T) {
	first, f, h := newRaw(t, httptransport.Options{MaxSessions: 3})
	first.initialize("2025-06-18")
	clients := []*raw{first}
	for range 2 {
		c := &raw{t: t, url: first.url}
		c.initialize("2025-06-18")
		clients = append(clients, c)
	}
	// The first session is used last: the second is now idle longest.
	ping := func(c *raw) int {
		res, _ := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":"p","method":"ping"}`)
		return res.StatusCode
	}
	if st := ping(first); st != http.StatusOK {
		t.Fatalf("ping: %d", st)
	}
	fourth := &raw{t: t, url: first.url}
	fourth.initialize("2025-06-18")
	if n, ev := h.Sessions(), h.Evicted(); n != 3 || ev != 1 {
		t.Errorf("after a fourth initialize under a cap of 3: %d sessions, %d evicted; want 3 and 1", n, ev)
	}
	if st := ping(clients[1]); st != http.StatusNotFound {
		t.Errorf("the session idle longest still answers: %d, want 404", st)
	}
	clients = []*raw{first, clients[2], fourth}
	for i, c := range clients {
		if st := ping(c); st != http.StatusOK {
			t.Errorf("session %d after the eviction: %d", i, st)
		}
	}

	// Every session busy: two in a call, one with its GET stream open.
	done := make(chan string, 2)
	for _, c := range clients[:2] {
		go func() {
			_, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
			done <- body
		}()
		<-f.started
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, first.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", clients[2].session)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", err, stream)
	}
	late := &raw{t: t, url: first.url}
	res, body := late.do(http.MethodPost, `{"jsonrpc":"2.0","id":41,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"late","version":"1"}}}`)
	var reply struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &reply); err != nil || res.StatusCode != http.StatusServiceUnavailable ||
		reply.ID != 41 || reply.Error.Code != -32000 || !strings.Contains(reply.Error.Message, "THOUGHTBOX_HTTP_MAX_SESSIONS") {
		t.Errorf("initialize with every session busy: %d %s; want 503 and a JSON-RPC error for id 41 naming the setting", res.StatusCode, body)
	}
	if res.Header.Get("Mcp-Session-Id") != "" || h.Sessions() != 3 || h.Evicted() != 1 {
		t.Errorf("the refusal changed the sessions: header %q, %d open, %d evicted", res.Header.Get("Mcp-Session-Id"), h.Sessions(), h.Evicted())
	}
	close(f.release)
	for range 2 {
		if body := <-done; !strings.Contains(body, "released") {
			t.Errorf("a call in progress during the refusal: %s", body)
		}
	}
	// The GET stream is still open, so the idle one of the two that
	// called goes, never the one with its stream.
	late.initialize("2025-06-18")
	if st := ping(clients[2]); st != http.StatusOK {
		t.Errorf("the session with its GET stream open was closed: %d", st)
	}
	stream.Body.Close()
	if st := ping(late); st != http.StatusOK {
		t.Errorf("initialize once sessions were idle: %d", st)
	}
	if h.Evicted() != 2 {
		t.Errorf("%d evicted, want 2", h.Evicted())
	}
}
