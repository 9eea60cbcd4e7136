package stdio

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/thoughtbox/thoughtbox/gateway/internal/wire"
)

// TestStdioFraming checks the stdio reader on what the SDK's accepts: one
// message per line (CRLF too), blank lines, batches before 2025-06-18
// (answered together) and none after.
func TestStdioFraming(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		``,
		`  `,
		`{"jsonrpc":"2.0","id":"a","method":"ping"}` + "\r",
		`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":4,"result":{"ok":true}}`,
		`{"jsonrpc":"1.0","id":5,"method":"ping"}`,
	}, "\n") + "\n"
	var out strings.Builder
	conn, err := Transport{In: strings.NewReader(in), Out: &out}.Connect(t.Context())
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
		t.Fatalf("CRLF-terminated message: %#v", r)
	}
	conn.Write(ctx, &jsonrpc.Response{ID: mustID(t, "a"), Result: []byte(`{}`)})
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
	if strings.Count(out.String(), "\n") != 2 {
		t.Fatalf("a batch answer was sent before the batch was complete: %q", out.String())
	}
	conn.Write(ctx, &jsonrpc.Response{ID: mustID(t, float64(2)), Result: []byte(`{}`)})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[2], `[{"jsonrpc":"2.0","id":2,`) || !strings.Contains(lines[2], `"id":3`) {
		t.Fatalf("batch answer: %q", out.String())
	}
	if r, ok := read().(*jsonrpc.Response); !ok || r.ID.Raw() != int64(4) || string(r.Result) != `{"ok":true}` {
		t.Fatalf("response: %#v", r)
	}
	// A bad version tag is answered, not fatal; the input then ends.
	if _, err := conn.Read(ctx); err != io.EOF {
		t.Fatalf("read at the end: got %v, want EOF", err)
	}
	if !strings.Contains(out.String(), `{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"invalid request: field jsonrpc must be \"2.0\", got \"1.0\""}}`) {
		t.Fatalf("bad version not answered: %q", out.String())
	}
	conn.Close()
	if _, err := conn.Read(ctx); err == nil {
		t.Fatal("read after close succeeded")
	}
}

