package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// httpGateway serves a fresh gateway on a memory store with a fixed
// clock over Streamable HTTP, with the direct path on or off.
func httpGateway(t *testing.T, direct bool, opts Options) *httptest.Server {
	t.Helper()
	store, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	tick := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { tick = tick.Add(time.Second); return tick }
	opts.ThoughtLog = io.Discard
	g := New(ledger.New(store, ledger.Options{Now: now}), opts)
	srv := httptest.NewServer(g.httpHandler(direct))
	t.Cleanup(srv.Close)
	return srv
}

// mcpClient posts raw JSON-RPC to one MCP session.
type mcpClient struct {
	t       *testing.T
	url     string
	session string
	token   string // bearer token, if any
}

// post sends body and returns the response; the caller closes its body.
func (c *mcpClient) post(body string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.url+"/mcp", strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.session = id
	}
	return resp
}

// exchange posts body and returns the whole response as text: status,
// content type and body.
func (c *mcpClient) exchange(body string) string {
	c.t.Helper()
	resp := c.post(body)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return fmt.Sprintf("%d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), data)
}

var (
	uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	oidPattern  = regexp.MustCompile(`[0-9a-f]{40}`)
)

func maskIDs(s string) string {
	return oidPattern.ReplaceAllString(uuidPattern.ReplaceAllString(s, "<session>"), "<oid>")
}

// runDirectScriptHTTP sends directScript, one POST per message, and
// returns every response, with random ids masked.
func runDirectScriptHTTP(t *testing.T, direct bool) []string {
	srv := httpGateway(t, direct, Options{})
	c := &mcpClient{t: t, url: srv.URL}
	var got []string
	for _, msg := range directScript {
		got = append(got, maskIDs(c.exchange(msg)))
	}
	return got
}

// TestDirectCallsOverHTTPAnswerAsTheSDK is TestDirectCallsAnswerAsTheSDK
// over Streamable HTTP: every response (status, content type, body) must
// be the same with the gateway's calls taken directly and through the SDK.
func TestDirectCallsOverHTTPAnswerAsTheSDK(t *testing.T) {
	viaSDK := runDirectScriptHTTP(t, false)
	direct := runDirectScriptHTTP(t, true)
	if len(viaSDK) != len(direct) {
		t.Fatalf("%d responses through the SDK, %d direct", len(viaSDK), len(direct))
	}
	for i := range viaSDK {
		if viaSDK[i] != direct[i] {
			t.Errorf("response %d (to %s) differs:\nSDK:    %s\ndirect: %s", i, directScript[i], viaSDK[i], direct[i])
		}
	}
	if !strings.Contains(strings.Join(direct, "\n"), `thoughtNumber`) {
		t.Errorf("no thought was recorded:\n%s", strings.Join(direct, "\n"))
	}
}

// rootsCall is a call of list_roots, which asks the client for its roots
// (a request sent on the call's own response) and waits for the answer.
const rootsCall = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"thoughtbox_gateway","arguments":{"operation":"list_roots"}}}`

// startRootsCall opens a session whose client offers roots, posts
// rootsCall and reads its response up to the roots/list request the
// server sends on it, returning the response (still open) and a reader of
// its events, and the roots/list request's id.
func startRootsCall(t *testing.T, c *mcpClient) (*http.Response, *bufio.Reader, string) {
	t.Helper()
	c.exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	c.exchange(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp := c.post(rootsCall)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		resp.Body.Close()
		t.Fatalf("list_roots answered with %s, want an event stream carrying roots/list", ct)
	}
	r := bufio.NewReader(resp.Body)
	ev := nextEvent(t, r)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal([]byte(ev), &m); err != nil || m.Method != "roots/list" {
		t.Fatalf("first event %s, want the roots/list request", ev)
	}
	return resp, r, string(m.ID)
}

// nextEvent reads one server-sent event's data.
func nextEvent(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	data, err := readEvent(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readEvent(r *bufio.Reader) (string, error) {
	var data string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("reading an event: %v (so far %q)", err, data)
		}
		line = strings.TrimRight(line, "\n")
		if line == "" && data != "" {
			return data, nil
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data += d
		}
	}
}

// TestDirectHTTPCancel cancels a call waiting for the client's roots:
// notifications/cancelled must reach it (RootsTimeout is far away), and
// its answer must be the one the SDK path gives.
func TestDirectHTTPCancel(t *testing.T) {
	answers := map[bool]string{}
	for _, direct := range []bool{false, true} {
		srv := httpGateway(t, direct, Options{RootsTimeout: time.Hour})
		c := &mcpClient{t: t, url: srv.URL}
		resp, r, _ := startRootsCall(t, c)
		if got := c.exchange(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`); !strings.HasPrefix(got, "202 ") {
			t.Fatalf("the cancellation was answered %s", got)
		}
		done := make(chan string, 1)
		go func() {
			// The server may first give up its roots/list request
			// (notifications/cancelled, in either order with the
			// answer, on either path).
			for {
				ev, err := readEvent(r)
				if err != nil {
					done <- err.Error()
					return
				}
				if !strings.Contains(ev, `"method":"notifications/cancelled"`) {
					done <- ev
					return
				}
			}
		}()
		select {
		case ev := <-done:
			answers[direct] = ev
		case <-time.After(30 * time.Second):
			resp.Body.Close() // so that the server can shut down
			t.Fatalf("direct=%v: the cancelled call was not answered", direct)
		}
		resp.Body.Close()
	}
	if answers[false] != answers[true] {
		t.Errorf("the cancelled call's answers differ:\nSDK:    %s\ndirect: %s", answers[false], answers[true])
	}
	if !strings.Contains(answers[true], `"id":7`) || !strings.Contains(answers[true], "canceled") {
		t.Errorf("the cancelled call's answer is %s, want its id and the cancellation", answers[true])
	}
}

