package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// recordingStore is the real in-memory Git store, remembering the author
// of every commit.
type recordingStore struct {
	*gitstore.Store
	mu      sync.Mutex
	authors []ledger.Author
}

func (s *recordingStore) Append(ctx context.Context, req ledger.AppendRequest) (ledger.CommitID, error) {
	s.mu.Lock()
	s.authors = append(s.authors, req.Author)
	s.mu.Unlock()
	return s.Store.Append(ctx, req)
}

func (s *recordingStore) lastAuthor() ledger.Author {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.authors) == 0 {
		return ledger.Author{}
	}
	return s.authors[len(s.authors)-1]
}

// syncBuffer is a bytes.Buffer safe for the gateway's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

type eventSink struct {
	mu     sync.Mutex
	events []ledger.Event
}

func (s *eventSink) Publish(e ledger.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}

func (s *eventSink) ofType(t ledger.EventType) []ledger.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ledger.Event
	for _, e := range s.events {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}

// env is a gateway over a real in-memory ledger.
type env struct {
	g      *gateway.Gateway
	l      *ledger.Ledger
	store  *recordingStore
	log    *syncBuffer
	events *eventSink
}

func gitstoreMemory() (*gitstore.Store, error) { return gitstore.OpenMemory(gitstore.Options{}) }

func ledgerNew(s ledger.Store) *ledger.Ledger { return ledger.New(s, ledger.Options{}) }

func newStore(t *testing.T) *recordingStore {
	t.Helper()
	s, err := gitstoreMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &recordingStore{Store: s}
}

func newEnv(t *testing.T, opts gateway.Options) *env {
	t.Helper()
	e := &env{store: newStore(t), log: &syncBuffer{}, events: &eventSink{}}
	e.l = ledger.New(e.store, ledger.Options{})
	if opts.ThoughtLog == nil {
		opts.ThoughtLog = e.log
	}
	if opts.Events == nil {
		opts.Events = e.events
	}
	e.g = gateway.New(e.l, opts)
	return e
}

// client is one MCP client connection.
type client struct {
	t            *testing.T
	cs           *mcp.ClientSession
	toolsChanged chan struct{}
}

type clientOpts struct {
	name, version string
	roots         []*mcp.Root
	noRoots       bool
	// silentRoots: the client advertises roots but never answers
	// roots/list.
	silentRoots bool
}

func clientOptions(o clientOpts, changed chan struct{}) (*mcp.Implementation, *mcp.ClientOptions) {
	if o.name == "" {
		o.name, o.version = "test-client", "1.2.3"
	}
	opts := &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	}
	if o.noRoots {
		opts.Capabilities = &mcp.ClientCapabilities{}
	}
	return &mcp.Implementation{Name: o.name, Version: o.version}, opts
}

// connect opens an in-memory connection to a fresh server of e's gateway.
func (e *env) connect(t *testing.T, o clientOpts) *client {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := e.g.NewServer().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c := &client{t: t, toolsChanged: make(chan struct{}, 16)}
	impl, opts := clientOptions(o, c.toolsChanged)
	cl := mcp.NewClient(impl, opts)
	if o.noRoots {
		// A client without the roots capability answers roots/list with
		// "method not found"; the go-sdk client answers anyway.
		cl.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "roots/list" {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}
				}
				return next(ctx, method, req)
			}
		})
	}
	if o.silentRoots {
		cl.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "roots/list" {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return next(ctx, method, req)
			}
		})
	}
	if len(o.roots) > 0 {
		cl.AddRoots(o.roots...)
	}
	c.cs, err = cl.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cs.Close() })
	return c
}

// result is a decoded tool result.
type result struct {
	isError bool
	texts   []string
}

// json decodes the first text content.
func (r result) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.texts[0]), &m); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, r.texts[0])
	}
	return m
}

func (c *client) tool(name string, args any) result {
	c.t.Helper()
	res, err := c.cs.CallTool(c.t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		c.t.Fatalf("CallTool(%s): protocol error %v", name, err)
	}
	r := result{isError: res.IsError}
	for _, ct := range res.Content {
		tc, ok := ct.(*mcp.TextContent)
		if !ok {
			c.t.Fatalf("CallTool(%s): content %T, want text", name, ct)
		}
		r.texts = append(r.texts, tc.Text)
	}
	if len(r.texts) == 0 {
		c.t.Fatalf("CallTool(%s): no content", name)
	}
	return r
}

