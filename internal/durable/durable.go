// Package durable is the platform layer under the store: syncing files and
// directories to stable storage, renames that replace, and inter-process
// file locks that a dead process releases and a live one holds only a
// bounded time. Each operation has one unix and one windows implementation
// behind the functions here, so the write path has no platform-specific
// call of its own.
package durable

import (
	"os"
	"time"
)

// Datasync flushes a file's data and size to stable storage. On Linux it
// skips the timestamps a full fsync also writes; on macOS it is
// F_FULLFSYNC (what os.File.Sync does there), since a plain fsync leaves
// the data in the drive's cache; on Windows it is FlushFileBuffers.
func Datasync(f *os.File) error {
	if err := injected("sync", f.Name()); err != nil {
		return err
	}
	return datasync(f)
}

// SyncDir makes a directory's entries (new files, renames) durable. On
// Windows a rename is made durable by Rename itself (write-through), and
// directories cannot be flushed, so it does nothing there.
func SyncDir(dir string) error {
	if dirSynced != nil {
		dirSynced(dir)
	}
	if err := injected("sync", dir); err != nil {
		return err
	}
	return syncDir(dir)
}

// dirSynced, when set (by tests), sees each directory SyncDir is asked to
// sync: a missing directory sync cannot be seen any other way short of a
// power cut.
var dirSynced func(dir string)

// Rename moves oldpath onto newpath, replacing newpath atomically: a
// reader opening newpath finds the old file or the new one, never neither.
// On Windows, where a file another process has open may refuse to be
// replaced for a moment (a virus scanner, a reader), it retries briefly
// and then returns the error; newpath is left as it was.
func Rename(oldpath, newpath string) error {
	if err := injected("rename", newpath); err != nil {
		return err
	}
	return rename(oldpath, newpath)
}

// OpenFile opens a file as os.OpenFile does, except that on Windows other
// processes may rename or delete it while it is open (FILE_SHARE_DELETE),
// as they may on unix. The write-ahead log needs that: a flusher replaces
// it while other processes hold it open.
func OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return openFile(name, flag, perm)
}

// FileID identifies the file f has open (device and inode, or volume and
// file index), so that a caller can tell whether a path still names it.
func FileID(f *os.File) (uint64, error) { return fileID(f) }

// PathID is FileID for the file path names now.
func PathID(path string) (uint64, error) { return pathID(path) }

// StatID is the inode in fi on unix, for caches keyed by file identity;
// on Windows, where a FileInfo from os.Stat does not carry the file index,
// it is 0 and callers must rely on the rest of their key.
func StatID(fi os.FileInfo) uint64 { return statID(fi) }

// RacyWindow is how long a file's modification time must lie in the past
// before a cache keyed by it may be trusted, where times are coarse: FAT
// keeps two seconds, some file systems (ext4 with small inodes, HFS+) one.
const RacyWindow = 3 * time.Second

// RacyTick is how long any modification time must lie in the past before
// it is trusted, however fine it looks: times that carry nanoseconds still
// move only with the kernel's clock tick (4 ms at 250 Hz on Linux before
// multigrain timestamps, 15.6 ms on Windows), so two writes within a tick
// leave the same time.
const RacyTick = 100 * time.Millisecond

// Racy reports whether a file last modified at mtime, looked at now, may
// still be rewritten without its time changing, so that its inode, size
// and time together do not tell a rewrite: its time is less than RacyTick
// old, or it is a whole millisecond (as a coarse file system keeps it)
// and less than RacyWindow old. Once older, any later rewrite gets a
// later time. Git's index guards "racily clean" entries the same way.
// A time ahead of now counts as recent only up to RacyWindow ahead: one
// further ahead (a file server's clock, a clock stepped back) would
// otherwise stay racy for good, and every cache keyed by it would be
// read again at each look.
func Racy(mtime, now time.Time) bool {
	age := now.Sub(mtime)
	if age <= -RacyWindow {
		return false
	}
	return age < RacyTick || (Coarse(mtime) && age < RacyWindow)
}

// Coarse reports whether a modification time is a whole millisecond, as
// file systems that keep seconds (or FAT's two seconds, exFAT's 10 ms)
// give it; a finer time is one in a million.
func Coarse(mtime time.Time) bool {
	return mtime.Nanosecond()%int(time.Millisecond) == 0
}
