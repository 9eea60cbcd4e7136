package repo

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/refs"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// RefsStamp identifies the state of the refs under prefix without reading
// them: the packed refs file's identity, size and modification time, and
// the few loose and logged refs laid over it, hashed. Git never rewrites
// packed-refs in place (it writes packed-refs.lock and renames it), so any
// change to a packed ref gives another file. packedAt is packed-refs'
// modification time (zero when there is none), for callers that must
// allow for coarse file times.
func (b *FS) RefsStamp(ctx context.Context, prefix string) (stamp [sha1.Size]byte, packedAt time.Time, err error) {
	locked, err := b.rlock(ctx)
	if err != nil {
		return stamp, packedAt, err
	}
	defer b.runlock(locked)
	h := sha1.New()
	fi, err := os.Stat(filepath.Join(b.gitDir, "packed-refs"))
	switch {
	case err == nil:
		fmt.Fprintf(h, "packed-refs %d %d %d\n", durable.StatID(fi), fi.Size(), fi.ModTime().UnixNano())
		packedAt = fi.ModTime()
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(h, "no packed-refs\n")
	default:
		return stamp, packedAt, err
	}
	over, err := refs.ListLoose(b.gitDir, prefix)
	if err != nil {
		return stamp, packedAt, err
	}
	lines := make([]string, 0, len(over))
	for n, id := range over {
		lines = append(lines, "loose "+n+" "+id.String())
	}
	for n, id := range b.refs {
		if strings.HasPrefix(n, prefix) {
			lines = append(lines, "logged "+n+" "+id.String())
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Fprintln(h, l)
	}
	h.Sum(stamp[:0])
	return stamp, packedAt, nil
}
