//go:build linux || darwin

package sandbox

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// applyLimits sets the child's own resource limits before any untrusted
// code runs. The address-space limit is counted on top of what the process
// already maps (the Go runtime reserves address space before main), so
// that memoryBytes is what the scripts may add.
//
// CPU: the soft limit sends SIGXCPU, which the child turns into a known
// exit code; the hard limit, a second later, is the kernel's SIGKILL for
// a child too busy to handle the signal.
func applyLimits(memoryBytes, cpuSeconds int64) {
	if memoryBytes > 0 && !raceEnabled {
		if base := mappedBytes(); base > 0 {
			lim := uint64(base + memoryBytes + threadAllowance)
			// Best effort: where RLIMIT_AS is not enforced (darwin), the
			// heap watchdog is the limit.
			_ = syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: lim, Max: lim})
		}
	}
	if cpuSeconds > 0 {
		xcpu := make(chan os.Signal, 1)
		signal.Notify(xcpu, syscall.SIGXCPU)
		go func() {
			<-xcpu
			fmt.Fprintf(os.Stderr, "sandbox: CPU limit of %ds reached\n", cpuSeconds)
			os.Exit(exitCPU)
		}()
		_ = syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: uint64(cpuSeconds), Max: uint64(cpuSeconds) + 1})
	}
}

// threadAllowance is address space the limit leaves for what is not the
// scripts' memory: in a binary that links cgo, each thread the Go runtime
// starts reserves an 8 MiB pthread stack, and a loaded machine makes the
// runtime start more of them. Without it, a child holding 8 MB of heap
// failed to map its next 4 MiB block (seen under load in the notebook
// tests, whose binary links cgo through net). The heap watchdog still
// holds the scripts to memoryBytes.
const threadAllowance = 256 << 20

// mappedBytes is the process's current address space, from
// /proc/self/status (0 where there is no such file).
func mappedBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// closeInheritedFiles closes every descriptor above stderr that the child
// did not open itself. Go's own files are close-on-exec, but a descriptor
// the server inherited without that flag (from a shell or a supervisor)
// would otherwise reach the child through exec. It runs before the child
// opens anything; the Go runtime's own poller descriptors (anonymous
// inodes, made only once something waits on a timer or a file) are left
// alone.
func closeInheritedFiles() {
	dir := "/proc/self/fd"
	if _, err := os.Stat(dir); err != nil {
		dir = "/dev/fd"
	}
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	self := int(d.Fd())
	var fds []int
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd <= 2 || fd == self {
			continue
		}
		if target, err := os.Readlink(dir + "/" + n); err == nil && strings.HasPrefix(target, "anon_inode:") {
			continue
		}
		fds = append(fds, fd)
	}
	d.Close()
	for _, fd := range fds {
		_ = syscall.Close(fd)
	}
}
