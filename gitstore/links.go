package gitstore

import (
	"encoding/binary"
	"os"
	"path/filepath"
)

// Links record, for a pack, which of its objects are newer versions of
// objects in older packs, with the Git delta that rebuilds the older from
// the newer (computed by the flusher, which has both in memory). They live
// in thoughtbox/links/<pack name>, outside objects/pack where git would
// call them garbage. Format per link: newer id, older id, u32 length, delta.

type link struct {
	newer, older hash
	delta        []byte // may be empty: the merge then computes it
}

func writeLinks(dir, pack string, links []link) {
	if len(links) == 0 {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	var buf []byte
	for _, l := range links {
		buf = append(buf, l.newer[:]...)
		buf = append(buf, l.older[:]...)
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(l.delta)))
		buf = append(buf, l.delta...)
	}
	os.WriteFile(filepath.Join(dir, pack), buf, 0o644)
}

func readLinks(dir, pack string) []link {
	data, err := os.ReadFile(filepath.Join(dir, pack))
	if err != nil {
		return nil
	}
	var out []link
	for len(data) >= 44 {
		var l link
		copy(l.newer[:], data[:20])
		copy(l.older[:], data[20:40])
		n := int(binary.BigEndian.Uint32(data[40:44]))
		if len(data) < 44+n {
			break
		}
		l.delta = data[44 : 44+n]
		out = append(out, l)
		data = data[44+n:]
	}
	return out
}
