package direct

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway/internal/wire"
)

// What both of the gateway's transports share to answer the calls they
// take directly (Transport.Direct here, httptransport.Direct over HTTP),
// so that the two cannot drift apart.

// Func answers a request taken by Transport.Direct. ctx ends when
// the client cancels the request or the connection closes. The result is
// encoded as the SDK encodes a handler's result, an error as the SDK
// encodes a handler's error.
type Func func(ctx context.Context) (result any, err error)

// MethodCancelled is the notification by which a client gives up a call.
const MethodCancelled = "notifications/cancelled"

// Running is the direct calls under way on one connection, by id, so that
// notifications/cancelled reaches them. The zero value is ready to use.
type Running struct {
	mu    sync.Mutex
	calls map[jsonrpc.ID]context.CancelFunc
}

// Go runs fn, the call with the given id, on a goroutine of its own (as
// the SDK runs calls), with a context that parent's end or Cancel ends,
// and hands its answer (see Respond) to answer.
func (r *Running) Go(parent context.Context, id jsonrpc.ID, fn Func, answer func(*jsonrpc.Response)) {
	ctx, cancel := r.start(parent, id)
	go func() {
		resp := Respond(ctx, id, fn)
		r.finish(id, cancel)
		answer(resp)
	}()
}

// Run is Go on the caller's goroutine: it returns fn's answer once fn is
// done. The HTTP transport answers a POST's lone call this way, on the
// request's own goroutine, sparing a goroutine and a wake-up per call.
func (r *Running) Run(parent context.Context, id jsonrpc.ID, fn Func) *jsonrpc.Response {
	ctx, cancel := r.start(parent, id)
	resp := Respond(ctx, id, fn)
	r.finish(id, cancel)
	return resp
}

func (r *Running) start(parent context.Context, id jsonrpc.ID) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	r.mu.Lock()
	if r.calls == nil {
		r.calls = map[jsonrpc.ID]context.CancelFunc{}
	}
	r.calls[id] = cancel
	r.mu.Unlock()
	return ctx, cancel
}

func (r *Running) finish(id jsonrpc.ID, cancel context.CancelFunc) {
	r.mu.Lock()
	delete(r.calls, id)
	r.mu.Unlock()
	cancel()
}

// Cancel cancels the call a notifications/cancelled's params name, if it
// is under way.
func (r *Running) Cancel(params []byte) {
	id, ok := CancelledID(params)
	if !ok {
		return
	}
	r.mu.Lock()
	cancel := r.calls[id]
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// CancelledID is the id of the request a notifications/cancelled names,
// if its params name one that can be echoed exactly.
func CancelledID(params []byte) (jsonrpc.ID, bool) {
	var p struct {
		RequestID stdjson.RawMessage `json:"requestId"`
	}
	if wire.ParseStrict(params, &p) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := wire.DecodeID(p.RequestID)
	if err != nil || !id.IsValid() {
		return jsonrpc.ID{}, false
	}
	return id, true
}

// Respond runs fn, a call taken directly, and returns its answer to the
// request id as the SDK would have written it: a result encoded as the
// SDK encodes a handler's result, an error as it encodes a handler's
// error. Both transports answer their direct calls with it, so that the
// bytes cannot drift apart between them.
func Respond(ctx context.Context, id jsonrpc.ID, fn Func) *jsonrpc.Response {
	res, err := fn(ctx)
	resp := &jsonrpc.Response{ID: id}
	if err == nil {
		resp.Result, err = encodeResult(res)
	}
	if err != nil {
		resp.Result, resp.Error = nil, err
	}
	return resp
}

// encodeResult encodes a result as the SDK's JSON-RPC layer does: with
// encoding/json, HTML characters unescaped, no trailing newline.
func encodeResult(v any) (stdjson.RawMessage, error) {
	if r, ok := v.(*mcp.CallToolResult); ok {
		if b, ok := encodeTextResult(r); ok {
			return b, nil
		}
	}
	return encodeAny(v)
}

// encodeTextResult writes the result nearly every call returns, one text
// and nothing else, as the SDK's encoding of it comes out: the SDK
// reflects over three types and compacts what their MarshalJSON methods
// return twice over, 3–4 % of the server's CPU per thought on memory
// storage in profiles (TestTextResultAsTheSDK compares the two). The text is quoted by
// json.Marshal, as TextContent.MarshalJSON quotes it (HTML characters
// escaped). A result's resultType, which this cannot see, is set only by
// the SDK's server for calls it answers itself, never on a direct call's.
func encodeTextResult(r *mcp.CallToolResult) ([]byte, bool) {
	if r == nil || r.Meta != nil || r.StructuredContent != nil || r.IsError ||
		r.InputRequests != nil || r.RequestState != "" || len(r.Content) != 1 {
		return nil, false
	}
	t, ok := r.Content[0].(*mcp.TextContent)
	if !ok || t == nil || t.Meta != nil || t.Annotations != nil {
		return nil, false
	}
	q, err := stdjson.Marshal(t.Text)
	if err != nil {
		return nil, false
	}
	const head, tail = `{"content":[{"type":"text","text":`, `}]}`
	b := make([]byte, 0, len(head)+len(q)+len(tail))
	b = append(b, head...)
	b = append(b, q...)
	return append(b, tail...), true
}

// encodeAny is encodeResult for any value, through encoding/json.
func encodeAny(v any) (stdjson.RawMessage, error) {
	var buf bytes.Buffer
	enc := stdjson.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
