package wire

import (
	stdjson "encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// maxIDText bounds how much of a refused id an error message quotes.
const maxIDText = 64

// maxExactID is the largest integer id taken: the SDK holds numeric ids
// as int64 but reads them through float64, which is exact up to 2^53-1
// (JavaScript's Number.MAX_SAFE_INTEGER) and no further.
const maxExactID = 1<<53 - 1

// DecodeID reads a JSON-RPC id as sent: absent or null, a string, or an
// integer. Through the SDK, 18446744073709551615 or 1e30 came back as
// -9223372036854775808, 9007199254740993 as 9007199254740992 and 1.5 as
// 1: the client could not match the answer to its request. An id is
// therefore taken only if it can be echoed exactly — a string, or an
// integer written in decimal from -(2^53-1) to 2^53-1 — and anything else
// is refused with -32600, naming the id.
func DecodeID(raw stdjson.RawMessage) (jsonrpc.ID, error) {
	text := strings.TrimSpace(string(raw))
	if text == "" || text == "null" {
		return jsonrpc.ID{}, nil
	}
	switch text[0] {
	case '"':
		var s string
		if err := stdjson.Unmarshal([]byte(text), &s); err != nil {
			return jsonrpc.ID{}, fmt.Errorf("field id: %v", err)
		}
		return jsonrpc.MakeID(s)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		n, err := strconv.ParseInt(text, 10, 64)
		if err == nil && n >= -maxExactID && n <= maxExactID {
			return jsonrpc.MakeID(float64(n))
		}
		if len(text) > maxIDText {
			text = text[:maxIDText] + "…"
		}
		return jsonrpc.ID{}, fmt.Errorf("field id: %s cannot be echoed exactly; expected a string or an integer from %d to %d", text, -maxExactID, maxExactID)
	}
	if len(text) > maxIDText {
		text = text[:maxIDText] + "…"
	}
	return jsonrpc.ID{}, fmt.Errorf("field id: expected a string, an integer or null, got %s", text)
}

// RawID is the JSON form of a valid id, for an error a transport writes
// itself.
func RawID(id jsonrpc.ID) stdjson.RawMessage {
	data, err := stdjson.Marshal(id.Raw())
	if err != nil {
		return nil
	}
	return data
}
