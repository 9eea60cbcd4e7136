package gateway

import (
	"context"
	stdjson "encoding/json"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway/internal/direct"
	"github.com/thoughtbox/thoughtbox/gateway/internal/stdio"
	"github.com/thoughtbox/thoughtbox/gateway/internal/wire"
)

// runStdio serves c over t until the session ends or ctx is done, as
// mcp.Server.Run does. With takeDirect set, calls of the gateway tool are
// taken from the transport before the SDK sees them (see direct).
func (c *conn) runStdio(ctx context.Context, t stdio.Transport, takeDirect bool) error {
	var session atomic.Pointer[mcp.ServerSession]
	// running counts the direct calls under way: like the SDK, which waits
	// for its handlers when a session ends, this returns only once they
	// are done, so that none writes to the ledger after its caller has
	// moved on (closed the store).
	var running sync.WaitGroup
	defer running.Wait()
	if takeDirect {
		t.Direct = func(req *jsonrpc.Request) direct.Func {
			fn := c.direct(session.Load(), req)
			if fn == nil {
				return nil
			}
			running.Add(1)
			return func(ctx context.Context) (any, error) {
				defer running.Done()
				return fn(ctx)
			}
		}
	}
	ss, err := c.server.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	// Calls read before this point go through the SDK, as do all calls
	// before the session is initialized.
	session.Store(ss)
	closed := make(chan error, 1)
	go func() { closed <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-closed
		return ctx.Err()
	case err := <-closed:
		return err
	}
}

// direct returns the function that answers req, a call of the gateway
// tool, without the SDK — or nil, leaving req to the SDK, for anything it
// would treat otherwise than as a plain call of this tool: another method
// or tool, a session not initialized, params that do not decode, the
// per-request protocol (a protocol version in _meta), inputResponses or
// requestState. What it does for the rest is what the SDK's tools/call
// path does for this tool: decode the params (with the same decoder and
// rules, once), call handleGateway, and answer an empty content as [].
func (c *conn) direct(ss *mcp.ServerSession, req *jsonrpc.Request) direct.Func {
	if ss == nil || req.Method != "tools/call" || len(req.Params) == 0 {
		return nil
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.ProtocolVersion >= wire.Stateless {
		return nil
	}
	var p struct {
		Meta           mcp.Meta           `json:"_meta"`
		Name           string             `json:"name"`
		Arguments      stdjson.RawMessage `json:"arguments"`
		InputResponses stdjson.RawMessage `json:"inputResponses"`
		RequestState   stdjson.RawMessage `json:"requestState"`
	}
	if wire.ParseStrict(req.Params, &p) != nil {
		return nil
	}
	if p.Name != gatewayToolName || p.InputResponses != nil || p.RequestState != nil {
		return nil
	}
	if _, ok := p.Meta[mcp.MetaKeyProtocolVersion]; ok {
		// The per-request protocol (SEP-2575): the SDK decides.
		return nil
	}
	call := &mcp.CallToolRequest{Session: ss, Params: &mcp.CallToolParamsRaw{Meta: p.Meta, Name: p.Name, Arguments: p.Arguments}}
	return func(ctx context.Context) (any, error) {
		res, err := c.handleGateway(ctx, call)
		if err != nil {
			return nil, err
		}
		if res != nil && res.Content == nil {
			r := *res
			r.Content = []mcp.Content{}
			res = &r
		}
		return res, nil
	}
}