func TestStdioRefusesBatchesAfter20250618(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n" + `[{"jsonrpc":"2.0","id":2,"method":"ping"}]` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n"
	pr, pw := io.Pipe()
	var out syncBuilder
	conn, _ := Transport{In: pr, Out: &out}.Connect(t.Context())
	go pw.Write([]byte(in))
	ctx := context.Background()
	if _, err := conn.Read(ctx); err != nil {
		t.Fatal(err)
	}
	conn.Write(ctx, &jsonrpc.Response{ID: mustID(t, float64(1)), Result: []byte(`{"protocolVersion":"2025-11-25"}`)})
	// The batch is answered with -32600 and the next line is read.
	m, err := conn.Read(ctx)
	if r, ok := m.(*jsonrpc.Request); err != nil || !ok || r.ID.Raw() != int64(3) {
		t.Fatalf("after a refused batch: %#v, %v", m, err)
	}
	if got := out.String(); !strings.Contains(got, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: JSON-RPC batches are not part of MCP 2025-06-18`) {
		t.Fatalf("batch answer: %q", got)
	}
}

// syncBuilder is a strings.Builder safe for a writer and a reader.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestStdioMalformedLines feeds the reader every kind of line that used to
// end the server and checks each is answered with its JSON-RPC error, by
// line, while the good messages between them still arrive.
func TestStdioMalformedLines(t *testing.T) {
	deep := `{"jsonrpc":"2.0","id":7,"method":"x","params":` + strings.Repeat("[", wire.MaxDepth+1) + strings.Repeat("]", wire.MaxDepth+1) + "}"
	huge := `{"jsonrpc":"2.0","id":8,"method":"x","params":"` + strings.Repeat("a", maxFrame) + `"}`
	lines := []struct{ in, answer string }{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, ""},
		{`not json`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700`},
		{`{}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600`},
		{`{"jsonrpc":"2.0","id":2,"method":"ping"`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700`},
		{`[]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: empty batch"}}`},
		{`[1,{"jsonrpc":"2.0","id":3,"method":"ping"}]`, ""}, // answered with 3's reply below
		{deep, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the message nests deeper than 1000 levels"}}`},
		{huge, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: message longer than 16777216 bytes skipped"}}`},
		{`{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: field id: 18446744073709551615 cannot be echoed exactly`},
		{`{"jsonrpc":"2.0","id":1e30,"method":"ping"}`, `"message":"invalid request: field id: 1e30 cannot be echoed exactly`},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, ""}, // id 1 was answered: it may be used again
		{`{"jsonrpc":"2.0","id":9007199254740991,"method":"ping"}`, ""},
		{`"just a string"`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600`},
	}
	var in strings.Builder
	for _, l := range lines {
		in.WriteString(l.in + "\n")
	}
	var out syncBuilder
	conn, _ := Transport{In: strings.NewReader(in.String()), Out: &out}.Connect(t.Context())
	ctx := context.Background()
	var got []any
	done := make(chan error, 1)
	go func() {
		for {
			m, err := conn.Read(ctx)
			if err != nil {
				done <- err
				return
			}
			r := m.(*jsonrpc.Request)
			got = append(got, r.ID.Raw())
			conn.Write(ctx, &jsonrpc.Response{ID: r.ID, Result: []byte(`{}`)})
		}
	}()
	if err := <-done; err != io.EOF {
		t.Fatalf("read ended with %v, want EOF", err)
	}
	if want := []any{int64(1), int64(3), int64(1), int64(9007199254740991)}; !slices.Equal(got, want) {
		t.Errorf("requests read: %v, want %v", got, want)
	}
	answers := out.String()
	for _, l := range lines {
		if l.answer != "" && !strings.Contains(answers, l.answer) {
			t.Errorf("line %.60q: no answer containing %s in\n%s", l.in, l.answer, answers)
		}
	}
	if !strings.Contains(answers, `[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,`) || !strings.Contains(answers, `{"jsonrpc":"2.0","id":3,"result":{}}]`) {
		t.Errorf("mixed batch: want an error for element 0 and the reply to id 3 together:\n%s", answers)
	}
	if !strings.Contains(answers, `"id":9007199254740991,"result"`) {
		t.Errorf("the largest exact id was not echoed as sent:\n%s", answers)
	}
}

// TestStdioOtherSpaceIsNotBlank: a line of white space JSON does not
// allow (a form feed, a no-break space), or a message wrapped in it, is
// not JSON: each is answered with a parse error, where the reader used to
// skip it without a word (found by FuzzStdioFrame).
func TestStdioOtherSpaceIsNotBlank(t *testing.T) {
	lines := []string{"\f", "\v", "\u00a0", "\u0085", "\f" + `{"jsonrpc":"2.0","id":5,"method":"ping"}`, `{"jsonrpc":"2.0","id":6,"method":"ping"}` + "\f",
		" \t\r", `{"jsonrpc":"2.0","id":1,"method":"ping"}`}
	var out syncBuilder
	conn, _ := Transport{In: strings.NewReader(strings.Join(lines, "\n") + "\n"), Out: &out}.Connect(t.Context())
	var got []any
	for {
		m, err := conn.Read(t.Context())
		if err != nil {
			break
		}
		r := m.(*jsonrpc.Request)
		got = append(got, r.ID.Raw())
		conn.Write(t.Context(), &jsonrpc.Response{ID: r.ID, Result: []byte(`{}`)})
	}
	if want := []any{int64(1)}; !slices.Equal(got, want) {
		t.Errorf("requests read: %v, want %v", got, want)
	}
	if n := strings.Count(out.String(), `"error":{"code":-32700`); n != 6 {
		t.Errorf("%d parse errors, want 6 (one for each line but the blank one and the ping):\n%s", n, out.String())
	}
}

// TestStdioAnswersBeforeEOF checks that requests piped in before the end of
// the input are all answered: EOF waits for the calls already read.
func TestStdioAnswersBeforeEOF(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n"
	var out syncBuilder
	conn, _ := Transport{In: strings.NewReader(in), Out: &out}.Connect(t.Context())
	ctx := context.Background()
	var reqs []*jsonrpc.Request
	for range 2 {
		m, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, m.(*jsonrpc.Request))
	}
	eof := make(chan error, 1)
	go func() {
		_, err := conn.Read(ctx)
		eof <- err
	}()
	conn.Write(ctx, &jsonrpc.Response{ID: reqs[0].ID, Result: []byte(`{}`)})
	select {
	case err := <-eof:
		t.Fatalf("Read returned %v with request 2 still unanswered", err)
	default:
	}
	// A request to the client fails at once: it can no longer answer.
	call, _ := jsonrpc.MakeID("srv-1")
	if err := conn.Write(ctx, &jsonrpc.Request{ID: call, Method: "roots/list"}); !errors.Is(err, errInputClosed) {
		// The reader may not have seen EOF yet; only after it must this fail.
		t.Logf("request to the client before EOF was seen: %v", err)
	}
	conn.Write(ctx, &jsonrpc.Response{ID: reqs[1].ID, Result: []byte(`{}`)})
	if err := <-eof; err != io.EOF {
		t.Fatalf("Read after every answer: %v, want EOF", err)
	}
	if err := conn.Write(ctx, &jsonrpc.Request{ID: call, Method: "roots/list"}); !errors.Is(err, errInputClosed) {
		t.Errorf("request to the client after EOF: %v, want errInputClosed", err)
	}
	if n := strings.Count(out.String(), `"result":{}`); n != 2 {
		t.Errorf("%d answers, want 2:\n%s", n, out.String())
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
