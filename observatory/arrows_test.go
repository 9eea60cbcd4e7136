package observatory_test

import (
	"os/exec"
	"strings"
	"testing"
)

// allowed are the packages of this module the Observatory may depend on:
// the ledger's API, the Host check, and for the code pages package why
// and what it stands on (coderepo runs the git CLI; durable writes its
// small files).
var allowed = map[string]bool{"ledger": true, "internal/hostcheck": true, "observatory": true,
	"why": true, "coderepo": true, "internal/durable": true}

// TestArrows keeps the design's arrow: the Observatory reads the ledger
// through ledger's API and never reaches into the store.
func TestArrows(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/thoughtbox/thoughtbox/observatory").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if p, ok := strings.CutPrefix(dep, "github.com/thoughtbox/thoughtbox/"); ok && !allowed[p] {
			t.Errorf("observatory depends on %s; of this module it may reach only ledger, internal/hostcheck and, for the code pages, why, coderepo and internal/durable", dep)
		}
		if strings.HasPrefix(dep, "github.com/go-git/") {
			t.Errorf("observatory depends on %s", dep)
		}
	}
}
