package ledger

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNormalizeCode(t *testing.T) {
	good := []struct {
		in   CodeRef
		want CodeRef
		str  string
	}{
		{CodeRef{Path: "./cmd//main.go"}, CodeRef{Path: "cmd/main.go"}, "cmd/main.go"},
		{CodeRef{Path: "a/b/../c.go", From: 3}, CodeRef{Path: "a/c.go", From: 3, To: 3}, "a/c.go:3"},
		{CodeRef{Path: "x.go", From: 3, To: 9}, CodeRef{Path: "x.go", From: 3, To: 9}, "x.go:3-9"},
		{CodeRef{Commit: "ABCDEF1"}, CodeRef{Commit: "abcdef1"}, "abcdef1"},
		{CodeRef{Commit: "abcdef1", Path: "x.go"}, CodeRef{Commit: "abcdef1", Path: "x.go"}, "x.go@abcdef1"},
	}
	for _, g := range good {
		got, err := NormalizeCode([]CodeRef{g.in})
		if err != nil {
			t.Errorf("%+v: %v", g.in, err)
			continue
		}
		if diff := cmp.Diff([]CodeRef{g.want}, got); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", g.in, diff)
		}
		if s := got[0].String(); s != g.str {
			t.Errorf("%+v prints %q, want %q", g.in, s, g.str)
		}
	}
	bad := []struct {
		in   CodeRef
		want string
	}{
		{CodeRef{}, "needs a commit or a path"},
		{CodeRef{Commit: "xyz1234"}, "expected 7 to 40 hex digits"},
		{CodeRef{Commit: "abc"}, "expected 7 to 40 hex digits"},
		{CodeRef{Path: "/etc/passwd"}, "is absolute"},
		{CodeRef{Path: "C:/x"}, "is absolute"},
		{CodeRef{Path: "../up.go"}, "outside the repository"},
		{CodeRef{Path: "."}, "outside the repository"},
		{CodeRef{Path: "a\\b"}, "backslash"},
		{CodeRef{Path: ".git/config"}, "inside .git"},
		{CodeRef{Path: "x.go", From: 5, To: 2}, "to (2) is before from (5)"},
		{CodeRef{Path: "x.go", To: 2}, "to needs from"},
		{CodeRef{Path: "x.go", From: -1}, "line numbers"},
		{CodeRef{Commit: "abcdef1", From: 2}, "a line range needs a path"},
	}
	for _, b := range bad {
		_, err := NormalizeCode([]CodeRef{{Path: "ok.go"}, b.in})
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidPayload {
			t.Errorf("%+v: got %v, want an invalid payload", b.in, err)
			continue
		}
		if !strings.HasPrefix(e.Message, "code[1]: ") || !strings.Contains(e.Message, b.want) {
			t.Errorf("%+v: %q, want code[1]: …%s…", b.in, e.Message, b.want)
		}
	}
	many := make([]CodeRef, MaxCodeRefs+1)
	for i := range many {
		many[i] = CodeRef{Path: "x.go"}
	}
	if _, err := NormalizeCode(many); err == nil || !strings.Contains(err.Error(), "at most 32") {
		t.Errorf("%d references: %v", len(many), err)
	}
}
