//go:build !unix

package main

// calmSysmon does nothing where a process cannot exec itself in place.
func calmSysmon() {}
