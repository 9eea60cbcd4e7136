package observatory_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestArrows keeps the design's arrow: the Observatory reads the ledger
// through ledger's API and never reaches into the store.
func TestArrows(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/thoughtbox/thoughtbox/observatory").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/thoughtbox/thoughtbox/") && dep != "github.com/thoughtbox/thoughtbox/ledger" && dep != "github.com/thoughtbox/thoughtbox/internal/hostcheck" && dep != "github.com/thoughtbox/thoughtbox/observatory" {
			t.Errorf("observatory depends on %s; it may import only ledger and internal/hostcheck of this module", dep)
		}
		if strings.HasPrefix(dep, "github.com/go-git/") {
			t.Errorf("observatory depends on %s", dep)
		}
	}
}
