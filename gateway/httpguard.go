package gateway

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
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
// passes; the Host header is checked by httptransport for loopback listeners.
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
