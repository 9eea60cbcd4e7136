//go:build unix

package durable

import (
	"os"
	"syscall"
)

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

func openFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

func statID(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

func fileID(f *os.File) (uint64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return statID(fi), nil
}

// statPathID is the inode of the file path names, from stat(2) without
// an os.FileInfo (see pathID).
func statPathID(path string) (uint64, error) {
	var st syscall.Stat_t
	for {
		err := syscall.Stat(path, &st)
		if err == nil {
			return uint64(st.Ino), nil
		}
		if err != syscall.EINTR {
			return 0, &os.PathError{Op: "stat", Path: path, Err: err}
		}
	}
}

func diskFull(error) bool { return false }
