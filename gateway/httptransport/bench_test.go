package httptransport_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway/httptransport"
)

// BenchmarkToolCall is one tools/call over HTTP on a session already
// initialized, through the SDK's handler, through ours, and through ours with the call
// taken by a Direct hook, from a plain
// HTTP client (so that the client's own cost is the same, and small):
//
//	go test ./gateway/httptransport -run - -bench ToolCall -benchmem
//
// Bytes and allocations per call do not depend on the machine's load.
func BenchmarkToolCall(b *testing.B) {
	for _, tc := range []struct {
		name    string
		handler func(f *fixture) http.Handler
	}{
		{"sdk", func(f *fixture) http.Handler {
			// The SDK asks for a server on every request; as the gateway
			// did, only a request that opens a session gets a new one.
			probe := f.server()
			return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
				if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
					return probe
				}
				return f.server()
			}, nil)
		}},
		{"httptransport", func(f *fixture) http.Handler {
			return httptransport.New(func(*http.Request) *mcp.Server { return f.server() }, httptransport.Options{ProtocolVersions: versions})
		}},
		{"direct", func(f *fixture) http.Handler {
			// The call taken by a Direct hook, as the gateway's tool is.
			var taken atomic.Int32
			return httptransport.NewDirect(func(*http.Request) (*mcp.Server, httptransport.Direct) {
				return f.server(), directSample(&taken)
			}, httptransport.Options{ProtocolVersions: versions})
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv := httptest.NewServer(tc.handler(newFixture()))
			defer srv.Close()
			post := func(session, body string) (*http.Response, string) {
				req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
				if session != "" {
					req.Header.Set("Mcp-Session-Id", session)
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				data, _ := io.ReadAll(res.Body)
				res.Body.Close()
				return res, string(data)
			}
			res, _ := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
			session := res.Header.Get("Mcp-Session-Id")
			post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"S3|H|S2|the latency follows deploy 3; the planner scans users.email."}}}`
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if res, body := post(session, call); res.StatusCode != http.StatusOK || !strings.Contains(body, "echo: S3") {
					b.Fatalf("%d %s", res.StatusCode, body)
				}
			}
		})
	}
}
