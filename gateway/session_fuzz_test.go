package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// decodeOnly is a sub-operation handler that only decodes its arguments.
func decodeOnly[P any]() func(context.Context, *call, *P) (any, error) {
	return func(context.Context, *call, *P) (any, error) { return nil, nil }
}

// FuzzSessionArgs feeds arbitrary bytes to the session operation's
// argument handling — picking the sub-operation, then each sub-operation's
// strict decoding and checks — and to deep_analysis: never a panic, and
// every failure an INVALID_PAYLOAD error whose message starts with the
// field it names.
func FuzzSessionArgs(f *testing.F) {
	for _, s := range []string{
		`{"operation":"list","tags":["a"],"limit":0}`, `{"operation":"list","sortBy":"size"}`,
		`{"subOperation":"search","query":"x"}`, `{"operation":"search"}`, `{"operation":"export","format":"pdf"}`,
		`{"operation":"discovery","action":"hide"}`, `{"operation":"extract_learnings","types":["tip"]}`,
		`{"operation":"get","subOperation":"list"}`, `{"operation":3}`, `{"operation":null}`, `{}`, `[]`, `null`, ``,
		`{"analysisType":"vibes"}`, `{"operation":"resume","sessionId":" "}`,
	} {
		f.Add([]byte(s))
	}
	ops := []subOp{
		sub("list", decodeOnly[sessionListParams]()),
		sub("get", decodeOnly[sessionIDParams]()),
		sub("search", decodeOnly[sessionSearchParams]()),
		sub("resume", decodeOnly[loadContextParams]()),
		sub("export", decodeOnly[sessionExportParams]()),
		sub("analyze", decodeOnly[sessionIDParams]()),
		sub("extract_learnings", decodeOnly[learningsParams]()),
		sub("discovery", decodeOnly[discoveryParams]()),
	}
	check := func(t *testing.T, raw []byte, err error) {
		if err == nil {
			return
		}
		var e *ledger.Error
		if !errors.As(err, &e) || e.Code != ledger.CodeInvalidPayload {
			t.Fatalf("%q: error %v (%T) is not INVALID_PAYLOAD", raw, err, err)
		}
		field, _ := e.Details["field"].(string)
		if field == "" || !strings.HasPrefix(e.Message, field+": ") {
			t.Fatalf("%q: message %q does not start with its field %q", raw, e.Message, field)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := resolveRoute(&operation{name: "session", subOps: ops}, raw)
		if err == nil {
			_, err = runSubOp(context.Background(), &call{args: r.args, route: r})
		}
		check(t, raw, err)
		check(t, raw, decodeArgs(raw, new(deepAnalysisParams)))
	})
}
