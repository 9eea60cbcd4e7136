package stdio

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestStdioCRLF: clients on Windows end lines with "\r\n"; each line is
// still one message, and a blank CRLF line is skipped.
func TestStdioCRLF(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		``,
		`{"jsonrpc":"2.0","id":"a","method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
	}, "\r\n") + "\r\n"
	var out strings.Builder
	conn, err := Transport{In: strings.NewReader(in), Out: &out}.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var got []any
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		m, err := conn.Read(ctx)
		cancel()
		if err != nil {
			t.Fatalf("read after %v: %v", got, err)
		}
		r, ok := m.(*jsonrpc.Request)
		if !ok {
			t.Fatalf("got %#v", m)
		}
		got = append(got, r.ID.Raw())
	}
	if got[0] != int64(1) || got[1] != "a" || got[2] != int64(2) || strings.Contains(out.String(), "error") {
		t.Fatalf("ids %v", got)
	}
}
