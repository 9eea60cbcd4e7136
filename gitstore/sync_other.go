//go:build !linux

package gitstore

import "os"

func datasync(f *os.File) error { return f.Sync() }
