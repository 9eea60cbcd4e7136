//go:build unix

package stdio

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pollable returns a reader of the same input that waits in the Go
// runtime's poller, when r is a pipe or socket read with blocking system
// calls (stdin as an MCP client starts the server), and a function that
// closes what pollable opened and puts the input back into blocking mode.
// For any other r it returns r itself.
//
// A blocking read holds one of the runtime's processors in the kernel
// between calls. With two of them, as on the two-core machine of
// BENCHMARKS.md, a thought's fdatasync then holds the other, and the
// runtime's monitor keeps taking processors back and waking threads every
// 20 µs: over stdio with one agent, a quarter of the server's context
// switches. Waiting in the poller leaves the processor free.
//
// The descriptor is duplicated, so the caller's file (os.Stdin) is never
// closed here, and closing the duplicate ends a read waiting on it, so
// that the reader goroutine stops with the connection instead of taking
// input meant for the caller. The non-blocking flag belongs to the open
// file both share, so it is cleared again on close. Terminals and regular
// files are left alone (a terminal is shared with the shell).
func pollable(r io.Reader) (io.Reader, func()) {
	f, ok := r.(*os.File)
	if !ok {
		return r, func() {}
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return r, func() {}
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return r, func() {}
	}
	dup := -1
	var dupErr error
	if err := rc.Control(func(fd uintptr) {
		var flags int
		flags, dupErr = unix.FcntlInt(fd, unix.F_GETFL, 0)
		if dupErr == nil && flags&unix.O_NONBLOCK != 0 {
			// Non-blocking already, so the runtime polls f itself.
			dupErr = unix.EALREADY
		}
		if dupErr == nil {
			dup, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
		}
	}); err != nil || dupErr != nil {
		return r, func() {}
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return r, func() {}
	}
	// NewFile sees the flag and registers the descriptor with the poller.
	pf := os.NewFile(uintptr(dup), f.Name())
	return pf, func() {
		// Closed first: a read waiting in the poller ends at once,
		// whereas after the flag is cleared it would block in the kernel.
		pf.Close()
		rc.Control(func(fd uintptr) { unix.SetNonblock(int(fd), false) })
	}
}
