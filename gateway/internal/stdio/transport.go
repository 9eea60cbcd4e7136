// Package stdio is the gateway's MCP stdio transport: newline-delimited
// JSON-RPC over a reader and a writer, read and answered as the SDK's
// mcp.IOTransport does (differential_test.go holds it to that), with a
// cheaper reader, and with JSON-RPC ids taken only when they can be echoed
// exactly (wire.DecodeID).
package stdio

import (
	"bufio"
	"bytes"
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway/internal/direct"
	"github.com/thoughtbox/thoughtbox/gateway/internal/wire"
)

// Transport is newline-delimited JSON-RPC over a reader and a writer,
// as mcp.IOTransport, with a cheaper reader. The SDK's decodes each
// message up to three times (as a batch, as a message, then its method),
// and its JSON decoder allocates a 32 KB buffer every time: about 100 KB
// of garbage per message, which made the garbage collector a large share
// of a thought's cost. Here a message is read as one line from a buffered
// reader and decoded once, in place, with the same case-sensitive decoder
// the SDK uses. Batches (protocol versions before 2025-06-18) are
// supported as the SDK supports them.
type Transport struct {
	In  io.Reader
	Out io.Writer
	// Direct, when set, is offered each request read before the server
	// sees it. It returns nil to leave the request to the server, or the
	// function that answers it: the transport runs that on the goroutine
	// reading the input when no more input waits, else on one of its own
	// (as the SDK runs calls; see inline.go), and writes its result as
	// the SDK would. The SDK decodes every call's params twice, each time
	// with a fresh 32 kB buffer, and the collection of that garbage was a
	// large share of what a thought cost; a caller that can take a call's
	// raw params itself (the gateway's one tool) saves all of it.
	Direct func(req *jsonrpc.Request) direct.Func
}

// maxFrame bounds one inbound message, as mcp.DefaultMaxLineLength does.
const maxFrame = mcp.DefaultMaxLineLength

// Connect implements mcp.Transport.
func (t Transport) Connect(ctx context.Context) (mcp.Connection, error) {
	// Direct calls end with the connection, not with the ctx Connect is
	// given (the SDK may pass one that ends sooner).
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &stdioConn{
		direct:   t.Direct,
		dctx:     dctx,
		dcancel:  cancel,
		out:      t.Out,
		incoming: make(chan readResult),
		closed:   make(chan struct{}),
		batches:  map[jsonrpc.ID]*inBatch{},
		open:     map[jsonrpc.ID]int{},
		answered: make(chan struct{}, 1),
		in:       bufio.NewReaderSize(t.In, 64<<10),
	}
	c.grace = time.AfterFunc(time.Hour, c.graceOver)
	c.grace.Stop()
	// Reads run on their own goroutine so that Close unblocks Read: a read
	// of stdin cannot be interrupted.
	go c.readLoop()
	return c, nil
}

// readResult is what the reader passes to Read: a message it decoded, a
// frame for Read to decode (a batch), or the end of the input.
type readResult struct {
	msg      jsonrpc.Message
	frame    []byte
	tooLarge bool // a line longer than maxFrame was skipped
	err      error
}

type stdioConn struct {
	// in is read by one goroutine at a time, the reader (see inline.go).
	in       *bufio.Reader
	incoming chan readResult
	queue    []jsonrpc.Message // the rest of a batch being read

	writeMu sync.Mutex
	out     io.Writer
	wbuf    []byte

	mu      sync.Mutex
	initID  jsonrpc.ID // the initialize request's, to learn the version
	version string     // negotiated protocol version, once known
	batches map[jsonrpc.ID]*inBatch
	// open counts the calls handed to the server and not answered yet, by
	// id: at the end of input Read waits for them, so that requests piped
	// in before EOF are all answered. answered is signalled when one is.
	// An id leaves open as its answer is about to be written, since a
	// client may send it again as soon as it reads that answer; writing
	// counts the answers so released and not written yet, which the end
	// of the input waits for as well.
	open     map[jsonrpc.ID]int
	writing  int
	answered chan struct{}
	// inputDone is set once the input has ended: a request to the client
	// (roots/list, sampling) can no longer be answered and fails at once.
	inputDone bool

	closeOnce sync.Once
	closed    chan struct{}

	direct  func(*jsonrpc.Request) direct.Func
	dctx    context.Context
	dcancel context.CancelFunc
	running direct.Running // the direct calls under way

	// inlineReader is set while the reader runs a call itself and nobody
	// has taken its role over (inline.go); grace hands the role on when
	// that call runs long.
	rmu          sync.Mutex
	inlineReader bool
	grace        *time.Timer
}

