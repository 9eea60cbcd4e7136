package gitstore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/ledger/storetest"
)

// TestStoreContract runs the ledger's store contract against both
// backends: go-git's in-memory storage and a bare repository on disk.
func TestStoreContract(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) ledger.Store {
			s, err := gitstore.OpenMemory(gitstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
	t.Run("fs", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) ledger.Store {
			s, err := gitstore.Open(filepath.Join(t.TempDir(), "p.git"), gitstore.Options{FlushInterval: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}
