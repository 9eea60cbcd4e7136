//go:build windows

package durable

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// Windows byte-range locks are mandatory: a locked range cannot be read or
// written by other processes. So the lock covers one byte far past any
// real content, and the file itself (the write-ahead log, a holder
// record) stays readable by everyone. The OS releases it when the handle
// is closed, including when the process dies.
const (
	lockOffHigh = 0x7fffffff
	lockOffLow  = 0
)

func tryLock(f *os.File) (bool, error) {
	ol := windows.Overlapped{OffsetHigh: lockOffHigh, Offset: lockOffLow}
	err := windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return false, nil
	}
	return false, err
}

func unlock(f *os.File) error {
	ol := windows.Overlapped{OffsetHigh: lockOffHigh, Offset: lockOffLow}
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		// Access denied means the process exists; anything else, that
		// it does not.
		return errors.Is(err, windows.ERROR_ACCESS_DENIED)
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return true
	}
	return code == 259 // STILL_ACTIVE
}

// removable is whether Mutex.Remove deletes the files: deleting a file another process has open leaves it pending deletion, and opening its name fails until every handle is closed: a writer would fail instead of waiting.
const removable = false