// inBatch collects the responses to a batch's requests, which are sent
// together once all are in. Slots of elements refused while decoding
// hold their error from the start.
type inBatch struct {
	pending   int
	index     map[jsonrpc.ID]int
	responses []stdjson.RawMessage
}

func (c *stdioConn) SessionID() string { return "" }

// readLoop reads the input until it ends or the connection closes, or
// until another goroutine takes the reader's role over while this one
// answers a call (inline.go). Single messages are decoded here, and the
// gateway's calls answered without going through Read; a batch is left
// to Read to decode, so that it is judged by the protocol version of the
// messages answered before it.
func (c *stdioConn) readLoop() {
	if c.closing() {
		return
	}
	for {
		frame, tooLarge, err := readFrame(c.in)
		if err == nil && frame == nil && !tooLarge {
			continue // a blank line
		}
		res := readResult{frame: frame, tooLarge: tooLarge, err: err}
		if err == nil && !tooLarge && !wire.IsBatch(frame) {
			m, err := c.decodeSingle(frame)
			if err != nil {
				res = readResult{err: err} // the refusal could not be written
			} else if m == nil {
				continue // refused
			} else {
				taken, reader := c.takeInline(m)
				if !reader {
					return
				}
				if taken {
					continue
				}
				res = readResult{msg: m}
			}
		}
		select {
		case c.incoming <- res:
		case <-c.closed:
			return
		}
		if res.err != nil {
			return
		}
	}
}

