package gateway

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestStdioFraming checks the stdio reader on what the SDK's accepts: one
// message per line, blank lines, a value split over lines, batches before
// 2025-06-18 (answered together) and none after, and errors that end the
// connection.
func TestStdioFraming(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		``,
		`  `,
		`{"jsonrpc":"2.0","id":"a",`,
		`  "method":"ping"}`,
		`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":4,"result":{"ok":true}}`,
		`{"jsonrpc":"1.0","id":5,"method":"ping"}`,
	}, "\n") + "\n"
	var out strings.Builder
	conn, err := stdioTransport{in: strings.NewReader(in), out: &out}.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	read := func() jsonrpc.Message {
		t.Helper()
		m, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		return m
	}
	if r, ok := read().(*jsonrpc.Request); !ok || r.Method != "initialize" || string(r.Params) != "{}" {
		t.Fatalf("first message: %#v", r)
	}
	// The initialize response tells the connection the protocol version;
	// 2025-03-26 still has batches.
	init := &jsonrpc.Response{ID: mustID(t, float64(1)), Result: []byte(`{"protocolVersion":"2025-03-26"}`)}
	if err := conn.Write(ctx, init); err != nil {
		t.Fatal(err)
	}
	if r, ok := read().(*jsonrpc.Request); !ok || r.Method != "ping" || r.ID.Raw() != "a" {
		t.Fatalf("split message: %#v", r)
	}
	var ids []any
	for range 3 {
		if r, ok := read().(*jsonrpc.Request); ok {
			ids = append(ids, r.ID.Raw())
		}
	}
	if len(ids) != 3 || ids[0] != int64(2) || ids[1] != nil || ids[2] != int64(3) {
		t.Fatalf("batch ids: %v", ids)
	}
	// Answers to a batch go out together, when the last one is in.
	conn.Write(ctx, &jsonrpc.Response{ID: mustID(t, float64(3)), Result: []byte(`{}`)})
	if strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("a batch answer was sent before the batch was complete: %q", out.String())
	}
	conn.Write(ctx, &jsonrpc.Response{ID: mustID(t, float64(2)), Result: []byte(`{}`)})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], `[{"jsonrpc":"2.0","id":2,`) || !strings.Contains(lines[1], `"id":3`) {
		t.Fatalf("batch answer: %q", out.String())
	}
	if r, ok := read().(*jsonrpc.Response); !ok || r.ID.Raw() != int64(4) || string(r.Result) != `{"ok":true}` {
		t.Fatalf("response: %#v", r)
	}
	if _, err := conn.Read(ctx); err == nil || !strings.Contains(err.Error(), "version tag") {
		t.Fatalf("bad version: got %v", err)
	}
	conn.Close()
	if _, err := conn.Read(ctx); err == nil {
		t.Fatal("read after close succeeded")
	}
}

func TestStdioRefusesBatchesAfter20250618(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n" + `[{"jsonrpc":"2.0","id":2,"method":"ping"}]` + "\n"
	pr, pw := io.Pipe()
	conn, _ := stdioTransport{in: pr, out: io.Discard}.Connect(t.Context())
	go pw.Write([]byte(in))
	ctx := context.Background()
	if _, err := conn.Read(ctx); err != nil {
		t.Fatal(err)
	}
	conn.Write(ctx, &jsonrpc.Response{ID: mustID(t, float64(1)), Result: []byte(`{"protocolVersion":"2025-11-25"}`)})
	if _, err := conn.Read(ctx); err == nil || !strings.Contains(err.Error(), "batching is not supported") {
		t.Fatalf("got %v", err)
	}
}

func TestStdioFrameLimits(t *testing.T) {
	deep := `{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1) + "}\n"
	conn, _ := stdioTransport{in: strings.NewReader(deep), out: io.Discard}.Connect(t.Context())
	if _, err := conn.Read(context.Background()); err == nil || !strings.Contains(err.Error(), "nesting depth") {
		t.Fatalf("too deep: got %v", err)
	}
	conn, _ = stdioTransport{in: strings.NewReader(`{"jsonrpc":"2.0","id":1,"Method":"ping"}` + "\n"), out: io.Discard}.Connect(t.Context())
	if m, err := conn.Read(context.Background()); err != nil {
		t.Fatal(err)
	} else if _, ok := m.(*jsonrpc.Response); !ok {
		t.Fatalf(`"Method" was taken for "method" (%#v): field names must match exactly, as in the SDK`, m)
	}
}

func mustID(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
