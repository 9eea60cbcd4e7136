package gateway

// Fuzz targets for what a client sends: a tool call's arguments and the
// lines of the stdio transport. Plain `go test` runs their seed corpora and
// the crashers kept under testdata/fuzz; BENCHMARKS.md ("Fuzzing") says how
// long each ran and what it found.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// argTargets are the argument types of every operation and sub-operation,
// each decoded as typed does it.
var argTargets = []func() any{
	func() any { return new(noParams) },
	func() any { return new(startNewParams) },
	func() any { return new(loadContextParams) },
	func() any { return new(listSessionsParams) },
	func() any { return new(navigateParams) },
	func() any { return new(bindRootParams) },
	func() any { return new(thoughtParams) },
	func() any { return new(readThoughtsParams) },
	func() any { return new(getStructureParams) },
	func() any { return new(deepAnalysisParams) },
	func() any { return new(mentalModelsParams) },
	func() any { return new(sessionListParams) },
	func() any { return new(sessionIDParams) },
	func() any { return new(sessionSearchParams) },
	func() any { return new(sessionExportParams) },
	func() any { return new(learningsParams) },
	func() any { return new(discoveryParams) },
	func() any { return new(createPatternArgs) },
	func() any { return new(updatePatternArgs) },
	func() any { return new(knowledgeIDArgs) },
	func() any { return new(listPatternsArgs) },
	func() any { return new(noParams) },
	func() any { return new(writeNoteArgs) },
}

// FuzzGatewayArgs decodes arbitrary bytes as the arguments of every
// operation: never a panic; a refusal is an INVALID_PAYLOAD error whose
// message starts with the field it names; and what is accepted, written
// back as JSON, is accepted again as the same arguments — so the decoder
// and its checks agree on what a valid call is.
func FuzzGatewayArgs(f *testing.F) {
	for _, s := range []string{
		`{"thought":"S1|O|x","nextThoughtNeeded":true,"thoughtNumber":1,"totalThoughts":3,"sessionTags":["a"]}`,
		`{"thought":"x","nextThoughtNeeded":false,"revisesThought":1,"isRevision":true,"rlm":true,"rlmQuery":"q"}`,
		`{"range":{"start":1,"end":2}}`, `{"last":3}`, `{"branchId":"alt"}`, `{"thoughtNumber":0}`,
		`{"sessionTitle":"t","sessionTags":["a","b"],"sessionDescription":"d"}`,
		`{"sessionId":"2026-11/abc","depth":"full"}`, `{"project":"p"}`, `{"rootUri":"file:///a/b","name":"n"}`,
		`{"operation":"list","tags":["x"],"limit":5,"offset":1,"sortBy":"title","sortOrder":"asc"}`,
		`{"operation":"create","title":"T","description":"d","content":"c","tags":["a"],"id":"p-1"}`,
		`{"operation":"update","id":"p","tags":null,"content":"x"}`,
		`{"operation":"search","query":"x","limit":1e2}`, `{"analysisType":"patterns","sessionId":"s"}`,
		`{"operation":"get_model","model":"a","tag":"t"}`, `{"format":"markdown","sessionId":"s","path":"/tmp/x"}`,
		` null `, ``, `{}`, `[]`, `{"x":1}`, `{"thought":1}`, `{} {}`, `{"\u0000":1}`, `{"limit":-1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, target := range argTargets {
			dst := target()
			err := decodeArgs(raw, dst)
			if err != nil {
				var e *ledger.Error
				if !errors.As(err, &e) || e.Code != ledger.CodeInvalidPayload {
					t.Fatalf("%T: %q: error %v (%T) is not INVALID_PAYLOAD", dst, raw, err, err)
				}
				field, _ := e.Details["field"].(string)
				if field == "" || !strings.HasPrefix(e.Message, field+": ") {
					t.Fatalf("%T: %q: message %q does not start with its field %q", dst, raw, e.Message, field)
				}
				continue
			}
			enc, err := json.Marshal(dst)
			if err != nil {
				t.Fatalf("%T: %q: accepted arguments do not encode: %v", dst, raw, err)
			}
			again := target()
			if err := decodeArgs(enc, again); err != nil {
				t.Fatalf("%T: %q was accepted, but written back as %s it is refused: %v", dst, raw, enc, err)
			}
			if enc2, _ := json.Marshal(again); !bytes.Equal(enc, enc2) {
				t.Fatalf("%T: %q: the arguments changed when read back:\n%s\n%s", dst, raw, enc, enc2)
			}
		}
	})
}

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
					t.Fatalf("%q: message %s, written by the SDK, does not decode: %s", frame, enc, werr.message)
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
