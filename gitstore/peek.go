package gitstore

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
)

// The functions here read names from a repository without opening it as a
// Store: no lock, no log replay, nothing written. Shell completion uses
// them, where a command must answer at once and never change anything.
// They see what is published to plain Git (a session created in the last
// fraction of a second may still be only in the log).

// PeekSessionIDs lists the ids of the sessions whose main ref is published
// in the repository at gitDir, sorted.
func PeekSessionIDs(gitDir string, l Layout) []string {
	var ids []string
	for _, name := range peekRefs(gitDir, l.sessions()) {
		if id, ok := strings.CutSuffix(strings.TrimPrefix(name, l.sessions()), "/main"); ok && validSessionID(id) == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// PeekBranches lists the reasoning branches of session id, sorted.
func PeekBranches(gitDir string, l Layout, id string) []string {
	if validSessionID(id) != nil {
		return nil
	}
	prefix := l.sessions() + id + "/branches/"
	var out []string
	for _, name := range peekRefs(gitDir, prefix) {
		if b := strings.TrimPrefix(name, prefix); validBranchID(b) == nil {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// peekRefs lists the published refs under prefix: loose ref files and the
// packed-refs file.
func peekRefs(gitDir, prefix string) []string {
	var out []string
	root := filepath.Join(gitDir, filepath.FromSlash(prefix))
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".lock") {
			return nil
		}
		rel, err := filepath.Rel(gitDir, path)
		if err == nil {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if f, err := os.Open(filepath.Join(gitDir, "packed-refs")); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if _, name, ok := strings.Cut(sc.Text(), " "); ok && strings.HasPrefix(name, prefix) {
				out = append(out, name)
			}
		}
	}
	return out
}

// PeekLog says what waits in the write-ahead log of the repository at
// gitDir: how many complete records (thoughts and other changes not yet
// in plain Git) and how many bytes they take. A writer's flusher empties
// the log within a fraction of a second; records that stay there belong to
// a process that died, and the next process to open the ledger recovers
// them.
func PeekLog(gitDir string) (records int, size int64) {
	data, err := os.ReadFile(filepath.Join(gitDir, "thoughtbox", "log"))
	if err != nil {
		return 0, 0
	}
	off := 0
	if len(data) >= len(wal.Magic) && string(data[:len(wal.Magic)]) == string(wal.Magic) {
		off = len(wal.Magic)
	}
	for off+8 <= len(data) {
		n := int(uint32(data[off])<<24 | uint32(data[off+1])<<16 | uint32(data[off+2])<<8 | uint32(data[off+3]))
		if n == 0 || off+8+n > len(data) {
			break
		}
		records++
		size += int64(8 + n)
		off += 8 + n
	}
	return records, size
}
