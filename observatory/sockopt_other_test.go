//go:build !unix

package observatory_test

import (
	"syscall"
	"time"
)

// smallReceiveBuffer shrinks a socket's receive buffer, so that a peer's
// writes to it block soon.
func smallReceiveBuffer(fd uintptr) {
	syscall.SetsockoptInt(syscall.Handle(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048)
}

// cpuTime is not measured here; the benchmark reports 0.
func cpuTime() time.Duration { return 0 }
