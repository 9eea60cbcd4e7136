package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestHTTPSessionCap: with HTTPMaxSessions 2, five clients that
// initialize and go idle all get a session, and the server keeps two
// connections, not five: each new one took the place of the one idle
// longest.
func TestHTTPSessionCap(t *testing.T) {
	e := newEnv(t, gateway.Options{HTTPMaxSessions: 2})
	srv := httptest.NewServer(e.g.HTTPHandler())
	t.Cleanup(srv.Close)
	for i := range 5 {
		if err := openIdle(http.DefaultClient, srv.URL+"/mcp"); err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
	}
	waitFor(t, "the evicted sessions' connections to close", func() bool { return e.g.Connections() == 2 })
}

// openIdle initializes an MCP session as a client does (initialize, then
// notifications/initialized) and leaves it idle.
func openIdle(hc *http.Client, url string) error {
	send := func(session, body string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		res, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res, nil
	}
	res, err := send("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"idle","version":"1"}}}`)
	if err != nil {
		return err
	}
	id := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || id == "" {
		return fmt.Errorf("initialize: %d, session %q", res.StatusCode, id)
	}
	if res, err = send(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return err
	}
	if res.StatusCode != http.StatusAccepted {
		return fmt.Errorf("initialized: %d", res.StatusCode)
	}
	return nil
}

// BenchmarkHTTPSessionFlood is issue 31's session flood: one session
// opened per iteration from a plain HTTP client (initialize and
// initialized), never used again, so every session stays idle. It reports the live heap once
// the flood is over (after a collection) and the heap per session still
// open, with the default cap and with none (the old behaviour):
//
//	go test ./gateway -run - -bench HTTPSessionFlood -benchtime 20000x
func BenchmarkHTTPSessionFlood(b *testing.B) {
	for _, tc := range []struct {
		name string
		max  int
	}{{"cap=1000", 0}, {"uncapped", -1}} {
		b.Run(tc.name, func(b *testing.B) {
			store, err := gitstoreMemory()
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			g := gateway.New(ledger.New(store, ledger.Options{}), gateway.Options{ThoughtLog: io.Discard, HTTPMaxSessions: tc.max})
			defer g.Close()
			srv := httptest.NewServer(g.HTTPHandler())
			defer srv.Close()
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				if err := openIdle(http.DefaultClient, srv.URL+"/mcp"); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			runtime.GC()
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			open := g.Connections()
			live := float64(after.HeapAlloc) - float64(before.HeapAlloc)
			b.ReportMetric(live/(1<<20), "live-MiB")
			b.ReportMetric(float64(open), "sessions")
			if open > 0 {
				b.ReportMetric(live/float64(open), "B/idle-session")
			}
		})
	}
}
