package httptransport

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/thoughtbox/thoughtbox/gateway/internal/stdio"
)

// maxDepth bounds the nesting of an inbound message, as the SDK does.
const maxDepth = 1000

// jsonSpace is the white space JSON allows between tokens.
const jsonSpace = " \t\r\n"

// wireMessage is a JSON-RPC message as it arrives. Method is raw so that a
// present but empty method is told from an absent one; ID is raw so that
// it can be checked and echoed exactly.
type wireMessage struct {
	VersionTag string             `json:"jsonrpc"`
	ID         stdjson.RawMessage `json:"id,omitempty"`
	Method     stdjson.RawMessage `json:"method"`
	Params     stdjson.RawMessage `json:"params,omitempty"`
	Result     stdjson.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error     `json:"error,omitempty"`
}

// rpcError is a refusal of a body, answered as a JSON-RPC error; id is the
// raw id to echo (nil: null).
type rpcError struct {
	id      stdjson.RawMessage
	code    int64
	message string
}

func (e *rpcError) Error() string { return e.message }

func (e *rpcError) encode() []byte {
	id := e.id
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
	}{"2.0", id, body{e.code, e.message}})
	return data
}

// decodeBody decodes a POST body: one message, or a batch (an array) of
// them. Each message is decoded once, in place: the SDK's decoder takes a
// fresh 32 KB buffer for each of the three times it reads a message, and
// that garbage was a large share of a request's cost. The messages do not
// refer to body, which the caller may reuse.
func decodeBody(body []byte) (msgs []jsonrpc.Message, batch bool, err *rpcError) {
	if stdio.TooDeep(body) {
		return nil, false, &rpcError{code: jsonrpc.CodeParseError, message: fmt.Sprintf("parse error: the message nests deeper than %d levels", maxDepth)}
	}
	trimmed := bytes.Trim(body, jsonSpace)
	if len(trimmed) == 0 {
		return nil, false, &rpcError{code: jsonrpc.CodeInvalidRequest, message: "invalid request: the body is empty"}
	}
	if trimmed[0] != '[' {
		m, err := decodeMessage(trimmed)
		if err != nil {
			return nil, false, err
		}
		return []jsonrpc.Message{m}, false, nil
	}
	var raws []stdjson.RawMessage
	if err := stdio.ParseStrict(trimmed, &raws); err != nil {
		return nil, true, &rpcError{code: jsonrpc.CodeParseError, message: "parse error: " + err.Error()}
	}
	if len(raws) == 0 {
		return nil, true, &rpcError{code: jsonrpc.CodeInvalidRequest, message: "invalid request: empty batch"}
	}
	msgs = make([]jsonrpc.Message, 0, len(raws))
	for i, raw := range raws {
		m, err := decodeMessage(raw)
		if err != nil {
			err.message = fmt.Sprintf("batch element %d: %s", i, err.message)
			return nil, true, err
		}
		msgs = append(msgs, m)
	}
	return msgs, true, nil
}

// decodeMessage decodes one message as jsonrpc.DecodeMessage does, except
// for ids (see stdio.DecodeID).
func decodeMessage(data []byte) (jsonrpc.Message, *rpcError) {
	var w wireMessage
	if err := stdio.ParseStrict(data, &w); err != nil {
		if !stdjson.Valid(data) {
			return nil, &rpcError{code: jsonrpc.CodeParseError, message: "parse error: " + err.Error()}
		}
		return nil, &rpcError{code: jsonrpc.CodeInvalidRequest, message: "invalid request: expected a JSON-RPC message object: " + err.Error()}
	}
	id, err := stdio.DecodeID(w.ID)
	if err != nil {
		return nil, &rpcError{code: jsonrpc.CodeInvalidRequest, message: "invalid request: " + err.Error()}
	}
	echo := stdjson.RawMessage(nil)
	if id.IsValid() {
		echo = w.ID
	}
	if w.VersionTag != "2.0" {
		return nil, &rpcError{id: echo, code: jsonrpc.CodeInvalidRequest,
			message: fmt.Sprintf("invalid request: field jsonrpc must be %q, got %q", "2.0", w.VersionTag)}
	}
	if len(w.Method) > 0 {
		var method string
		if err := stdio.ParseStrict(w.Method, &method); err != nil {
			return nil, &rpcError{id: echo, code: jsonrpc.CodeInvalidRequest, message: "invalid request: field method must be a string"}
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return nil, &rpcError{code: jsonrpc.CodeInvalidRequest, message: "invalid request: a message needs a method (a request) or an id (a response)"}
	}
	if (len(w.Result) == 0) == (w.Error == nil) {
		return nil, &rpcError{id: echo, code: jsonrpc.CodeInvalidRequest, message: stdio.NoMethod}
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		resp.Error = w.Error
	}
	return resp, nil
}
