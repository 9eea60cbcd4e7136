package remote

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore"

	"github.com/thoughtbox/thoughtbox/sharing"
)

// TestPeekConfigReadsWhatAddRemoteWrote: the remotes read straight from
// the Git config, without opening the store, are those AddRemote recorded,
// sorted, with a password in a URL hidden; a missing repository has none.
func TestPeekConfigReadsWhatAddRemoteWrote(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "p.git")
	s, err := gitstore.Open(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	team := t.TempDir()
	if _, err := AddRemote(s, "origin", team); err != nil {
		t.Fatal(err)
	}
	if _, err := AddRemote(s, "backup", "https://me:s3cret@git.example.com/ledger.git"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got := PeekConfig(repo)
	if len(got) != 2 || got[0].Name != "backup" || got[1] != (sharing.Remote{Name: "origin", URL: team}) {
		t.Fatalf("PeekConfig = %+v", got)
	}
	if strings.Contains(got[0].URL, "s3cret") || !strings.Contains(got[0].URL, "git.example.com") {
		t.Errorf("backup's URL %q: want the host, and the password hidden", got[0].URL)
	}
	if names := PeekRemotes(repo); !slices.Equal(names, []string{"backup", "origin"}) {
		t.Errorf("PeekRemotes = %v", names)
	}
	if PeekConfig(filepath.Join(t.TempDir(), "none.git")) != nil {
		t.Error("a missing repository has remotes")
	}
}

// TestValidRemoteName: the rule the command line checks before opening
// anything is the one AddRemote applies.
func TestValidRemoteName(t *testing.T) {
	for _, ok := range []string{"origin", "team-2", "a.b_c"} {
		if err := ValidRemoteName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-x", "a b", "a..b", "x.lock", "a/b", strings.Repeat("a", 65)} {
		if err := ValidRemoteName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
