package cli

import (
	"bytes"
	"testing"
)

func TestControlEscaper(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text\n\ttabbed\n", "plain text\n\ttabbed\n"},
		{"title \x1b]0;pwned\x07 here", `title \x1b]0;pwned\x07 here`},
		{"\x1b[2J\x1b[Hclear", `\x1b[2J\x1b[Hclear`},
		{"bell\x07 del\x7f nul\x00", `bell\x07 del\x7f nul\x00`},
		{"c1 \u009b31m red", `c1 \u009b31m red`},
		{"crlf line\r\nnext", "crlf line\r\nnext"},
		{"overwrite\rhidden", `overwrite\x0dhidden`},
		{"ends in CR\r", `ends in CR\x0d`},
		{"unicode é 日本 ok", "unicode é 日本 ok"},
	} {
		// Whole, and cut at every byte: a Write boundary inside a UTF-8
		// sequence or after a CR must not change the result.
		for cut := 0; cut <= len(tc.in); cut++ {
			var b bytes.Buffer
			e := &controlEscaper{w: &b}
			for _, part := range []string{tc.in[:cut], tc.in[cut:]} {
				n, err := e.Write([]byte(part))
				if err != nil || n != len(part) {
					t.Fatalf("Write(%q) = %d, %v", part, n, err)
				}
			}
			e.flush()
			if b.String() != tc.want {
				t.Errorf("cut %d of %q: got %q, want %q", cut, tc.in, b.String(), tc.want)
			}
		}
	}
}
