package why

import (
	"testing"

	"github.com/thoughtbox/thoughtbox/ledger"
)

func TestOverlaps(t *testing.T) {
	for _, c := range []struct {
		ref  ledger.CodeRef
		want bool
	}{
		{ledger.CodeRef{Path: "a.go"}, true},
		{ledger.CodeRef{Path: "b.go"}, false},
		{ledger.CodeRef{Path: "a.go", From: 5}, true},
		{ledger.CodeRef{Path: "a.go", From: 7, To: 9}, false},
		{ledger.CodeRef{Path: "a.go", From: 1, To: 3}, true},
		{ledger.CodeRef{Path: "a.go", From: 1, To: 2}, false},
		{ledger.CodeRef{Commit: "abcdef1"}, false},
	} {
		if got := overlaps(c.ref, "a.go", 3, 6); got != c.want {
			t.Errorf("overlaps(%+v, a.go, 3, 6) = %v, want %v", c.ref, got, c.want)
		}
	}
}

// TestPlausibleID keeps what no session id looks like away from the store.
func TestPlausibleID(t *testing.T) {
	for id, want := range map[string]bool{
		"c0de0000-0000-4000-8000-0000000000e1": true,
		"":                                     false,
		"../../etc":                            false,
		"refs/heads/main":                      false,
		"a b":                                  false,
	} {
		if got := plausibleID(id); got != want {
			t.Errorf("plausibleID(%q) = %v, want %v", id, got, want)
		}
	}
}
