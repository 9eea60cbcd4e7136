package gateway

import (
	"bufio"
	"bytes"
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/segmentio/encoding/json"
)

// stdioTransport is newline-delimited JSON-RPC over a reader and a writer,
// as mcp.IOTransport, with a cheaper reader. The SDK's decodes each
// message up to three times (as a batch, as a message, then its method),
// and its JSON decoder allocates a 32 KB buffer every time: about 100 KB
// of garbage per message, which made the garbage collector a large share
// of a thought's cost. Here a message is read as one line from a buffered
// reader and decoded once, in place, with the same case-sensitive decoder
// the SDK uses. Batches (protocol versions before 2025-06-18) are
// supported as the SDK supports them.
type stdioTransport struct {
	in  io.Reader
	out io.Writer
}

// maxFrame bounds one inbound message, as mcp.DefaultMaxLineLength does.
const maxFrame = mcp.DefaultMaxLineLength

// maxDepth bounds the nesting of an inbound message, as the SDK does.
const maxDepth = 1000

// batchesUntil is the first protocol version without JSON-RPC batches.
const batchesUntil = "2025-06-18"

func (t stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &stdioConn{
		out:      t.out,
		incoming: make(chan readResult),
		closed:   make(chan struct{}),
		batches:  map[jsonrpc.ID]*inBatch{},
	}
	// Reads run on their own goroutine so that Close unblocks Read: a read
	// of stdin cannot be interrupted.
	go c.readLoop(bufio.NewReaderSize(t.in, 64<<10))
	return c, nil
}

type readResult struct {
	frame []byte
	err   error
}

type stdioConn struct {
	incoming chan readResult
	queue    []jsonrpc.Message // the rest of a batch being read

	writeMu sync.Mutex
	out     io.Writer
	wbuf    []byte

	mu      sync.Mutex
	initID  jsonrpc.ID // the initialize request's, to learn the version
	version string     // negotiated protocol version, once known
	batches map[jsonrpc.ID]*inBatch

	closeOnce sync.Once
	closed    chan struct{}
}

// inBatch collects the responses to a batch's requests, which are sent
// together once all are in.
type inBatch struct {
	pending   int
	index     map[jsonrpc.ID]int
	responses []*jsonrpc.Response
}

func (c *stdioConn) SessionID() string { return "" }

func (c *stdioConn) readLoop(r *bufio.Reader) {
	for {
		frame, err := readFrame(r)
		if err == nil && frame == nil {
			continue // a blank line
		}
		res := readResult{frame: frame, err: err}
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

// readFrame reads one message: a line, or several if a value continues on
// the next line (the spec forbids it, but the SDK's reader accepts it). It
// returns nil for a blank line; the slice returned is the caller's.
func readFrame(r *bufio.Reader) ([]byte, error) {
	var frame []byte
	for {
		line, err := r.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			frame = append(frame, line...)
			if len(frame) > maxFrame {
				return nil, errFrameTooLarge
			}
			line, err = r.ReadSlice('\n')
		}
		frame = append(frame, line...)
		if len(frame) > maxFrame {
			return nil, errFrameTooLarge
		}
		if err != nil {
			if errors.Is(err, io.EOF) && len(bytes.TrimSpace(frame)) > 0 {
				return frame, nil // the last message, without its newline
			}
			return nil, err
		}
		switch complete(frame) {
		case frameBlank:
			return nil, nil
		case frameComplete, frameTooDeep:
			return frame, nil
		}
	}
}

var errFrameTooLarge = errors.New("inbound JSON-RPC frame exceeded the maximum line length")

var errTooDeep = fmt.Errorf("json: exceeded maximum nesting depth of %d", maxDepth)

const (
	frameBlank = iota
	frameOpen
	frameComplete
	frameTooDeep
)

// complete reports whether p holds a whole JSON value (its brackets closed
// outside strings), nothing, or a value nested too deep.
func complete(p []byte) int {
	depth, started := 0, false
	inString, escaped := false, false
	for _, b := range p {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				return frameTooDeep
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
		started = true
	}
	switch {
	case !started:
		return frameBlank
	case depth > 0 || inString:
		return frameOpen
	}
	return frameComplete
}

// wireMessage is a JSON-RPC message as it arrives. Method is raw so that a
// present but empty method is told from an absent one.
type wireMessage struct {
	VersionTag string             `json:"jsonrpc"`
	ID         any                `json:"id,omitempty"`
	Method     stdjson.RawMessage `json:"method"`
	Params     stdjson.RawMessage `json:"params,omitempty"`
	Result     stdjson.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error     `json:"error,omitempty"`
}

func parseStrict(data []byte, v any) error {
	rest, err := json.Parse(data, v, json.DontMatchCaseInsensitiveStructFields)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return errors.New("invalid trailing data at the end of the message")
	}
	return nil
}

