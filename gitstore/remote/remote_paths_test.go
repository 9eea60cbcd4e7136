//go:build !windows

package remote

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore"
)

// TestRemotePathsWithBackslashes: on unix a backslash is an ordinary file
// name character, so a remote written Windows-style is a local path there
// (as git sees it), never scp syntax for a host "C"; and scp syntax with
// a host name stays ssh.
func TestRemotePathsWithBackslashes(t *testing.T) {
	s, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, raw := range []string{`C:\team\ledger.git`, `team\ledger.git`, `..\shared\ledger.git`} {
		u, err := normalizeURL(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if !filepath.IsAbs(u) || !strings.HasSuffix(u, string(filepath.Separator)+raw) {
			t.Errorf("%s normalized to %s, want an absolute path ending in it", raw, u)
		}
		_, dialed, err := (&sharer{s}).resolveRemote(raw)
		if err != nil || dialed != u {
			t.Errorf("resolveRemote(%s) = %s, %v; want %s", raw, dialed, err, u)
		}
		if _, ep, _, _, err := dial(u, TransferOptions{}); err != nil || ep.Protocol != "file" {
			t.Errorf("dial(%s): %+v %v, want the file transport", u, ep, err)
		}
	}
	for _, raw := range []string{"git@example.com:team/ledger.git", "ssh://git@example.com/team/ledger.git"} {
		if _, ep, _, _, err := dial(raw, TransferOptions{}); err != nil || ep.Protocol != "ssh" {
			t.Errorf("dial(%s): %+v %v, want ssh", raw, ep, err)
		}
	}
}
