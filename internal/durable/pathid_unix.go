//go:build unix && !linux

package durable

import (
	"os"
	"syscall"
)

// pathID is os.Stat's inode without its FileInfo: a writer asks it of
// its session's lock file once per thought, and the allocation was most
// of what the call cost besides the system call.
func pathID(path string) (uint64, error) {
	var st syscall.Stat_t
	for {
		err := syscall.Stat(path, &st)
		if err == nil {
			return uint64(st.Ino), nil
		}
		if err != syscall.EINTR {
			return 0, &os.PathError{Op: "stat", Path: path, Err: err}
		}
	}
}