// readFrame reads one message, which is one line (MCP forbids newlines
// inside a message, and joining lines would let one truncated message
// swallow the ones after it). It returns nil for a blank line, and
// tooLarge after skipping the rest of a line longer than maxFrame, so
// that the next line is read as usual. The slice returned is the caller's.
func readFrame(r *bufio.Reader) (frame []byte, tooLarge bool, err error) {
	for {
		line, err := r.ReadSlice('\n')
		if !tooLarge {
			if len(frame)+len(line) > maxFrame {
				tooLarge, frame = true, nil
			} else {
				frame = append(frame, line...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				// The last line, without its newline; the next call
				// returns io.EOF.
				if tooLarge {
					return nil, true, nil
				}
				if !wire.Blank(frame) {
					return frame, false, nil
				}
			}
			return nil, false, err
		}
		if tooLarge {
			return nil, true, nil
		}
		if wire.Blank(frame) {
			return nil, false, nil
		}
		return frame, false, nil
	}
}

// decodeFrame decodes one line: a message or a batch. What cannot be
// taken is answered here (as JSON-RPC asks: -32700 for text that is not
// JSON, -32600 for JSON that is not a valid request, each element of a
// batch on its own) and never ends the connection.
func (c *stdioConn) decodeFrame(frame []byte) ([]jsonrpc.Message, error) {
	if wire.IsBatch(frame) {
		if wire.TooDeep(frame) {
			return nil, c.writeLine(wire.ErrTooDeep().Encode())
		}
		return c.decodeBatch(bytes.Trim(frame, wire.Space))
	}
	m, err := c.decodeSingle(frame)
	if m == nil {
		return nil, err
	}
	return []jsonrpc.Message{m}, nil
}

// decodeSingle decodes a line that is not a batch. A message it cannot
// take is answered here and comes back nil; the error is the failure to
// write that answer.
func (c *stdioConn) decodeSingle(frame []byte) (jsonrpc.Message, error) {
	if wire.TooDeep(frame) {
		return nil, c.writeLine(wire.ErrTooDeep().Encode())
	}
	m, rerr := c.decodeMessage(bytes.Trim(frame, wire.Space))
	if rerr != nil {
		return nil, c.writeLine(rerr.Encode())
	}
	if err := c.admit(m); err != nil {
		return nil, c.writeLine(err.Encode())
	}
	return m, nil
}

func (c *stdioConn) decodeBatch(data []byte) ([]jsonrpc.Message, error) {
	raws, rerr := wire.SplitBatch(data)
	if rerr != nil {
		return nil, c.writeLine(rerr.Encode())
	}
	c.mu.Lock()
	version := c.version
	c.mu.Unlock()
	if version >= wire.BatchesUntil {
		return nil, c.writeLine(wire.BatchesRefused("this connection", version, "one message per line").Encode())
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	b := &inBatch{index: map[jsonrpc.ID]int{}}
	for i, raw := range raws {
		m, rerr := c.decodeMessage(raw)
		if rerr == nil {
			if req, ok := m.(*jsonrpc.Request); ok && req.ID.IsValid() {
				if _, dup := b.index[req.ID]; dup {
					rerr = &wire.Error{ID: wire.RawID(req.ID), Code: jsonrpc.CodeInvalidRequest,
						Message: fmt.Sprintf("invalid request: batch element %d repeats id %v", i, req.ID.Raw())}
				} else if rerr = c.admit(m); rerr == nil {
					b.index[req.ID] = len(b.responses)
					b.responses = append(b.responses, nil)
				}
			}
		}
		if rerr != nil {
			b.responses = append(b.responses, rerr.Encode())
			continue
		}
		msgs = append(msgs, m)
	}
	b.pending = len(b.index)
	if b.pending == 0 {
		if len(msgs) < len(raws) {
			if err := c.writeBatch(b.responses); err != nil {
				return nil, err
			}
		}
		return msgs, nil
	}
	c.mu.Lock()
	for id := range b.index {
		c.batches[id] = b
	}
	c.mu.Unlock()
	return msgs, nil
}

// admit counts a call as open, refusing an id that is still open: its
// answer could not be told from the other's.
func (c *stdioConn) admit(m jsonrpc.Message) *wire.Error {
	req, ok := m.(*jsonrpc.Request)
	if !ok || !req.ID.IsValid() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[req.ID] > 0 {
		return &wire.Error{ID: wire.RawID(req.ID), Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("invalid request: id %v is already in use by a request not answered yet", req.ID.Raw())}
	}
	c.open[req.ID]++
	return nil
}

// decodeMessage decodes one message (wire.Decode), noting the id of
// initialize: its answer carries the protocol version that decides
// whether batches are taken.
func (c *stdioConn) decodeMessage(data []byte) (jsonrpc.Message, *wire.Error) {
	m, rerr := wire.Decode(data)
	if req, ok := m.(*jsonrpc.Request); ok && req.Method == "initialize" && req.ID.IsValid() {
		c.mu.Lock()
		c.initID = req.ID
		c.mu.Unlock()
	}
	return m, rerr
}

// Read returns the next message. A line that is not a valid message is
// answered with a JSON-RPC error and skipped; only the end of the input
// (after every call read has been answered) or a read failure ends it.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		default:
		}
		if len(c.queue) > 0 {
			m := c.queue[0]
			c.queue = c.queue[1:]
			if c.take(m) {
				continue
			}
			return m, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case r := <-c.incoming:
			if r.err != nil {
				if errors.Is(r.err, io.EOF) {
					c.drain(ctx)
				}
				return nil, r.err
			}
			if r.msg != nil {
				return r.msg, nil // offered to Direct by the reader already
			}
			if r.tooLarge {
				if err := c.refuse(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: message longer than %d bytes skipped", maxFrame)); err != nil {
					return nil, err
				}
				continue
			}
			// Decoded here, not by the reader, so that a batch is judged
			// by the protocol version of the messages answered before it.
			msgs, err := c.decodeFrame(r.frame)
			if err != nil {
				return nil, err // the refusal could not be written
			}
			if len(msgs) == 0 {
				continue
			}
			c.queue = msgs[1:]
			if c.take(msgs[0]) {
				continue
			}
			return msgs[0], nil
		case <-c.closed:
			return nil, io.EOF
		}
	}
}

