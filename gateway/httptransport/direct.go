package httptransport

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway/internal/direct"
)

// Direct is offered each call a session receives, before its server sees
// it, with the session it belongs to. It returns nil to leave the call to
// the server, or the function that answers it: the Handler runs that on
// its own goroutine and writes its result as the SDK would have. The SDK
// decodes every call's params twice, each time with a fresh 32 kB buffer;
// a caller that can take a call's raw params itself (the gateway's one
// tool) saves that work and its garbage. See stdio.Transport.Direct (internal/stdio), the
// same hook for stdio.
type Direct func(ss *mcp.ServerSession, req *jsonrpc.Request) direct.Func

// NewDirect is New for servers that come with a Direct hook (nil: none),
// both made for each new session by newSession.
func NewDirect(newSession func(*http.Request) (*mcp.Server, Direct), opts Options) *Handler {
	h := New(nil, opts)
	h.newSession = newSession
	return h
}

// takeDirect runs the calls of a POST that the session's Direct takes and
// returns the rest, for the server. A notifications/cancelled reaches the
// direct call it names, and is passed on as well: the server ignores ids
// it does not know. The calls must be registered on their stream first.
func (c *session) takeDirect(msgs []jsonrpc.Message) []jsonrpc.Message {
	if c.direct == nil {
		return msgs
	}
	rest := make([]jsonrpc.Message, 0, len(msgs))
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		switch {
		case !ok:
		case !req.IsCall():
			if req.Method == direct.MethodCancelled {
				c.directs.Cancel(req.Params)
			}
		case c.runDirect(req):
			continue
		}
		rest = append(rest, m)
	}
	return rest
}

// runDirect offers req to Direct and runs it if taken, on a goroutine of
// its own, reporting whether it was.
func (c *session) runDirect(req *jsonrpc.Request) bool {
	fn := c.offer(req)
	if fn == nil {
		return false
	}
	c.directs.Go(c.callContext(req), req.ID, fn, func(resp *jsonrpc.Response) {
		defer c.running.Done()
		// Refused only when the client is gone (the request ended, the
		// session closed): the SDK drops such answers too.
		_ = c.Write(context.Background(), resp)
	})
	return true
}

// offer returns the function that answers req if Direct takes it, nil to
// leave req to the server. A taken call is counted in running, and the
// caller calls running.Done once it has written the answer. A session
// that is closing takes no more: its close waits for the direct calls
// under way, as the SDK's waits for its handlers.
func (c *session) offer(req *jsonrpc.Request) direct.Func {
	if c.direct == nil {
		return nil
	}
	c.mu.Lock()
	if c.closed || c.draining {
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	fn := c.direct(c.ss, req)
	if fn == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.draining {
		return nil
	}
	c.running.Add(1)
	return fn
}

// callContext is the context of a direct call: it carries the call's
// request, as Correlate marks the server's handlers, so that what the
// gateway sends during the call (roots, sampling, progress) goes on the
// call's own response.
func (c *session) callContext(req *jsonrpc.Request) context.Context {
	return context.WithValue(c.dctx, extraKey{}, req.Extra)
}

// shut closes the session as the SDK's ServerSession.Close does for its
// own calls: it waits for the direct calls under way (taking no new ones),
// then closes the server session. The wait cannot be in Close, which the
// SDK calls under its connection's lock, which a call that sends the
// client a request needs.
func (c *session) shut() error {
	c.mu.Lock()
	c.draining = true
	c.mu.Unlock()
	c.running.Wait()
	return c.ss.Close()
}
