//go:build unix

package durable

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes flock's exclusive lock without waiting. The kernel drops
// it when the last descriptor of this open file is closed, which includes
// the process dying however it dies.
func tryLock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return false, err
	}
}

func unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// alive reports whether a process with this pid exists. EPERM means it
// exists but belongs to someone else.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// removable is whether Mutex.Remove deletes the files: an open file can be deleted: its descriptors keep it until closed.
const removable = true
