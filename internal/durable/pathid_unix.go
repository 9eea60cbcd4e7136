//go:build unix && !linux

package durable

// pathID is os.Stat's inode without its FileInfo: a writer asks it of
// its session's lock file once per thought, and the allocation was most
// of what the call cost besides the system call.
func pathID(path string) (uint64, error) { return statPathID(path) }
