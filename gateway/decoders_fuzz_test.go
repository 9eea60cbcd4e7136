package gateway

// Fuzz targets for what a client sends: a tool call's arguments and the
// lines of the stdio transport. Plain `go test` runs their seed corpora and
// the crashers kept under testdata/fuzz; BENCHMARKS.md ("Fuzzing") says how
// long each ran and what it found.

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

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
	func() any { return new(getModelParams) },
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