// gw calls thoughtbox_gateway.
func (c *client) gw(op string, args any) result {
	c.t.Helper()
	in := map[string]any{"operation": op}
	if args != nil {
		in["args"] = args
	}
	return c.tool("thoughtbox_gateway", in)
}

// ok calls an operation that must succeed and returns its JSON reply.
func (c *client) ok(op string, args any) map[string]any {
	c.t.Helper()
	r := c.gw(op, args)
	if r.isError {
		c.t.Fatalf("%s(%v) failed: %s", op, args, r.texts[0])
	}
	return r.json(c.t)
}

// fail calls an operation that must fail with code and returns the
// error body.
func (c *client) fail(op string, args any, code ledger.Code) map[string]any {
	c.t.Helper()
	r := c.gw(op, args)
	if !r.isError {
		c.t.Fatalf("%s(%v) succeeded, want %s: %s", op, args, code, r.texts[0])
	}
	body := r.json(c.t)
	if body["code"] != string(code) {
		c.t.Fatalf("%s(%v): code %v, want %s: %s", op, args, body["code"], code, r.texts[0])
	}
	return body
}

// ready brings the connection to stage 2 with a titled session.
func (c *client) ready(title string) string {
	c.t.Helper()
	s := c.ok("start_new", map[string]any{"sessionTitle": title})
	c.ok("cipher", nil)
	return s["sessionId"].(string)
}

func (c *client) think(text string, extra map[string]any) map[string]any {
	c.t.Helper()
	args := map[string]any{"thought": text, "nextThoughtNeeded": true}
	for k, v := range extra {
		args[k] = v
	}
	return c.ok("thought", args)
}

func (c *client) toolNames() []string {
	c.t.Helper()
	res, err := c.cs.ListTools(c.t.Context(), nil)
	if err != nil {
		c.t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func (c *client) tools() map[string]*mcp.Tool {
	c.t.Helper()
	res, err := c.cs.ListTools(c.t.Context(), nil)
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

// awaitToolsChanged waits for a tools/list_changed notification.
func (c *client) awaitToolsChanged() {
	c.t.Helper()
	select {
	case <-c.toolsChanged:
	case <-time.After(5 * time.Second):
		c.t.Fatal("no notifications/tools/list_changed within 5s")
	}
}

// noToolsChanged checks that no tools/list_changed arrives for a while.
func (c *client) noToolsChanged() {
	c.t.Helper()
	select {
	case <-c.toolsChanged:
		c.t.Fatal("unexpected notifications/tools/list_changed")
	case <-time.After(100 * time.Millisecond):
	}
}

func (c *client) read(uri string) (string, error) {
	c.t.Helper()
	res, err := c.cs.ReadResource(c.t.Context(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return "", err
	}
	if len(res.Contents) != 1 {
		c.t.Fatalf("ReadResource(%s): %d contents", uri, len(res.Contents))
	}
	return res.Contents[0].Text, nil
}

func (c *client) readJSON(uri string) map[string]any {
	c.t.Helper()
	s, err := c.read(uri)
	if err != nil {
		c.t.Fatalf("ReadResource(%s): %v", uri, err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		c.t.Fatalf("ReadResource(%s): not JSON: %v", uri, err)
	}
	return m
}

// num reads a JSON number as an int.
func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func toolCall(op string, args any) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "thoughtbox_gateway", Arguments: map[string]any{"operation": op, "args": args}}
}

func textOf(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	if tc == nil {
		return ""
	}
	return tc.Text
}

// ignoreCreate adapts a fixed set of projects to Options.OpenProject: the
// projects exist already, so create makes no difference.
func ignoreCreate(open func(context.Context, string) (*ledger.Ledger, error)) func(context.Context, string, bool) (*ledger.Ledger, func(), error) {
	return func(ctx context.Context, name string, _ bool) (*ledger.Ledger, func(), error) {
		l, err := open(ctx, name)
		return l, func() {}, err
	}
}
