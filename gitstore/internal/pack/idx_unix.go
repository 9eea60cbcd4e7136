//go:build unix

package pack

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the whole of f read-only.
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, errors.New("cannot map a file of this size")
	}
	return unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
}

func unmapFile(b []byte) { unix.Munmap(b) }
