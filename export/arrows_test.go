package export_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestArrows: writing a completed session's export needs the ledger and
// the durable-file layer only, so the command line can close a session
// without the MCP server in its path.
func TestArrows(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/thoughtbox/thoughtbox/export").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	allowed := map[string]bool{
		"github.com/thoughtbox/thoughtbox/export":           true,
		"github.com/thoughtbox/thoughtbox/ledger":           true,
		"github.com/thoughtbox/thoughtbox/internal/durable": true,
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/thoughtbox/thoughtbox/") && !allowed[dep] {
			t.Errorf("export depends on %s; it may import only ledger and internal/durable of this module", dep)
		}
	}
}
