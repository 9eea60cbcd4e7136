package gateway

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// FuzzDecodeArgs feeds arbitrary bytes to the argument decoder of every
// operation: it must never panic, and every failure must be an
// INVALID_PAYLOAD error whose message starts with the field it names.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{
		`{"thought":"x","nextThoughtNeeded":true}`,
		`{"thought":"x","nextThoughtNeeded":true,"thoughtNumber":"3"}`,
		`{"range":{"start":1,"end":"2"}}`,
		`{"range":{"start":1}}`,
		`{"last":2,"thoughtNumber":1}`,
		`{"sessionTags":[1]}`,
		`{"x":1}`,
		`[1]`, `"s"`, `null`, ``, `{`, `{} {}`, `{"operation":"get_model","model":"a","modelId":"b"}`,
		`{"rootUri":"file:///a/b"}`, `{"limit":1e3}`, `{"thoughtNumber":1.5}`,
	} {
		f.Add([]byte(s))
	}
	targets := []func() any{
		func() any { return new(thoughtParams) },
		func() any { return new(readThoughtsParams) },
		func() any { return new(startNewParams) },
		func() any { return new(listSessionsParams) },
		func() any { return new(navigateParams) },
		func() any { return new(bindRootParams) },
		func() any { return new(getModelParams) },
		func() any { return new(noParams) },
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, target := range targets {
			dst := target()
			err := decodeArgs(raw, dst)
			if err == nil {
				if len(strings.TrimSpace(string(raw))) > 0 && string(raw) != "null" && !json.Valid(raw) {
					t.Fatalf("%T accepted invalid JSON %q", dst, raw)
				}
				continue
			}
			var e *ledger.Error
			if !errors.As(err, &e) || e.Code != ledger.CodeInvalidPayload {
				t.Fatalf("%T: %q: error %v (%T) is not INVALID_PAYLOAD", dst, raw, err, err)
			}
			field, _ := e.Details["field"].(string)
			if field == "" || !strings.HasPrefix(e.Message, field+": ") {
				t.Fatalf("%T: %q: message %q does not start with its field %q", dst, raw, e.Message, field)
			}
		}
	})
}

func TestOperationTable(t *testing.T) {
	ops := newOperations()
	for _, op := range ops.list {
		if op.handler == nil || op.summary == "" {
			t.Errorf("%s: no handler or summary", op.name)
		}
		if (op.params == nil) == (op.subOps == nil) {
			t.Errorf("%s: give its parameter type or its sub-operations (one of them), from which its args line and schema are made", op.name)
		}
		if op.advancesTo != stageNone && op.advancesTo <= op.minStage {
			t.Errorf("%s advances to %d from minimum %d", op.name, op.advancesTo, op.minStage)
		}
		if op.tool != "" {
			if op.describeTool == nil || !json.Valid([]byte(op.schema)) {
				t.Errorf("%s: tool %s lacks a description or a valid schema", op.name, op.tool)
			}
			var s struct {
				Type string `json:"type"`
			}
			if json.Unmarshal([]byte(op.schema), &s); s.Type != "object" {
				t.Errorf("%s: schema type %q", op.name, s.Type)
			}
		}
	}
}
