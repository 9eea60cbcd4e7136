package stdio

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/thoughtbox/thoughtbox/gateway/internal/direct"
)

// TestDirect checks calls taken by Transport.Direct: the server never
// reads them, their answers are written as the SDK writes a handler's,
// notifications/cancelled reaches them, and the end of the input waits
// for them to be answered.
func TestDirect(t *testing.T) {
	in, w := io.Pipe()
	var out syncWriter
	tr := Transport{In: in, Out: &out, Direct: func(req *jsonrpc.Request) direct.Func {
		switch req.Method {
		case "fast":
			return func(context.Context) (any, error) {
				return map[string]string{"html": "<&>"}, nil
			}
		case "slow":
			return func(ctx context.Context) (any, error) {
				<-ctx.Done()
				return nil, &jsonrpc.Error{Code: -32800, Message: "cancelled"}
			}
		case "late":
			return func(context.Context) (any, error) {
				time.Sleep(50 * time.Millisecond)
				return nil, errors.New("boom")
			}
		}
		return nil
	}}
	conn, err := tr.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"method":"fast"}`+"\n")
		io.WriteString(w, `{"jsonrpc":"2.0","id":2,"method":"slow"}`+"\n")
		io.WriteString(w, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`+"\n")
		io.WriteString(w, `{"jsonrpc":"2.0","id":3,"method":"ping"}`+"\n")
		io.WriteString(w, `{"jsonrpc":"2.0","id":4,"method":"late"}`+"\n")
		w.Close()
	}()
	ctx := context.Background()
	m, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := m.(*jsonrpc.Request); !ok || n.Method != "notifications/cancelled" {
		t.Fatalf("first message read = %#v, want the cancellation (passed on)", m)
	}
	m, err = conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ping, ok := m.(*jsonrpc.Request)
	if !ok || ping.Method != "ping" {
		t.Fatalf("second message read = %#v, want ping", m)
	}
	if err := conn.Write(ctx, &jsonrpc.Response{ID: ping.ID, Result: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Read(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("read at the end = %v, want EOF", err)
	}
	// EOF came only once every call was answered, the late one included.
	got := out.String()
	for _, want := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"html":"<&>"}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32800,"message":"cancelled"}}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`{"jsonrpc":"2.0","id":4,"error":{"code":0,"message":"boom"}}`, // as the SDK writes a plain error,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("output lacks %s:\n%s", want, got)
		}
	}
}

// syncWriter is a strings.Builder safe for the transport's writers.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
