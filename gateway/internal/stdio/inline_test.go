//go:build unix

package stdio

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"golang.org/x/sys/unix"

	"github.com/thoughtbox/thoughtbox/gateway/internal/direct"
)

// stdioPipes connects a transport to blocking pipes, as a client that
// starts the server does, and reads what reaches the server as the SDK
// would, passing each message to server (nil: dropped); it returns the
// client's ends.
func stdioPipes(t *testing.T, direct func(*jsonrpc.Request) direct.Func, server func(jsonrpc.Message)) (conn *stdioConn, send func(string), replies *bufio.Reader) {
	t.Helper()
	var in, out [2]int
	if err := unix.Pipe(in[:]); err != nil {
		t.Fatal(err)
	}
	if err := unix.Pipe(out[:]); err != nil {
		t.Fatal(err)
	}
	inR, inW := os.NewFile(uintptr(in[0]), "in"), os.NewFile(uintptr(in[1]), "in-w")
	outR, outW := os.NewFile(uintptr(out[0]), "out"), os.NewFile(uintptr(out[1]), "out-w")
	c, err := Transport{In: inR, Out: outW, Direct: direct}.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
	})
	go func() {
		for {
			m, err := c.Read(context.Background())
			if err != nil {
				return
			}
			if server != nil {
				server(m)
			}
		}
	}()
	send = func(line string) {
		t.Helper()
		if _, err := inW.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	return c.(*stdioConn), send, bufio.NewReader(outR)
}

func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(line, "\n")
}

// withGrace sets inlineGrace for one test.
func withGrace(t *testing.T, d time.Duration) {
	old := inlineGrace
	inlineGrace = d
	t.Cleanup(func() { inlineGrace = old })
}

// TestInlineCallAsksTheClient: a direct call answered by the reader that
// sends the client a request (as critique's sampling does) and waits for
// its answer gets it, though only a reader can take that answer. With the
// grace period an hour, nothing but the request itself can free the
// reader: without freeReader this test hangs.
func TestInlineCallAsksTheClient(t *testing.T) {
	withGrace(t, time.Hour)
	var conn *stdioConn
	asked := make(chan *jsonrpc.Response, 1)
	conn, send, replies := stdioPipes(t, func(req *jsonrpc.Request) direct.Func {
		if req.Method != "ask" {
			return nil
		}
		return func(ctx context.Context) (any, error) {
			id, _ := jsonrpc.MakeID("s1")
			if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: "sampling/createMessage", Params: json.RawMessage(`{}`)}); err != nil {
				return nil, err
			}
			select {
			case resp := <-asked:
				return map[string]string{"model said": string(resp.Result)}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}, func(m jsonrpc.Message) {
		// As the SDK, pass the answer on to the call that waits for it.
		if resp, ok := m.(*jsonrpc.Response); ok {
			asked <- resp
		}
	})
	for round := 1; round <= 3; round++ {
		send(`{"jsonrpc":"2.0","id":7,"method":"ask"}`)
		if got := readLine(t, replies); got != `{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}` {
			t.Fatalf("round %d: the server sent %s, want its sampling request", round, got)
		}
		send(`{"jsonrpc":"2.0","id":"s1","result":"hi"}`)
		if got, want := readLine(t, replies), `{"jsonrpc":"2.0","id":7,"result":{"model said":"\"hi\""}}`; got != want {
			t.Fatalf("round %d: answer %s, want %s", round, got, want)
		}
	}
}

// TestInlineCallCancelled: a call the reader answers that runs past the
// grace period hands reading to another goroutine, so a cancellation
// sent after it started reaches it; and the next call is answered as
// usual by the goroutine reading then.
func TestInlineCallCancelled(t *testing.T) {
	withGrace(t, time.Millisecond)
	started := make(chan struct{}, 1)
	_, send, replies := stdioPipes(t, func(req *jsonrpc.Request) direct.Func {
		switch req.Method {
		case "wait":
			return func(ctx context.Context) (any, error) {
				started <- struct{}{}
				<-ctx.Done()
				return nil, &jsonrpc.Error{Code: -32800, Message: "cancelled"}
			}
		case "fast":
			return func(context.Context) (any, error) { return "done", nil }
		}
		return nil
	}, nil)
	send(`{"jsonrpc":"2.0","id":1,"method":"wait"}`)
	<-started
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	if got, want := readLine(t, replies), `{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"cancelled"}}`; got != want {
		t.Fatalf("answer %s, want %s", got, want)
	}
	for id := 2; id <= 4; id++ {
		send(`{"jsonrpc":"2.0","id":` + string(rune('0'+id)) + `,"method":"fast"}`)
		if got, want := readLine(t, replies), `{"jsonrpc":"2.0","id":`+string(rune('0'+id))+`,"result":"done"}`; got != want {
			t.Fatalf("answer %s, want %s", got, want)
		}
	}
}

// TestCallsSentTogetherRunSideBySide: a call read while the next is
// already buffered runs on a worker, so the second is answered while the
// first still waits (for the second: it would never end otherwise).
func TestCallsSentTogetherRunSideBySide(t *testing.T) {
	withGrace(t, time.Hour)
	release := make(chan struct{})
	_, send, replies := stdioPipes(t, func(req *jsonrpc.Request) direct.Func {
		switch req.Method {
		case "first":
			return func(context.Context) (any, error) { <-release; return 1, nil }
		case "second":
			return func(context.Context) (any, error) { close(release); return 2, nil }
		}
		return nil
	}, nil)
	send(`{"jsonrpc":"2.0","id":1,"method":"first"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"second"}`)
	got := []string{readLine(t, replies), readLine(t, replies)}
	want := map[string]bool{`{"jsonrpc":"2.0","id":1,"result":1}`: true, `{"jsonrpc":"2.0","id":2,"result":2}`: true}
	for _, g := range got {
		if !want[g] {
			t.Fatalf("answers %q", got)
		}
		delete(want, g)
	}
}

// TestIDReusedOnceAnswered: a client may send an id again as soon as it
// has read the answer to the call that used it. The answer is written by
// another goroutine than the one reading the next call (here the
// server's, as for every call the SDK answers), and the id used to be
// released only after the write, so the next call could find it still in
// use and be refused.
func TestIDReusedOnceAnswered(t *testing.T) {
	var conn *stdioConn
	ready := make(chan struct{})
	conn, send, replies := stdioPipes(t, nil, func(m jsonrpc.Message) {
		<-ready
		if req, ok := m.(*jsonrpc.Request); ok && req.ID.IsValid() {
			if err := conn.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`"pong"`)}); err != nil {
				t.Error(err)
			}
		}
	})
	close(ready)
	for round := 1; round <= 2000; round++ {
		send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		if got, want := readLine(t, replies), `{"jsonrpc":"2.0","id":1,"result":"pong"}`; got != want {
			t.Fatalf("round %d: answer %s, want %s", round, got, want)
		}
	}
}
