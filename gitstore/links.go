package gitstore

import (
	"os"
	"path/filepath"
)

// Links record, for a pack, which of its objects are newer versions of
// objects in older packs: pairs {newer, older}. They live in
// thoughtbox/links/<pack name>, outside objects/pack where git would call
// them garbage.

func writeLinks(dir, pack string, links [][2]hash) {
	if len(links) == 0 {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	buf := make([]byte, 0, 40*len(links))
	for _, l := range links {
		buf = append(buf, l[0][:]...)
		buf = append(buf, l[1][:]...)
	}
	os.WriteFile(filepath.Join(dir, pack), buf, 0o644)
}

func readLinks(dir, pack string) [][2]hash {
	data, err := os.ReadFile(filepath.Join(dir, pack))
	if err != nil {
		return nil
	}
	var out [][2]hash
	for len(data) >= 40 {
		var l [2]hash
		copy(l[0][:], data[:20])
		copy(l[1][:], data[20:40])
		out = append(out, l)
		data = data[40:]
	}
	return out
}
