package remote

import (
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore"
)

// TestRemotePathsWithDriveLetters: on Windows a drive letter is a path,
// not scp syntax for a host "C", with either slash; so is a UNC share.
func TestRemotePathsWithDriveLetters(t *testing.T) {
	s, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for raw, want := range map[string]string{
		`C:\team\ledger.git`:         `C:\team\ledger.git`,
		`C:/team/ledger.git`:         `C:\team\ledger.git`,
		`d:\Team Share\ledger.git`:   `d:\Team Share\ledger.git`,
		`\\server\share\ledger.git`:  `\\server\share\ledger.git`,
		`C:\team\..\team\ledger.git`: `C:\team\ledger.git`,
	} {
		u, err := normalizeURL(raw)
		if err != nil || u != want {
			t.Errorf("normalizeURL(%s) = %s, %v; want %s", raw, u, err, want)
			continue
		}
		_, dialed, err := (&sharer{s}).resolveRemote(raw)
		if err != nil || dialed != want {
			t.Errorf("resolveRemote(%s) = %s, %v; want %s", raw, dialed, err, want)
		}
		if _, ep, _, _, err := dial(u, TransferOptions{}); err != nil || ep.Protocol != "file" {
			t.Errorf("dial(%s): %+v %v, want the file transport", u, ep, err)
		}
	}
	if _, ep, _, _, err := dial("git@example.com:team/ledger.git", TransferOptions{}); err != nil || ep.Protocol != "ssh" {
		t.Errorf("scp syntax with a host name: %+v %v, want ssh", ep, err)
	}
}