// TestDirectHTTPCloseWaits deletes a session while a direct call waits for
// the client: as with the SDK's own calls, the close waits for the call,
// which the client can still complete by answering roots/list.
func TestDirectHTTPCloseWaits(t *testing.T) {
	srv := httpGateway(t, true, Options{RootsTimeout: time.Hour})
	c := &mcpClient{t: t, url: srv.URL}
	resp, r, rootsID := startRootsCall(t, c)
	defer resp.Body.Close()
	deleted := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodDelete, c.url+"/mcp", nil)
		req.Header.Set("Mcp-Session-Id", c.session)
		dr, err := http.DefaultClient.Do(req)
		if err != nil {
			deleted <- 0
			return
		}
		dr.Body.Close()
		deleted <- dr.StatusCode
	}()
	// Time for the DELETE to arrive first: the test holds either way, but
	// only then does it show the wait.
	time.Sleep(200 * time.Millisecond)
	// The session stays open for the call: the client's answer is taken.
	answer := `{"jsonrpc":"2.0","id":` + rootsID + `,"result":{"roots":[{"uri":"file:///tmp/x","name":"x"}]}}`
	if got := c.exchange(answer); !strings.HasPrefix(got, "202 ") {
		t.Fatalf("the answer to roots/list was refused: %s", got)
	}
	ev := nextEvent(t, r)
	if !strings.Contains(ev, `"id":7`) || !strings.Contains(ev, "file:///tmp/x") {
		t.Fatalf("list_roots answered %s, want the roots given", ev)
	}
	select {
	case code := <-deleted:
		if code != http.StatusNoContent {
			t.Fatalf("DELETE answered %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("DELETE did not return once the call was done")
	}
	if got := c.exchange(rootsCall); !strings.HasPrefix(got, "404 ") {
		t.Errorf("the deleted session still answers: %s", got)
	}
}

// TestDirectHTTPGrant checks that a token's grant limits the calls the
// direct path takes as it limits the SDK's: a read-only token may read its
// project but not start a session in it.
func TestDirectHTTPGrant(t *testing.T) {
	tokens, err := ParseTokens(strings.NewReader("reader-token-0123456789 bob read:_default\n"), "tokens")
	if err != nil {
		t.Fatal(err)
	}
	answers := map[bool][]string{}
	for _, direct := range []bool{false, true} {
		srv := httpGateway(t, direct, Options{Tokens: tokens})
		c := &mcpClient{t: t, url: srv.URL, token: "reader-token-0123456789"}
		for _, msg := range directScript[:2] {
			c.exchange(msg)
		}
		for _, msg := range []string{
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"thoughtbox_gateway","arguments":{"operation":"start_new","args":{"sessionTitle":"t"}}}}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"thoughtbox_gateway","arguments":{"operation":"list_sessions"}}}`,
		} {
			answers[direct] = append(answers[direct], maskIDs(c.exchange(msg)))
		}
	}
	for i := range answers[true] {
		if answers[false][i] != answers[true][i] {
			t.Errorf("answer %d differs:\nSDK:    %s\ndirect: %s", i, answers[false][i], answers[true][i])
		}
	}
	if got := answers[true][0]; !strings.Contains(got, "may not write to project") {
		t.Errorf("start_new with a read-only token answered %s", got)
	}
	if got := answers[true][1]; strings.Contains(got, "isError") {
		t.Errorf("list_sessions with a read token answered %s", got)
	}
}