// drain waits, at the end of the input, until every call read so far has
// been answered (or the connection closes): the SDK cancels the calls in
// flight when Read fails, which would drop requests piped in before EOF.
func (c *stdioConn) drain(ctx context.Context) {
	c.mu.Lock()
	c.inputDone = true
	c.mu.Unlock()
	for {
		c.mu.Lock()
		n := len(c.open) + c.writing
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.answered:
		case <-ctx.Done():
			return
		case <-c.closed:
			return
		}
	}
}

// errInputClosed is returned for a request to the client once its input
// has ended: no answer can come.
var errInputClosed = errors.New("the client closed its input; it cannot answer requests any more")

// refuse answers a message the transport cannot take.
func (c *stdioConn) refuse(id stdjson.RawMessage, code int64, message string) error {
	return c.writeLine((&wire.Error{ID: id, Code: code, Message: message}).Encode())
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		c.mu.Lock()
		done := c.inputDone
		c.mu.Unlock()
		req, _ := msg.(*jsonrpc.Request)
		if done && req != nil && req.ID.IsValid() {
			return errInputClosed
		}
		if req != nil && req.ID.IsValid() {
			// Its answer must be read, and the reader may be busy with
			// a call — perhaps the very one waiting for this answer.
			c.freeReader()
		}
		data, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			return fmt.Errorf("marshaling message: %v", err)
		}
		return c.writeLine(data)
	}
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		return fmt.Errorf("marshaling message: %v", err)
	}
	return c.writeResponse(resp, data)
}

// writeResponse writes resp, encoded as data, as the answer to its call.
func (c *stdioConn) writeResponse(resp *jsonrpc.Response, data []byte) (err error) {
	c.mu.Lock()
	if c.initID.IsValid() && resp.ID == c.initID && resp.Result != nil {
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if stdjson.Unmarshal(resp.Result, &r) == nil {
			c.version = r.ProtocolVersion
		}
		c.initID = jsonrpc.ID{}
	}
	b := c.batches[resp.ID]
	var all []stdjson.RawMessage
	if b != nil {
		delete(c.batches, resp.ID)
		b.responses[b.index[resp.ID]] = data
		if b.pending--; b.pending == 0 {
			all = b.responses
		}
	}
	// The id is free again before the answer is out: a client that reads
	// the answer may reuse it at once, and its next call must not find it
	// in use. The answer is still counted (writing), so that the end of
	// the input waits for it to be written.
	if n := c.open[resp.ID]; n > 1 {
		c.open[resp.ID] = n - 1
	} else {
		delete(c.open, resp.ID)
	}
	c.writing++
	c.mu.Unlock()
	if b == nil {
		err = c.writeLine(data)
	} else if all != nil {
		err = c.writeBatch(all)
	}
	c.mu.Lock()
	c.writing--
	c.mu.Unlock()
	select {
	case c.answered <- struct{}{}:
	default:
	}
	return err
}

func (c *stdioConn) writeBatch(all []stdjson.RawMessage) error {
	data, err := stdjson.Marshal(all)
	if err != nil {
		return err
	}
	return c.writeLine(data)
}

// writeLine writes data and its newline with one write.
func (c *stdioConn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.wbuf = append(append(c.wbuf[:0], data...), '\n')
	_, err := c.out.Write(c.wbuf)
	if cap(c.wbuf) > 64<<10 {
		c.wbuf = nil // do not keep a large reply's buffer
	}
	return err
}

// Close stops Read; the reader and writer stay open, as they are the
// caller's (stdin and stdout).
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.grace.Stop()
		c.dcancel()
	})
	return nil
}

// take offers m to Direct and, when it is taken, runs it; it reports
// whether it did. A cancellation of a direct call is passed on as well:
// the server ignores ids it does not know.
func (c *stdioConn) take(m jsonrpc.Message) bool {
	req, ok := m.(*jsonrpc.Request)
	if !ok || c.direct == nil {
		return false
	}
	if !req.ID.IsValid() {
		if req.Method == direct.MethodCancelled {
			c.running.Cancel(req.Params)
		}
		return false
	}
	fn := c.direct(req)
	if fn == nil {
		return false
	}
	c.running.Go(c.dctx, req.ID, fn, func(resp *jsonrpc.Response) {
		// A failed write ends the connection through the next Read, as
		// for the server's own answers.
		_ = c.Write(context.Background(), resp)
	})
	return true
}
