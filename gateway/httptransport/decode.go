package httptransport

import (
	"bytes"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/thoughtbox/thoughtbox/gateway/internal/wire"
)

// rpcError is a refusal of a body, answered as a JSON-RPC error.
type rpcError = wire.Error

// decodeBody decodes a POST body: one message, or a batch (an array) of
// them. Each message is decoded once, in place (wire.Decode), as the
// stdio transport decodes a line. The messages do not refer to body,
// which the caller may reuse. Unlike stdio, one bad element refuses the
// whole batch: the answer to a POST is one response.
func decodeBody(body []byte) (msgs []jsonrpc.Message, batch bool, err *rpcError) {
	if wire.TooDeep(body) {
		return nil, false, wire.ErrTooDeep()
	}
	trimmed := bytes.Trim(body, wire.Space)
	if len(trimmed) == 0 {
		return nil, false, &rpcError{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: the body is empty"}
	}
	if trimmed[0] != '[' {
		m, err := wire.Decode(trimmed)
		if err != nil {
			return nil, false, err
		}
		return []jsonrpc.Message{m}, false, nil
	}
	raws, err := wire.SplitBatch(trimmed)
	if err != nil {
		return nil, true, err
	}
	msgs = make([]jsonrpc.Message, 0, len(raws))
	for i, raw := range raws {
		m, err := wire.Decode(raw)
		if err != nil {
			err.Message = fmt.Sprintf("batch element %d: %s", i, err.Message)
			return nil, true, err
		}
		msgs = append(msgs, m)
	}
	return msgs, true, nil
}
