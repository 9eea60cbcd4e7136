//go:build !unix

package pack

import (
	"errors"
	"os"
)

// mapFile is not used here: the index is read with pread.
func mapFile(*os.File, int64) ([]byte, error) {
	return nil, errors.New("no memory mapping on this system")
}

func unmapFile([]byte) {}
