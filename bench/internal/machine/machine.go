// Package machine reads what the benchmarks report about the machine they
// ran on: this process's CPU time and the load average.
package machine

import (
	"os"
	"strings"
	"syscall"
	"time"
)

// CPUTime is the CPU this process has used, user and system: on a shared
// machine it varies less than the wall clock.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// LoadAvg is the first three fields of /proc/loadavg, to say how busy the
// machine was ("unknown" where there is none).
func LoadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
