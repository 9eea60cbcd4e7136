//go:build unix && !linux

package sandbox

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the child in its own process group, so that a
// Ctrl-C on the terminal reaches the server, which stops its children.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
