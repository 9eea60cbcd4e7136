package stdio

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzStdioFrame reads arbitrary bytes as the stdio transport does: split
// into frames, each decoded as a message or a batch. Nothing may panic; the
// frames are the input less blank space; no frame exceeds the limit; and
// every message decoded, encoded again as the SDK writes messages, decodes
// to the same message.
func FuzzStdioFrame(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}` + "\n",
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n\n" + `{"jsonrpc":"2.0","id":"a","result":{}}` + "\n",
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"}]` + "\n",
		`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":1,"method":"b"}]`,
		"{\"jsonrpc\":\"2.0\",\n\"id\":2,\n\"method\":\"tools/call\"}\n",
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"m"}}`,
		`{"jsonrpc":"2.0","id":null,"method":""}`, `{"jsonrpc":"1.0","id":1}`, `[]`, `{"a":"\"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"x"}`, `{"Jsonrpc":"2.0","ID":1,"Method":"x"}`,
		strings.Repeat("[", 1001), "\r\n\t \n", "\v",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bufio.NewReaderSize(bytes.NewReader(in), 16) // small, to split lines across reads
		var frames [][]byte
		skipped := false // a line over the limit is skipped whole
		for i := 0; ; i++ {
			frame, tooLarge, err := readFrame(r)
			if tooLarge {
				skipped = true
				continue
			}
			if err != nil {
				if err != io.EOF {
					t.Fatalf("%q: read error %v", in, err)
				}
				break
			}
			if i > len(in)+1 {
				t.Fatalf("%q: more frames than bytes", in)
			}
			if frame == nil {
				continue
			}
			if len(frame) > maxFrame {
				t.Fatalf("frame of %d bytes", len(frame))
			}
			frames = append(frames, frame)
		}
		got, want := stripBlank(bytes.Join(frames, nil)), stripBlank(in)
		if !skipped && !bytes.Equal(got, want) {
			t.Fatalf("%q: frames %q are not the input less blank space", in, frames)
		}
		for _, frame := range frames {
			c := &stdioConn{out: io.Discard, batches: map[jsonrpc.ID]*inBatch{}, open: map[jsonrpc.ID]int{}, answered: make(chan struct{}, 1)}
			msgs, err := c.decodeFrame(frame)
			if err != nil {
				continue
			}
			for _, m := range msgs {
				if req, ok := m.(*jsonrpc.Request); ok && req.Method == "" {
					continue // told apart from a missing method on reading; the SDK omits it on writing
				}
				enc, err := jsonrpc.EncodeMessage(m)
				if err != nil {
					continue // e.g. a response with neither result nor error: the SDK will not write it either
				}
				back, werr := (&stdioConn{out: io.Discard, batches: map[jsonrpc.ID]*inBatch{}, open: map[jsonrpc.ID]int{}, answered: make(chan struct{}, 1)}).decodeMessage(enc)
				if werr != nil {
					t.Fatalf("%q: message %s, written by the SDK, does not decode: %s", frame, enc, werr.Message)
				}
				if enc2, err := jsonrpc.EncodeMessage(back); err != nil || !bytes.Equal(enc, enc2) {
					t.Fatalf("%q: message changed when read back: %s, then %s (%v)", frame, enc, enc2, err)
				}
			}
		}
	})
}

// stripBlank removes the bytes complete treats as blank space.
func stripBlank(p []byte) []byte {
	return bytes.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
			return -1
		}
		return r
	}, p)
}
