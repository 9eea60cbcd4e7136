package durable

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPathIDWithoutStatx: where statx is missing or filtered, pathID
// answers from stat(2), with the same inode, and names the path in its
// error.
func TestPathIDWithoutStatx(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	viaStatx, err := pathID(path)
	if err != nil {
		t.Fatal(err)
	}
	noStatx.Store(true)
	t.Cleanup(func() { noStatx.Store(false) })
	viaStat, err := pathID(path)
	if err != nil {
		t.Fatal(err)
	}
	if viaStat != viaStatx || viaStat == 0 {
		t.Fatalf("stat gave inode %d, statx %d", viaStat, viaStatx)
	}
	if _, err := pathID(path + ".missing"); !os.IsNotExist(err) {
		t.Fatalf("a missing file: %v, want a not-exist error", err)
	}
}
