package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// contentsReply is a reply that is not a single JSON document (the cipher
// guide, the cookbook).
type contentsReply interface{ contents() []mcp.Content }

// replyResult renders a successful reply as compact JSON text.
func replyResult(reply any) *mcp.CallToolResult {
	if r, ok := reply.(contentsReply); ok {
		return &mcp.CallToolResult{Content: r.contents()}
	}
	b, err := json.Marshal(reply)
	if err != nil {
		return errorResult(ledger.Errorf(ledger.CodeInternal, "encoding the reply: %w", err))
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// errorResult reports a failure as a tool result with isError and the
// ErrorPayload of seed 002, {code, message, details}.
func errorResult(err error) *mcp.CallToolResult {
	e := ledger.AsError(err)
	if e.Code == ledger.CodeSessionNotFound && e.Details["next"] == nil {
		// Every refusal names the call that gets the agent unstuck.
		cp := *e
		cp.Details = maps.Clone(e.Details)
		if cp.Details == nil {
			cp.Details = map[string]any{}
		}
		cp.Details["next"] = "session {subOperation: list} (or list_sessions) lists this project's sessions"
		cp.Message += "; call session {subOperation: list} (or list_sessions) to see the sessions"
		e = &cp
	}
	b, jerr := json.Marshal(e)
	if jerr != nil {
		b, _ = json.Marshal(ledger.Error{Code: e.Code, Message: e.Message})
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// decodeArgs decodes a JSON object of arguments into dst strictly: an
// unknown argument or a value of the wrong type is an INVALID_PAYLOAD error
// that names the field and what was expected. Absent or null arguments
// decode as {}. If dst has a check method, it runs afterwards.
func decodeArgs(raw json.RawMessage, dst any) error {
	raw = bytes.Trim(raw, " \t\r\n") // JSON whitespace
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if raw[0] != '{' {
		e := ledger.InvalidField("args", "expected object, got %s", jsonKind(raw))
		e.Details["expected"] = "object"
		return e
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	// Strict decoding costs nothing more when the arguments are right; when
	// they are not, the struct's own fields say which argument is unknown
	// (encoding/json's error text is not read).
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		if shape := shapeOf(reflect.TypeOf(dst)); shape != nil {
			if uerr := shape.unknownField(raw, ""); uerr != nil {
				return uerr
			}
		}
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return ledger.InvalidField("args", "unexpected data after the arguments object")
	}
	if c, ok := dst.(interface{ check() error }); ok {
		return c.check()
	}
	return nil
}

// decodeError turns an encoding/json error into an INVALID_PAYLOAD error
// about the field at fault.
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "args"
		}
		want := kindName(te.Type)
		if te.Type == cellRefType {
			want = "a cell id, filename or 1-based position"
		}
		e := fieldError(field, "expected %s, got %s", want, strings.Replace(te.Value, "bool", "boolean", 1))
		e.Details["expected"] = want
		return e
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return ledger.InvalidField("args", "invalid JSON at offset %d: %v", se.Offset, err)
	}
	return ledger.InvalidField("args", "%v", err)
}

// unknownFieldError refuses an argument named field that is none of known.
func unknownFieldError(field string, known []string) *ledger.Error {
	known = slices.Clone(known)
	slices.Sort(known)
	known = slices.Compact(known)
	if known == nil {
		known = []string{}
	}
	want := "expected one of " + strings.Join(known, ", ")
	if len(known) == 0 {
		want = "this call takes no arguments"
	}
	e := fieldError(field, "unknown argument; %s", want)
	e.Details["problem"] = "unknown"
	e.Details["expected"] = known
	return e
}

// fieldError is ledger.InvalidField for a field name that came from the
// client and so must not be read as a format.
func fieldError(field, format string, args ...any) *ledger.Error {
	e := ledger.Errorf(ledger.CodeInvalidPayload, "%s: "+format, append([]any{field}, args...)...)
	e.Details = map[string]any{"field": field}
	return e
}

// kindName names a Go type the way a JSON schema would.
func kindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return "array of " + kindName(t.Elem()) + "s"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return t.String()
}

// jsonKind names the kind of a JSON value by its first byte.
func jsonKind(raw []byte) string {
	switch raw[0] {
	case '"':
		return "string"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// oneOf reports an error unless at most one of the named options is set.
func oneOf(set map[string]bool) error {
	var given []string
	for name, ok := range set {
		if ok {
			given = append(given, name)
		}
	}
	if len(given) <= 1 {
		return nil
	}
	slices.Sort(given)
	e := ledger.InvalidField(given[1], "cannot be combined with %s; give one of them", given[0])
	e.Details["conflictsWith"] = given[0]
	return e
}

// text is a reply of Markdown text, after an optional JSON header.
type text struct {
	header any
	body   []string
}

func (t *text) contents() []mcp.Content {
	var out []mcp.Content
	if t.header != nil {
		b, err := json.Marshal(t.header)
		if err != nil {
			b = fmt.Appendf(nil, "%q", err.Error())
		}
		out = append(out, &mcp.TextContent{Text: string(b)})
	}
	for _, s := range t.body {
		out = append(out, &mcp.TextContent{Text: s})
	}
	return out
}

func (t *text) reportStage(s Stage) {
	if r, ok := t.header.(stageReporter); ok {
		r.reportStage(s)
	}
}
