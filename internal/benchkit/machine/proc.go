package machine

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProcCPU is the CPU a process has used, user and system, from
// /proc/<pid>/stat (fields 14 and 15, in clock ticks of 10 ms); 0 where
// there is no /proc or no such process. pid 0 means this process.
func ProcCPU(pid int) time.Duration {
	data, err := os.ReadFile(procFile(pid, "stat"))
	if err != nil {
		return 0
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// Memory is a process's resident memory, from /proc/<pid>/status: the
// total, its anonymous part (the Go heap, stacks and runtime) and its
// file-backed part (mostly the binary's code), in bytes.
type Memory struct{ RSS, Anon, File int64 }

// ProcMemory reads a process's Memory (zero where there is no /proc or no
// such process). pid 0 means this process.
func ProcMemory(pid int) Memory {
	var m Memory
	data, err := os.ReadFile(procFile(pid, "status"))
	if err != nil {
		return m
	}
	kb := func(v string) int64 {
		n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		return n * 1024
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			m.RSS = kb(v)
		} else if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			m.Anon = kb(v)
		} else if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			m.File = kb(v)
		}
	}
	return m
}

func procFile(pid int, name string) string {
	if pid == 0 {
		return "/proc/self/" + name
	}
	return fmt.Sprintf("/proc/%d/%s", pid, name)
}
