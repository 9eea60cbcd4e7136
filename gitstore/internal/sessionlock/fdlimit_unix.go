//go:build unix

package sessionlock

import "syscall"

// openFileLimit is the process's soft limit on open files (which Go
// raises to the hard limit at start), 0 when unknown.
func openFileLimit() uint64 {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) != nil {
		return 0
	}
	return uint64(rl.Cur)
}
