//go:build !unix

package sandbox

import "os"

// alive says whether a process is there (FindProcess opens it on Windows,
// which fails once it is gone).
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
