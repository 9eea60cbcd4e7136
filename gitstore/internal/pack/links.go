package pack

import (
	"encoding/binary"
	"os"
	"path/filepath"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// Links record, for a pack, which of its objects are newer versions of
// objects in older packs, with the Git delta that rebuilds the older from
// the newer (computed by the flusher, which has both in memory). They live
// in thoughtbox/links/<pack name>, outside objects/pack where git would
// call them garbage. Format per Link: newer id, older id, u32 length, delta.

type Link struct {
	Newer, Older object.Hash
	Delta        []byte // may be empty: the merge then computes it
}

func WriteLinks(dir, pack string, links []Link) {
	// Written even when empty: in a repository shared with git, a pack's
	// links file is what marks it as one this engine wrote and may merge.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	var buf []byte
	for _, l := range links {
		buf = append(buf, l.Newer[:]...)
		buf = append(buf, l.Older[:]...)
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(l.Delta)))
		buf = append(buf, l.Delta...)
	}
	os.WriteFile(filepath.Join(dir, pack), buf, 0o644)
}

func ReadLinks(dir, pack string) []Link {
	data, err := os.ReadFile(filepath.Join(dir, pack))
	if err != nil {
		return nil
	}
	var out []Link
	for len(data) >= 44 {
		var l Link
		copy(l.Newer[:], data[:20])
		copy(l.Older[:], data[20:40])
		n := int(binary.BigEndian.Uint32(data[40:44]))
		if len(data) < 44+n {
			break
		}
		l.Delta = data[44 : 44+n]
		out = append(out, l)
		data = data[44+n:]
	}
	return out
}
