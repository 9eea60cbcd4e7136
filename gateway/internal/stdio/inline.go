package stdio

import (
	"context"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/thoughtbox/thoughtbox/gateway/internal/direct"
	"github.com/thoughtbox/thoughtbox/internal/tuning"
)

// A call taken by Direct used to cross two goroutines before it ran: the
// reader passed its line to Read (the SDK's reading goroutine), which
// handed the call to a worker. Each hand-off is a wake-up through the
// scheduler, and with one agent, which waits for each answer before it
// sends the next call, those wake-ups and the idle spinning around them
// were a sixth of the server's CPU. The reader now answers such a call
// itself when nothing else waits in the input, and goes back to reading
// after writing the answer.
//
// While it answers, the input is not read; nothing may wait for that. So
// the reader's role passes to another goroutine (freeReader) as soon as
// the server sends the client a request — sampling/createMessage for a
// critique, roots/list — whose answer only a reader can take, whichever
// call sent it; and when the call has run for inlineGrace, so that a
// cancellation or the next call of a client that does not wait is read
// as before. A call read while more input is already buffered runs on a
// worker, as every call did, so that calls sent together still run side
// by side.

// inlineGrace is how long the reader answers a call before another
// goroutine takes over reading. A durable thought's fdatasync takes up to
// 1.5 ms on a loaded disk; a longer call is rare, and handing over then
// costs what every call cost before.
var inlineGrace = 5 * time.Millisecond

// takeInline offers m, decoded by the reader, to Direct, and answers it
// if taken. taken reports that m was taken; reader, that this goroutine
// is still the reader (false: another took the role over while it
// answered, and this one must stop reading).
func (c *stdioConn) takeInline(m jsonrpc.Message) (taken, reader bool) {
	req, ok := m.(*jsonrpc.Request)
	if !ok || c.direct == nil || !tuning.InlineAnswer {
		return false, true
	}
	if !req.ID.IsValid() {
		if req.Method == direct.MethodCancelled {
			c.running.Cancel(req.Params)
		}
		return false, true
	}
	fn := c.direct(req)
	if fn == nil {
		return false, true
	}
	if c.in.Buffered() > 0 {
		c.running.Go(c.dctx, req.ID, fn, c.answer)
		return true, true
	}
	// The timer is set and stopped under rmu, by the goroutine that holds
	// the role: once another has taken it, this one must not stop a timer
	// the new reader may have set for its own call.
	c.rmu.Lock()
	c.inlineReader = true
	c.grace.Reset(inlineGrace)
	c.rmu.Unlock()
	resp := c.running.Run(c.dctx, req.ID, fn)
	c.rmu.Lock()
	reader = c.inlineReader
	if reader {
		c.inlineReader = false
		c.grace.Stop()
	}
	c.rmu.Unlock()
	c.answer(resp)
	return true, reader
}

// answer writes a direct call's answer. A failed write ends the
// connection through the next Read, as for the server's own answers.
func (c *stdioConn) answer(resp *jsonrpc.Response) {
	if data, ok := encodeAnswer(resp); ok {
		_ = c.writeResponse(resp, data)
		return
	}
	_ = c.Write(context.Background(), resp)
}

// encodeAnswer writes the answer to a call with a numeric id, as the
// SDK's jsonrpc.EncodeMessage writes it, without its encoder: reflection
// over the message, then a pass over the result to compact it. Respond's
// results come from encoding/json already (or encodeTextResult, which
// writes them as it would), so they are compact, and compacting them
// again without HTML escaping, as the SDK does, leaves them unchanged
// (TestAnswerAsTheSDK). Errors and string ids go the SDK's way.
func encodeAnswer(resp *jsonrpc.Response) ([]byte, bool) {
	n, ok := resp.ID.Raw().(int64)
	if !ok || resp.Error != nil || len(resp.Result) == 0 {
		return nil, false
	}
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	b := make([]byte, 0, len(head)+20+len(mid)+len(resp.Result)+1)
	b = append(b, head...)
	b = strconv.AppendInt(b, n, 10)
	b = append(b, mid...)
	b = append(b, resp.Result...)
	return append(b, '}'), true
}

// freeReader starts another reader if the reader is answering a call.
func (c *stdioConn) freeReader() {
	if c.takeReader() {
		go c.readLoop()
	}
}

// closing reports whether the connection is closed: a goroutine given
// the reader's role then reads nothing, so that no input after the close
// is taken from the caller (a terminal would otherwise lose a line to it).
func (c *stdioConn) closing() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// graceOver makes the timer's goroutine the reader when the call the
// reader answers has run for inlineGrace.
func (c *stdioConn) graceOver() {
	if c.takeReader() {
		c.readLoop()
	}
}

// takeReader takes the reader's role from a goroutine answering a call;
// it reports whether there was one to take. Only one goroutine can win
// it, and the one answering learns of it when its call is done.
func (c *stdioConn) takeReader() bool {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if !c.inlineReader {
		return false
	}
	c.inlineReader = false
	c.grace.Stop()
	return true
}
