// Package hostcheck is the one rule the servers on this machine (the MCP
// endpoint and the Observatory) use against DNS rebinding: a page on
// another site that makes its own name resolve to 127.0.0.1 can reach a
// server on loopback, but the request still carries that name in Host
// (and Origin), which a server bound to loopback can refuse.
//
//	if !hostcheck.Allowed(r, names) {
//		http.Error(w, "Forbidden: invalid Host header", http.StatusForbidden)
//	}
package hostcheck

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Loopback reports whether a host (with or without a port) is this
// machine: localhost or a loopback address.
func Loopback(hostport string) bool {
	host := Hostname(hostport)
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// Hostname is host without its port and brackets, as url.URL.Hostname
// gives it.
func Hostname(hostport string) string {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return strings.Trim(host, "[]")
}

// Named reports whether host (with or without a port) is one of names,
// compared without case and without ports.
func Named(hostport string, names []string) bool {
	host := Hostname(hostport)
	for _, n := range names {
		if n != "" && strings.EqualFold(Hostname(n), host) {
			return true
		}
	}
	return false
}

// Allowed reports whether r may be served: when it arrived on a loopback
// address, its Host must name loopback or one of names (the names the
// server was configured with). A server bound beyond loopback was exposed
// on purpose, behind a token, and is reached by whatever name the network
// gives it, so Host is not checked there.
func Allowed(r *http.Request, names []string) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !Loopback(local.String()) {
		return true
	}
	return Loopback(r.Host) || Named(r.Host, names)
}
