package durable

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
)

// DiskFull says whether err is the file system refusing to grow: no space
// left, or the user's quota spent. Such a failure passes once room is
// made, so what cannot be written yet is kept and retried, not lost.
func DiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || diskFull(err)
}

// fault, when set by SetFault, is asked before each sync and rename.
var fault atomic.Pointer[func(path string) error]

// SetFault makes Datasync, SyncDir and Rename fail with what fn returns
// for the file or directory synced or renamed onto (nil lets it go on),
// until restore is called. Every durable write ends in a sync or in a
// rename into place, so this is how tests
// in other packages, and test binaries acting as the CLI, fill the disk at
// a chosen place deterministically; nothing else calls it.
func SetFault(fn func(path string) error) (restore func()) {
	fault.Store(&fn)
	return func() { fault.Store(nil) }
}

func injected(op, path string) error {
	p := fault.Load()
	if p == nil {
		return nil
	}
	if err := (*p)(path); err != nil {
		return &os.PathError{Op: op, Path: path, Err: err}
	}
	return nil
}
