package sandbox

import (
	"os"
	"os/exec"
	"syscall"
)

// childCommand runs this very binary: /proc/self/exe stays the running
// executable even if the file was replaced by an upgrade since, so parent
// and child always speak the same protocol.
func childCommand() (*exec.Cmd, error) {
	cmd := exec.Command("/proc/self/exe")
	if _, err := os.Stat("/proc/self/exe"); err != nil {
		path, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cmd = exec.Command(path)
	}
	// Its own process group, so a Ctrl-C on the terminal reaches the
	// server, which stops its children itself; and killed with the server
	// should the server die without doing so.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd, nil
}
