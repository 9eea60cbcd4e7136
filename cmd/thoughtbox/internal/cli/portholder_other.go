//go:build !linux

package cli

// portHolder names the process listening on a TCP port where the system
// tells; here it does not without tools we do not run.
func portHolder(port int) string { return "" }
