//go:build !unix

package sessionlock

// openFileLimit is 0 (unknown) where there is no RLIMIT_NOFILE: Windows
// has no small per-process limit on open handles.
func openFileLimit() uint64 { return 0 }
