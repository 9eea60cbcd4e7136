//go:build !linux

package durable

import "os"

// os.File.Sync is fsync with F_FULLFSYNC on darwin and FlushFileBuffers on
// windows: both reach the platter (or flash), not only the drive's cache.
func datasync(f *os.File) error { return f.Sync() }
