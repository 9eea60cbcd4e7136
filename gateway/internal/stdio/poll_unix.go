//go:build unix

package stdio

import (
	"io"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// pollable returns a reader of the same input that waits for it in the
// kernel, in poll(2), when r is a pipe or socket (stdin as an MCP client
// starts the server), and a function that stops that reader and closes
// what pollable opened. For any other r it returns r itself.
//
// Two ways of waiting were tried before. A blocking read(2) cannot be
// interrupted, so the reader goroutine outlived the connection and took
// input meant for the caller. The runtime's poller (a non-blocking
// duplicate read through os.File) can be interrupted, but a goroutine
// parked in it leaves every processor of the runtime idle between calls,
// and that is when the runtime's monitor thread, sysmon, goes into its
// deep sleep: the next call's first system call wakes it, and it then
// polls every 20 µs for a millisecond, which with one agent is the whole
// of every call (BENCHMARKS.md, "Tuning: what each trick was measured to
// buy"). A goroutine waiting in a system call keeps its processor (for up
// to 10 ms, after which sysmon hands it back and may sleep after all), so
// sysmon stays at its backed-off pace, and the call that arrives is read
// on the same thread without the poller's hand-offs: poll(2), read(2),
// and the answer's write(2) are the system calls of a call.
//
// poll(2) also watches a pipe of our own, which the returned function
// closes to end a wait, so that the reader stops with the connection and
// what arrives afterwards is the caller's to read. The descriptor read is
// a duplicate, so the caller's file (os.Stdin) is never closed here, and
// nothing about the open file (its blocking mode, which a shell shares)
// is changed. Terminals and regular files are left alone.
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
		dup, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil || dupErr != nil {
		return r, func() {}
	}
	// Under ForkLock, as os does, so that no child started meanwhile (the
	// sandbox's) inherits the write end: its copy would keep the close
	// below from ending the wait.
	var wake [2]int
	syscall.ForkLock.RLock()
	err = unix.Pipe(wake[:])
	if err == nil {
		unix.CloseOnExec(wake[0])
		unix.CloseOnExec(wake[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		unix.Close(dup)
		return r, func() {}
	}
	w := &waitReader{fd: dup, wake: wake[0], name: f.Name()}
	var once sync.Once
	return w, func() {
		once.Do(func() {
			// Closing the pipe's other end ends a wait in poll(2); the
			// reader holds mu while it waits and reads, so once mu is
			// ours no read is under way, and none starts after.
			unix.Close(wake[1])
			w.mu.Lock()
			w.done = true
			unix.Close(w.fd)
			unix.Close(w.wake)
			w.mu.Unlock()
		})
	}
}

// waitReader reads a pipe or socket, waiting for input in poll(2); see
// pollable.
type waitReader struct {
	mu   sync.Mutex
	fd   int // the input, duplicated
	wake int // read end of the pipe whose write end stops the reader
	name string
	done bool
	fds  [2]unix.PollFd
}

func (w *waitReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		if w.done {
			return 0, os.ErrClosed
		}
		w.fds = [2]unix.PollFd{
			{Fd: int32(w.fd), Events: unix.POLLIN},
			{Fd: int32(w.wake), Events: unix.POLLIN},
		}
		if _, err := unix.Poll(w.fds[:], -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return 0, &os.PathError{Op: "poll", Path: w.name, Err: err}
		}
		if w.fds[1].Revents != 0 {
			return 0, os.ErrClosed
		}
		if w.fds[0].Revents == 0 {
			continue
		}
		// syscall.Read, as os.File reads: under the race detector it is
		// ordered after syscall.Write to the other end.
		n, err := syscall.Read(w.fd, p)
		switch {
		case err == syscall.EINTR || err == syscall.EAGAIN:
			// A signal, or a descriptor the caller set non-blocking
			// whose input another reader took first: wait again.
			continue
		case err != nil:
			return 0, &os.PathError{Op: "read", Path: w.name, Err: err}
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}
