// Package machine reads what the benchmarks report about the machine they
// ran on: this process's CPU time and the load average.
package machine

import (
	"os"
	"strings"
	"time"
)

// CPUTime is the CPU this process has used, user and system: on a shared
// machine it varies less than the wall clock.
func CPUTime() time.Duration { return cpuTime() }

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
