package gitstore

import (
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestBranchIDRuleIsTheLedgers: the store reads and writes as branches
// exactly the ids the ledger accepts (it once allowed 128 characters where
// the ledger allows 100).
func TestBranchIDRuleIsTheLedgers(t *testing.T) {
	for _, id := range []string{"alt", "a-1", strings.Repeat("a", 100), strings.Repeat("a", 101), strings.Repeat("a", 128), "", "Net", "a_b", "a/b"} {
		_, lerr := ledger.NewBranchID(id)
		if serr := validBranchID(id); (serr == nil) != (lerr == nil) {
			t.Errorf("branch id of %d characters %.12q: store says %v, ledger says %v", len(id), id, serr, lerr)
		}
	}
}
