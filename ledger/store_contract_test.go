package ledger_test

import (
	"testing"

	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/ledger/storetest"
)

// TestFakeStoreContract holds the fake store the ledger's tests run on to
// the contract the real stores keep, so that what the ledger's tests show
// with it holds for them too.
func TestFakeStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) ledger.Store { return newFakeStore() })
}
