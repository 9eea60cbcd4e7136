package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/internal/testfixture"
)

// TestSmallLedgerThroughTheCLI runs the commands that read a project over
// the shared small ledger (testdata/ledger) installed as the default
// project: listing, show with its branch and revision, verify, the
// knowledge zone, and info, which reads it without opening it.
func TestSmallLedgerThroughTheCLI(t *testing.T) {
	dir := t.TempDir()
	testfixture.SmallLedger(t, filepath.Join(dir, "projects", "_default.git"))
	vars := map[string]string{"THOUGHTBOX_DATA_DIR": dir, "HOME": "/nonexistent"}
	steps := []struct {
		args []string
		want []string // substrings of stdout
	}{
		{[]string{"info"}, []string{"sessions            2"}},
		{[]string{"sessions"}, []string{"Why the cache misses", "Naming the release"}},
		{[]string{"show", testfixture.CacheSession}, []string{"branch warmup (from 3, 2 thoughts)", "The TTL change predates the climb"}},
		{[]string{"verify"}, []string{"OK       " + testfixture.CacheSession, "OK       " + testfixture.OpenSession}},
		{[]string{"knowledge", "show", testfixture.PatternID}, []string{"Check the warmup job"}},
		{[]string{"knowledge", "notes", "show", testfixture.NoteID}, []string{"Ask ops for the key list's owner."}},
	}
	for _, s := range steps {
		code, stdout, stderr := run(t, vars, s.args...)
		if code != ExitOK {
			t.Errorf("%q: exit %d; stderr:\n%s", s.args, code, stderr)
			continue
		}
		for _, w := range s.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%q: stdout lacks %q:\n%s", s.args, w, stdout)
			}
		}
	}
}
