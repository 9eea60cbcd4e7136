package durable

import (
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noStatx is set once statx proved missing (a kernel before 4.11, or a
// sandbox's filter answering ENOSYS or EPERM) or not to report the inode:
// pathID then asks stat(2) as before, which gives the real error if any.
var noStatx atomic.Bool

// pathID asks statx(2) for the inode alone. A stat(2) reports the change
// time, and with multigrain timestamps (ext4, xfs, btrfs and tmpfs since
// Linux 6.13) a change time that was looked at makes the next write stamp
// the file with a fine-grained time instead of the coarse one, so every
// write changes the inode. The write-ahead log's path is checked before
// each append; on ext4 without a journal an fdatasync then writes the
// inode's block as well as the data, synchronously, which costs processor
// time and latency on every durable thought (BENCHMARKS.md, "Tuning: what
// each trick was measured to buy"). Asking for neither time leaves the
// timestamps coarse.
func pathID(path string) (uint64, error) {
	if !noStatx.Load() {
		var sx unix.Statx_t
		for {
			err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_INO, &sx)
			if err == nil && sx.Mask&unix.STATX_INO != 0 {
				return sx.Ino, nil
			}
			if err == nil || err == unix.ENOSYS || err == unix.EPERM {
				noStatx.Store(true)
				break
			}
			if err != unix.EINTR {
				return 0, &os.PathError{Op: "statx", Path: path, Err: err}
			}
		}
	}
	return statPathID(path)
}
