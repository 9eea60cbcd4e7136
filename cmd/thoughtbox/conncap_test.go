package main

import (
	"bufio"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestHTTPConnectionCap: with THOUGHTBOX_HTTP_MAX_CONNS=2, two clients that
// hold their connections open keep a third waiting (it is not served, and
// the server holds no descriptor for it); once one of them leaves, the third
// is served. The cap must also not drop the waiting client.
func TestHTTPConnectionCap(t *testing.T) {
	t.Parallel()
	bin := thoughtboxBinary(t)
	srv := startMSServer(t, bin, t.TempDir(), "cap", "THOUGHTBOX_HTTP_MAX_CONNS=2",
		"THOUGHTBOX_HTTP_IDLE_TIMEOUT=10m", "THOUGHTBOX_HTTP_READ_TIMEOUT=10m")
	u, err := url.Parse(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	// Two connections that start a request and never finish its headers:
	// each keeps its slot until it closes.
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("GET /mcp HTTP/1.1\r\nHost: " + u.Host + "\r\n")); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// The server accepts connections in order; give it a moment to have
	// taken both slots before the third arrives.
	time.Sleep(200 * time.Millisecond)

	third, err := net.Dial("tcp", u.Host) // the kernel's listen queue takes it
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if _, err := third.Write([]byte("GET /health HTTP/1.1\r\nHost: " + u.Host + "\r\nConnection: close\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	answered := make(chan string, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(third), nil)
		if err != nil {
			answered <- "error: " + err.Error()
			return
		}
		resp.Body.Close()
		answered <- resp.Status
	}()
	// Not answered while both slots are held. (A slow machine can only
	// make this pass for the wrong reason, never fail it.)
	select {
	case s := <-answered:
		t.Fatalf("a third connection was served (%s) while the cap of 2 was taken", s)
	case <-time.After(500 * time.Millisecond):
	}
	held[0].Close()
	select {
	case s := <-answered:
		if !strings.HasPrefix(s, "200") && !strings.HasPrefix(s, "404") {
			t.Fatalf("the waiting connection got %q once a slot was free", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting connection was never served after a slot was freed")
	}
	if !srv.alive() {
		t.Fatalf("server died:\n%s", srv.output())
	}
}
