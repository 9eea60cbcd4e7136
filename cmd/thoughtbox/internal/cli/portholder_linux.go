package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// portHolder names the process listening on a TCP port ("pid 1234
// (thoughtbox serve)"), or "" when it cannot be told: the socket is found
// by its inode in /proc/net/tcp{,6}, then the process by a descriptor that
// links to that socket. Another user's process cannot be looked into
// (unless we are root): then only the port is named.
func portHolder(port int) string {
	inodes := listeningInodes(port)
	if len(inodes) == 0 {
		return ""
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err == nil && inodes[link] {
				return fmt.Sprintf("pid %d (%s)", pid, commandLineOf(pid))
			}
		}
	}
	return ""
}

// listeningInodes are the sockets listening on port, as the links of
// /proc/<pid>/fd spell them ("socket:[12345]").
func listeningInodes(port int) map[string]bool {
	inodes := map[string]bool{}
	want := fmt.Sprintf(":%04X", port)
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Scan() // the header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			f := strings.Fields(sc.Text())
			const listen = "0A"
			if len(f) > 9 && strings.HasSuffix(f[1], want) && f[3] == listen {
				inodes["socket:["+f[9]+"]"] = true
			}
		}
	}
	return inodes
}

// commandLineOf is a process's command line, its arguments joined by
// spaces and cut to a readable length.
func commandLineOf(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return "?"
	}
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}
