package gitstore

import (
	"os"
	"syscall"
)

// datasync flushes a file's data and size to stable storage; it skips the
// timestamps that a full fsync also writes.
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
