package project

import (
	"errors"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/coderepo"
)

// TestCheckGitPushedRefs: git pushing reasoning refs itself is refused
// when they go to another URL, are local, or are a private session's;
// code refs, deletions and the bound remote's shared refs pass.
func TestCheckGitPushedRefs(t *testing.T) {
	sha := strings.Repeat("1", 40)
	zero := strings.Repeat("0", 40)
	up := func(ref string) coderepo.RefUpdate {
		return coderepo.RefUpdate{LocalRef: ref, LocalSHA: sha, RemoteRef: ref, RemoteSHA: zero}
	}
	shared := "refs/thoughtbox/v1/sessions/abc/main"
	for _, tc := range []struct {
		name    string
		updates []coderepo.RefUpdate
		toBound bool
		private []string
		bad     string
	}{
		{"code only, anywhere", []coderepo.RefUpdate{up("refs/heads/main"), up("refs/tags/v1")}, false, nil, ""},
		{"shared ref to the bound remote", []coderepo.RefUpdate{up(shared), up("refs/thoughtbox/v1/knowledge")}, true, nil, ""},
		{"a deletion", []coderepo.RefUpdate{{LocalRef: "(delete)", LocalSHA: zero, RemoteRef: shared, RemoteSHA: sha}}, false, nil, ""},
		{"shared ref elsewhere", []coderepo.RefUpdate{up("refs/heads/main"), up(shared)}, false, nil, shared + " (not the bound reasoning remote)"},
		{"a local ref", []coderepo.RefUpdate{up("refs/thoughtbox/deleted/abc/record")}, true, nil, "(local to this repository)"},
		{"a private session under a code name", []coderepo.RefUpdate{{LocalRef: "refs/thoughtbox/v1/sessions/abc/main", LocalSHA: sha, RemoteRef: "refs/heads/leak", RemoteSHA: zero}}, true, []string{"abc"}, "(session abc is private)"},
		{"a private session", []coderepo.RefUpdate{up("refs/thoughtbox/v1/sessions/abc/branches/x")}, true, []string{"abc"}, "(session abc is private)"},
	} {
		err := CheckGitPushedRefs(tc.updates, tc.toBound, tc.private)
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.bad != "" && (!errors.Is(err, ErrReasoningRefsRefused) || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%s: %v, want ErrReasoningRefsRefused naming %q", tc.name, err, tc.bad)
		}
	}
}
