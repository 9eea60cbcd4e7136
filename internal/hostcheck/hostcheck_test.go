package hostcheck

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestAllowed(t *testing.T) {
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1729}
	wide := &net.TCPAddr{IP: net.IPv4(192, 168, 1, 5), Port: 1729}
	names := []string{"dash.example"}
	for _, tt := range []struct {
		local net.Addr
		host  string
		ok    bool
	}{
		{loop, "127.0.0.1:1729", true},
		{loop, "localhost:1729", true},
		{loop, "LOCALHOST", true},
		{loop, "[::1]:1729", true},
		{loop, "dash.example:1729", true},
		{loop, "evil.example:1729", false},
		{loop, "127.0.0.1.evil.example", false},
		{loop, "192.168.1.5:1729", false},
		{wide, "evil.example:1729", true}, // exposed on purpose; the token guards it
		{nil, "evil.example", true},       // no listener address: not a loopback server
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = tt.host
		if tt.local != nil {
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tt.local))
		}
		if got := Allowed(r, names); got != tt.ok {
			t.Errorf("local %v, Host %q: Allowed = %v, want %v", tt.local, tt.host, got, tt.ok)
		}
	}
}
