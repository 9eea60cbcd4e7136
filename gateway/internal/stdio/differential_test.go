package stdio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lockedBuffer is a writer both transports may write from any goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Close() error { return nil }

func (b *lockedBuffer) lines(t *testing.T) []any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []any
	for line := range strings.SplitSeq(strings.TrimSpace(b.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("written line %q is not JSON: %v", line, err)
		}
		out = append(out, v)
	}
	return out
}

// transcript is what a transport made of a stream: each message read (as
// the SDK encodes it), the error that ended the reading, and what it wrote
// back once every request read was answered.
type transcript struct {
	messages []string
	end      string
	written  []any
}

// drive reads conn to its end, answering each request as it comes with
// {"echo": <method>}, so that a transport that waits for answers at the
// end of input (ours) ends too.
func drive(t *testing.T, conn mcp.Connection, out *lockedBuffer) transcript {
	t.Helper()
	var tr transcript
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		m, err := conn.Read(ctx)
		cancel()
		if err != nil {
			switch {
			case errors.Is(err, io.EOF):
				tr.end = "EOF"
			case errors.Is(err, context.DeadlineExceeded):
				t.Fatal("read did not end")
			default:
				tr.end = "error"
			}
			break
		}
		b, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			t.Fatalf("encoding %v: %v", m, err)
		}
		tr.messages = append(tr.messages, string(b))
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			result, _ := json.Marshal(map[string]string{"echo": req.Method})
			if err := conn.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Result: result}); err != nil {
				t.Fatalf("answering %v: %v", req.ID, err)
			}
		}
	}
	conn.Close()
	tr.written = out.lines(t)
	return tr
}

