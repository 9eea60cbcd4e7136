package wire

// The MCP protocol versions the gateway speaks, newest first; the SDK
// keeps its own list unexported, so the server passes this one to it.
var Versions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// BatchesUntil is the first protocol version without JSON-RPC batches.
const BatchesUntil = "2025-06-18"

// AssumedHTTPVersion is the version an HTTP request without an
// MCP-Protocol-Version header is taken to speak, as the 2025-06-18
// specification says a server should assume.
const AssumedHTTPVersion = "2025-03-26"

// Stateless is the first protocol version (the SDK's newest, which the
// gateway does not offer) of the stateless protocol: the SDK's server
// session answers such a request itself, and marks tool results with a
// resultType, so the transports leave its calls to the SDK.
const Stateless = "2026-07-28"
