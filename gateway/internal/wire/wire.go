// Package wire is the JSON-RPC both of the gateway's transports read and
// write themselves, beside the SDK: decoding a message once, in place,
// with the SDK's case-sensitive rules; the ids that can be echoed
// exactly; the errors a transport answers on its own; and the MCP
// protocol versions the gateway speaks. The stdio transport
// (internal/stdio) and the HTTP transport (httptransport) both decode
// through it, so a message one refuses the other refuses the same way.
// Error codes are the SDK's (jsonrpc.CodeParseError and the others).
package wire

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/segmentio/encoding/json"
)

// MaxDepth bounds the nesting of an inbound message, as the SDK does.
const MaxDepth = 1000

// Space is the white space JSON allows between tokens. Other space (a
// form feed, a no-break space) is text that is not JSON: a line of it is
// answered with a parse error, not skipped as blank.
const Space = " \t\r\n"

// Blank reports whether p holds nothing but JSON white space.
func Blank(p []byte) bool { return len(bytes.Trim(p, Space)) == 0 }

// TooDeep reports whether p nests arrays and objects deeper than MaxDepth
// (outside strings). It is checked before decoding, so that a hostile
// message cannot make the decoder recurse without bound.
func TooDeep(p []byte) bool {
	depth := 0
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
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > MaxDepth {
				return true
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return false
}

// ErrTooDeep is the refusal of a message TooDeep caught.
func ErrTooDeep() *Error {
	return &Error{Code: jsonrpc.CodeParseError, Message: fmt.Sprintf("parse error: the message nests deeper than %d levels", MaxDepth)}
}

// IsBatch reports whether a frame is a JSON array (a batch).
func IsBatch(frame []byte) bool {
	trimmed := bytes.TrimLeft(frame, Space)
	return len(trimmed) > 0 && trimmed[0] == '['
}

// ParseStrict decodes data into v with the SDK's case-sensitive rules,
// refusing trailing data.
func ParseStrict(data []byte, v any) error {
	rest, err := json.Parse(data, v, json.DontMatchCaseInsensitiveStructFields)
	if err != nil {
		return err
	}
	if !Blank(rest) {
		return errors.New("invalid trailing data at the end of the message")
	}
	return nil
}

// message is a JSON-RPC message as it arrives. Method is raw so that a
// present but empty method is told from an absent one; ID is raw so that
// it can be checked and echoed exactly.
type message struct {
	VersionTag string             `json:"jsonrpc"`
	ID         stdjson.RawMessage `json:"id,omitempty"`
	Method     stdjson.RawMessage `json:"method"`
	Params     stdjson.RawMessage `json:"params,omitempty"`
	Result     stdjson.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error     `json:"error,omitempty"`
}

// NoMethod refuses a message with an id but neither a method (a request)
// nor exactly one of result and error (a response): left unanswered, the
// client would wait for ever on what it thinks is a request.
const NoMethod = "invalid request: a message with an id needs a method (a request), or a result or an error (a response)"

// Decode decodes one message (not a batch) as jsonrpc.DecodeMessage does,
// except for ids (see DecodeID). What cannot be taken comes back as the
// Error to answer it with.
func Decode(data []byte) (jsonrpc.Message, *Error) {
	var w message
	if err := ParseStrict(data, &w); err != nil {
		if !stdjson.Valid(data) {
			return nil, &Error{Code: jsonrpc.CodeParseError, Message: "parse error: " + err.Error()}
		}
		return nil, &Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: expected a JSON-RPC message object: " + err.Error()}
	}
	id, err := DecodeID(w.ID)
	if err != nil {
		return nil, &Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + err.Error()}
	}
	// Only an id that was read is echoed in an error about its message.
	echo := stdjson.RawMessage(nil)
	if id.IsValid() {
		echo = w.ID
	}
	if w.VersionTag != "2.0" {
		return nil, &Error{ID: echo, Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("invalid request: field jsonrpc must be %q, got %q", "2.0", w.VersionTag)}
	}
	if len(w.Method) > 0 {
		var method string
		if err := ParseStrict(w.Method, &method); err != nil {
			return nil, &Error{ID: echo, Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: field method must be a string"}
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return nil, &Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: a message needs a method (a request) or an id (a response)"}
	}
	if (len(w.Result) == 0) == (w.Error == nil) {
		return nil, &Error{ID: echo, Code: jsonrpc.CodeInvalidRequest, Message: NoMethod}
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		resp.Error = w.Error
	}
	return resp, nil
}

// SplitBatch reads a batch (data trimmed, starting with '[') into its
// elements, each left for Decode: how a bad element is answered differs
// between the transports (stdio answers it alone; HTTP refuses the body).
func SplitBatch(data []byte) ([]stdjson.RawMessage, *Error) {
	var raws []stdjson.RawMessage
	if err := ParseStrict(data, &raws); err != nil {
		return nil, &Error{Code: jsonrpc.CodeParseError, Message: "parse error: " + err.Error()}
	}
	if len(raws) == 0 {
		return nil, &Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: empty batch"}
	}
	return raws, nil
}

// Error is a JSON-RPC error response a transport writes itself, for a
// message the server never sees. ID is raw JSON (nil: null), so that
// whatever id the client sent is echoed as sent.
type Error struct {
	ID      stdjson.RawMessage
	Code    int64
	Message string
}

func (e *Error) Error() string { return e.Message }

// Encode is the error response's JSON, without a newline.
func (e *Error) Encode() []byte {
	id := e.ID
	if len(id) == 0 {
		id = stdjson.RawMessage("null")
	}
	type body struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	data, _ := stdjson.Marshal(struct {
		VersionTag string             `json:"jsonrpc"`
		ID         stdjson.RawMessage `json:"id"`
		Error      body               `json:"error"`
	}{"2.0", id, body{e.Code, e.Message}})
	return data
}

// ErrorResponse is the JSON-RPC error response, with a null id, that
// refuses a message before it reaches the server.
func ErrorResponse(code int64, message string) []byte {
	return (&Error{Code: code, Message: message}).Encode()
}

// BatchesRefused is the refusal of a batch on a connection whose protocol
// version has none; where names the connection or the request, instead
// says what to send.
func BatchesRefused(where, version, instead string) *Error {
	return &Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
		"invalid request: JSON-RPC batches are not part of MCP %s and later (%s uses %s); send %s", BatchesUntil, where, version, instead)}
}