// TestDifferentialAgainstTheSDK feeds the same bytes to this transport and
// to the SDK's mcp.IOTransport and requires the same messages, in the same
// order, the same end of input, and the same answers written back.
//
// Three differences are known, and each is checked to be exactly what it
// says:
//   - notJSON: a frame that is not JSON ends the SDK's connection with an
//     error; ours answers it with a JSON-RPC parse error (-32700) and reads
//     on. The messages before it must agree.
//   - multiLine: the SDK reads a message spread over several lines (it
//     decodes a JSON stream); ours reads lines, as MCP's stdio transport
//     specifies ("messages are delimited by newlines, and MUST NOT contain
//     embedded newlines"), so each piece gets a parse error and the next
//     line is read normally.
//   - batchNotification: in a batch that holds a notification, the SDK
//     waits for an answer to the notification too (it files it under the
//     empty id), so it never writes the batch's answers; ours writes them.
func TestDifferentialAgainstTheSDK(t *testing.T) {
	const (
		same              = ""
		notJSON           = "notJSON"
		multiLine         = "multiLine"
		batchNotification = "batchNotification"
	)
	msg := func(id int, method string) string {
		return `{"jsonrpc":"2.0","id":` + string(rune('0'+id)) + `,"method":"` + method + `","params":{"n":` + string(rune('0'+id)) + `}}`
	}
	large := `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"text":"` + strings.Repeat("x", 2<<20) + `"}}`
	cases := []struct {
		name   string
		stream string
		// differs names the known difference the case shows (see above)
		differs string
	}{
		{"one per line", msg(1, "ping") + "\n" + msg(2, "tools/list") + "\n", same},
		{"no final newline", msg(1, "ping") + "\n" + msg(2, "ping"), same},
		{"blank lines", "\n\n" + msg(1, "ping") + "\n\n\n" + msg(2, "ping") + "\n\n", same},
		{"CRLF", msg(1, "ping") + "\r\n" + msg(2, "ping") + "\r\n", same},
		{"blank CRLF lines", "\r\n" + msg(1, "ping") + "\r\n\r\n" + msg(2, "ping") + "\r\n", same},
		{"notification and response", `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
			`{"jsonrpc":"2.0","id":"c1","result":{"roots":[]}}` + "\n" +
			`{"jsonrpc":"2.0","id":"c2","error":{"code":-32601,"message":"no"}}` + "\n", same},
		{"string and integer ids", `{"jsonrpc":"2.0","id":"abc","method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":9007199254740991,"method":"ping"}` + "\n", same},
		{"message over several lines", "{\"jsonrpc\": \"2.0\",\n  \"id\": 7,\n  \"method\": \"ping\"\n}\n" + msg(8, "ping") + "\n", multiLine},
		{"large message", large + "\n" + msg(1, "ping") + "\n", same},
		{"batch before initialize", `[` + msg(1, "ping") + `,` + msg(2, "tools/list") + `]` + "\n" + msg(3, "ping") + "\n", same},
		{"batch with a notification", `[` + msg(1, "ping") + `,{"jsonrpc":"2.0","method":"notifications/x"},` + msg(2, "tools/list") + `]` + "\n" + msg(3, "ping") + "\n", batchNotification},
		{"unicode and escapes", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"t":"é \u00e9 \n \"q\" 🎉"}}` + "\n", same},
		{"empty input", "", same},
		{"only blank lines", "\n\r\n\n", same},
		{"invalid JSON", msg(1, "ping") + "\n" + `{"jsonrpc":"2.0","id":2,"method":` + "\n" + msg(3, "ping") + "\n", notJSON},
		{"not an object", msg(1, "ping") + "\n" + `hello` + "\n", notJSON},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ourOut, sdkOut lockedBuffer
			ours, err := Transport{In: strings.NewReader(tc.stream), Out: &ourOut}.Connect(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			sdk, err := (&mcp.IOTransport{Reader: io.NopCloser(strings.NewReader(tc.stream)), Writer: &sdkOut}).Connect(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			got, want := drive(t, ours, &ourOut), drive(t, sdk, &sdkOut)
			switch tc.differs {
			case same:
				if diff := cmp.Diff(want.messages, got.messages); diff != "" {
					t.Errorf("messages (-sdk +ours):\n%s", diff)
				}
				if got.end != want.end {
					t.Errorf("input ended with %s here, %s in the SDK", got.end, want.end)
				}
				if diff := cmp.Diff(want.written, got.written); diff != "" {
					t.Errorf("answers written (-sdk +ours):\n%s", diff)
				}
			case notJSON:
				checkNotJSON(t, got, want)
			case multiLine:
				if want.end != "EOF" || len(want.messages) != 2 || len(got.messages) != 1 || got.messages[0] != want.messages[1] {
					t.Errorf("SDK read %q, ours %q: want both messages in the SDK, the second alone here", want.messages, got.messages)
				}
				if n := countParseErrors(got.written); n == 0 {
					t.Errorf("ours wrote no parse error for the split message: %v", got.written)
				}
			case batchNotification:
				if diff := cmp.Diff(want.messages, got.messages); diff != "" {
					t.Errorf("messages (-sdk +ours):\n%s", diff)
				}
				if len(want.written) != 1 || len(got.written) != 2 {
					t.Fatalf("written: sdk %v, ours %v; want the batch's answers from ours only", want.written, got.written)
				}
				if batch, ok := got.written[0].([]any); !ok || len(batch) != 2 {
					t.Errorf("ours answered the batch with %v, want an array of two answers", got.written[0])
				}
				if diff := cmp.Diff(want.written[0], got.written[1]); diff != "" {
					t.Errorf("answer after the batch (-sdk +ours):\n%s", diff)
				}
			}
		})
	}
}

// countParseErrors counts the JSON-RPC parse errors among written lines.
func countParseErrors(written []any) int {
	n := 0
	for _, w := range written {
		if m, ok := w.(map[string]any); ok {
			if e, ok := m["error"].(map[string]any); ok && e["code"] == float64(jsonrpc.CodeParseError) {
				n++
			}
		}
	}
	return n
}

// checkNotJSON checks the known difference on a frame that is not JSON.
func checkNotJSON(t *testing.T, got, want transcript) {
	t.Helper()
	if want.end != "error" {
		t.Fatalf("the SDK ended with %s, not an error: the case is not what it says", want.end)
	}
	if len(got.messages) < len(want.messages) || cmp.Diff(want.messages, got.messages[:len(want.messages)]) != "" {
		t.Errorf("messages before the bad frame differ: sdk %q, ours %q", want.messages, got.messages)
	}
	if parseErrors := countParseErrors(got.written); parseErrors != 1 || got.end != "EOF" {
		t.Errorf("ours wrote %d parse errors and ended with %s; want one, then the rest read to EOF (written %v)", parseErrors, got.end, got.written)
	}
}
