//go:build !linux

package sandbox

import (
	"os"
	"os/exec"
)

// childCommand runs this binary again, found through os.Executable (there
// is no /proc/self/exe here).
func childCommand() (*exec.Cmd, error) {
	path, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path)
	setProcessGroup(cmd)
	return cmd, nil
}
