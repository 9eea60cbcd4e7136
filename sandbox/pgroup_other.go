//go:build !unix

package sandbox

import "os/exec"

// setProcessGroup has no equivalent needed here: the parent kills its
// children itself.
func setProcessGroup(cmd *exec.Cmd) {}
