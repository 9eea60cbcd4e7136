package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestDiskFull(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}, true},
		{fmt.Errorf("write pack: %w", syscall.EDQUOT), true},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.EACCES}, false},
		{errors.New("no space left on device"), false}, // only the error itself counts, not its words
		{nil, false},
	} {
		if got := DiskFull(tc.err); got != tc.want {
			t.Errorf("DiskFull(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// SetFault fails the syncs and renames it is asked to, naming the path,
// and nothing once restored.
func TestSetFault(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	restore := SetFault(func(path string) error {
		if path == full || path == dir {
			return syscall.ENOSPC
		}
		return nil
	})
	defer restore()
	f, err := os.Create(full)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := Datasync(f); !DiskFull(err) {
		t.Errorf("Datasync of a failed path = %v", err)
	}
	if err := SyncDir(dir); !DiskFull(err) {
		t.Errorf("SyncDir of a failed path = %v", err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Rename(other, full); !DiskFull(err) {
		t.Errorf("Rename onto a failed path = %v", err)
	}
	if err := Rename(full+"x", other+"x"); DiskFull(err) {
		t.Errorf("Rename elsewhere failed with the fault: %v", err)
	}
	restore()
	if err := Datasync(f); err != nil {
		t.Errorf("Datasync once restored: %v", err)
	}
	if err := Rename(other, full); err != nil {
		t.Errorf("Rename once restored: %v", err)
	}
}