func (c *stdioConn) decodeFrame(frame []byte) ([]jsonrpc.Message, bool, error) {
	if complete(frame) == frameTooDeep {
		return nil, false, errTooDeep
	}
	trimmed := bytes.TrimSpace(frame)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var raws []stdjson.RawMessage
		if err := parseStrict(trimmed, &raws); err != nil {
			return nil, true, fmt.Errorf("unmarshaling jsonrpc batch: %w", err)
		}
		if len(raws) == 0 {
			return nil, true, errors.New("empty batch")
		}
		c.mu.Lock()
		version := c.version
		c.mu.Unlock()
		if version >= batchesUntil {
			return nil, true, fmt.Errorf("JSON-RPC batching is not supported in %s and later (request version: %s)", batchesUntil, version)
		}
		msgs := make([]jsonrpc.Message, 0, len(raws))
		b := &inBatch{index: map[jsonrpc.ID]int{}}
		for _, raw := range raws {
			m, err := c.decodeMessage(raw)
			if err != nil {
				return nil, true, err
			}
			msgs = append(msgs, m)
			if req, ok := m.(*jsonrpc.Request); ok && req.ID.IsValid() {
				if _, dup := b.index[req.ID]; dup {
					return nil, true, fmt.Errorf("duplicate message ID %v", req.ID.Raw())
				}
				b.index[req.ID] = len(b.responses)
				b.responses = append(b.responses, nil)
			}
		}
		if b.pending = len(b.responses); b.pending > 0 {
			c.mu.Lock()
			for id := range b.index {
				if _, seen := c.batches[id]; seen {
					c.mu.Unlock()
					return nil, true, fmt.Errorf("%w: batch contains previously seen request %v", jsonrpc2InvalidRequest, id.Raw())
				}
			}
			for id := range b.index {
				c.batches[id] = b
			}
			c.mu.Unlock()
		}
		return msgs, true, nil
	}
	m, err := c.decodeMessage(trimmed)
	if err != nil {
		return nil, false, err
	}
	return []jsonrpc.Message{m}, false, nil
}

var jsonrpc2InvalidRequest = errors.New("JSON RPC invalid request")

// decodeMessage decodes one message as jsonrpc.DecodeMessage does.
func (c *stdioConn) decodeMessage(data []byte) (jsonrpc.Message, error) {
	var w wireMessage
	if err := parseStrict(data, &w); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if w.VersionTag != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", w.VersionTag, "2.0")
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, err
	}
	if len(w.Method) > 0 {
		var method string
		if err := parseStrict(w.Method, &method); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		if method == "initialize" && id.IsValid() {
			c.mu.Lock()
			c.initID = id
			c.mu.Unlock()
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return nil, fmt.Errorf("%w: a message with neither method nor id", jsonrpc2InvalidRequest)
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		resp.Error = w.Error
	}
	return resp, nil
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	default:
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-c.incoming:
		if r.err != nil {
			return nil, r.err
		}
		// Decoded here, not by the reader, so that a batch is judged by
		// the protocol version of the messages answered before it.
		msgs, _, err := c.decodeFrame(r.frame)
		if err != nil {
			return nil, err
		}
		c.queue = msgs[1:]
		return msgs[0], nil
	case <-c.closed:
		return nil, io.EOF
	}
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
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
		var all []*jsonrpc.Response
		if b != nil {
			delete(c.batches, resp.ID)
			b.responses[b.index[resp.ID]] = resp
			if b.pending--; b.pending == 0 {
				all = b.responses
			}
		}
		c.mu.Unlock()
		if b != nil {
			if all == nil {
				return nil // the batch is not complete yet
			}
			return c.writeBatch(all)
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %v", err)
	}
	return c.writeLine(data)
}

func (c *stdioConn) writeBatch(all []*jsonrpc.Response) error {
	raws := make([]stdjson.RawMessage, len(all))
	for i, r := range all {
		data, err := jsonrpc.EncodeMessage(r)
		if err != nil {
			return fmt.Errorf("encoding batch message: %w", err)
		}
		raws[i] = data
	}
	data, err := stdjson.Marshal(raws)
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
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}
