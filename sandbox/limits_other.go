//go:build !linux && !darwin

package sandbox

// applyLimits sets no system limits here (Windows would need a job object,
// which the child cannot put itself into; the BSDs are not tried): the
// heap watchdog and the parent's deadline, which kills the child, are the
// limits.
func applyLimits(memoryBytes, cpuSeconds int64) {}

// closeInheritedFiles does nothing here: on Windows the parent passes
// handles explicitly and Go creates the child without inheriting others;
// elsewhere, descriptors left inheritable by the server's own parent may
// reach the child.
func closeInheritedFiles() {}
