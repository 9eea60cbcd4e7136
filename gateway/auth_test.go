package gateway

import (
	"strings"
	"testing"
)

func TestParseTokens(t *testing.T) {
	good := "# comment\n\nabcdefghijklmnop alice write:alpha read:*\nqrstuvwxyz012345 bob read:beta\n"
	tk, err := ParseTokens(strings.NewReader(good), "tokens")
	if err != nil {
		t.Fatal(err)
	}
	a, b := tk.lookup("abcdefghijklmnop"), tk.lookup("qrstuvwxyz012345")
	if a == nil || b == nil || tk.lookup("nope") != nil {
		t.Fatalf("lookup: %v %v", a, b)
	}
	if !a.CanWrite("alpha") || a.CanWrite("beta") || !a.CanRead("beta") || !a.CanRead("anything") {
		t.Errorf("alice's grant: %+v", a)
	}
	if b.CanWrite("beta") || !b.CanRead("beta") || b.CanRead("alpha") {
		t.Errorf("bob's grant: %+v", b)
	}
	for in, want := range map[string]string{
		"short alice read:x\n":                                   "tokens line 1: field token: must be at least 16 characters, got 5",
		"abcdefghijklmnop alice\n":                               "tokens line 1: expected <token> <identity> <scope>...",
		"abcdefghijklmnop alice rw:x\n":                          `tokens line 1: scope "rw:x": expected read:PROJECT or write:PROJECT`,
		"abcdefghijklmnop alice read:\n":                         `tokens line 1: scope "read:"`,
		"abcdefghijklmnop a read:x\nabcdefghijklmnop b read:y\n": "tokens line 2: field token: the same token is on line 1",
		"# nothing\n":                                            "tokens: no tokens",
	} {
		if _, err := ParseTokens(strings.NewReader(in), "tokens"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %s", in, err, want)
		}
	}
}
