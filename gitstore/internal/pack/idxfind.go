package pack

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing/format/idxfile"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// findOffset looks id up in a pack index: its offset in the pack, and
// whether the index holds it. It replaces idxfile.MemoryIndex.FindOffset,
// which remembers every offset it returns in a map kept for reverse
// lookups we never make: reading a million-thought ledger once (a push)
// grew that map by the whole pack's object count, hundreds of megabytes.
func findOffset(idx *idxfile.MemoryIndex, id object.Hash) (int64, bool, error) {
	k := idx.FanoutMapping[id[0]]
	if k < 0 || k >= len(idx.Names) || k >= len(idx.Offset32) {
		return 0, false, nil
	}
	names := idx.Names[k]
	n := min(len(names)/len(id), len(idx.Offset32[k])/4)
	lo, hi := 0, n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch c := bytes.Compare(id[:], names[mid*len(id):(mid+1)*len(id)]); {
		case c == 0:
			o := binary.BigEndian.Uint32(idx.Offset32[k][mid*4:])
			if o&(1<<31) == 0 {
				return int64(o), true, nil
			}
			j := 8 * int(o&0x7fffffff)
			if j+8 > len(idx.Offset64) {
				return 0, false, fmt.Errorf("object %s: 64-bit offset %d out of range of the index", id, o&0x7fffffff)
			}
			return int64(binary.BigEndian.Uint64(idx.Offset64[j:])), true, nil
		case c < 0:
			hi = mid
		default:
			lo = mid + 1
		}
	}
	return 0, false, nil
}
