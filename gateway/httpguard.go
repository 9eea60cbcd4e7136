package gateway

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/thoughtbox/thoughtbox/gateway/internal/stdio"
)

// DefaultHTTPReadTimeout bounds how long a client may take to send a
// request's body; see Options.HTTPReadTimeout.
const DefaultHTTPReadTimeout = 30 * time.Second

// maxHTTPBody bounds a POST body, as the SDK's MaxRequestBodyBytes default
// does.
const maxHTTPBody = 4 << 20

// checkOrigin refuses, with 403, a request whose Origin header names a
// site other than this machine or one the operator allowed (MCP's
// Streamable HTTP rules: a browser page on another site must not reach a
// local server). A request without Origin is not from a browser page and
// passes; the Host header is checked by the SDK for loopback listeners.
func (g *Gateway) checkOrigin(next http.Handler) http.Handler {
	allowed := map[string]bool{}
	for _, o := range g.opts.AllowedOrigins {
		allowed[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && !allowed[strings.ToLower(origin)] && !loopbackOrigin(origin) {
			http.Error(w, "Forbidden: Origin "+origin+" is not allowed (only local origins and those in THOUGHTBOX_ALLOWED_ORIGINS)", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackOrigin reports whether origin is an http(s) origin on this
// machine: localhost or a loopback address.
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// readBody reads a POST body under the read deadline, then lifts it: the
// deadline is per request, not per connection, because an open event
// stream (GET, or a POST whose answer streams) lives far longer than any
// read timeout, and a connection read deadline would cancel it. Reading
// the body here also lets the ids be checked before the SDK reads them.
func (g *Gateway) readBody(next http.Handler) http.Handler {
	timeout := g.opts.HTTPReadTimeout
	if timeout == 0 {
		timeout = DefaultHTTPReadTimeout
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if timeout > 0 {
			_ = rc.SetReadDeadline(time.Now().Add(timeout))
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxHTTPBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, "Request Entity Too Large: the body is over 4 MiB", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "Bad Request: reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		_ = rc.SetReadDeadline(time.Time{})
		if msg := badIDs(body); msg != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write(stdio.ErrorResponse(jsonrpc.CodeInvalidRequest, "invalid request: "+msg))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// badIDs names the first id in a message or batch that the SDK would not
// echo exactly (see stdio.DecodeID), or returns "". Anything else wrong with the
// body is left to the SDK to answer.
func badIDs(body []byte) string {
	type withID struct {
		ID stdjson.RawMessage `json:"id"`
	}
	var msgs []withID
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if stdjson.Unmarshal(trimmed, &msgs) != nil {
			return ""
		}
	} else {
		var m withID
		if stdjson.Unmarshal(trimmed, &m) != nil {
			return ""
		}
		msgs = append(msgs, m)
	}
	for _, m := range msgs {
		if _, err := stdio.DecodeID(m.ID); err != nil {
			return err.Error()
		}
	}
	return ""
}
