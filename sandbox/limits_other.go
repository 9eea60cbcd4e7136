//go:build !unix

package sandbox

// applyLimits has no system limits to set here (Windows would need a job
// object, which the child cannot put itself into): the heap watchdog and
// the parent's deadline, which kills the child, are the limits.
func applyLimits(memoryBytes, cpuSeconds int64) {}

// closeInheritedFiles has nothing to do: the parent passes handles
// explicitly and Go creates the child without inheriting others.
func closeInheritedFiles() {}
