//go:build unix

package observatory_test

import (
	"syscall"
	"time"
)

// smallReceiveBuffer shrinks a socket's receive buffer, so that a peer's
// writes to it block soon.
func smallReceiveBuffer(fd uintptr) {
	syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048)
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
