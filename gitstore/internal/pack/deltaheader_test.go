package pack

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// TestReadDamagedDeltaHeader rewrites the header of small whole entries so
// they claim to be deltas whose base (an offset or an id) runs past the end
// of the entry. Such a pack is damaged, not malicious, and a read must say
// so with an error rather than panic on a short slice.
func TestReadDamagedDeltaHeader(t *testing.T) {
	dir := t.TempDir()
	var objs []Object
	for i := 0; i < 8; i++ {
		data := []byte(fmt.Sprintf("x%d", i))
		objs = append(objs, Object{ID: object.HashObject(object.TypeBlob, data), Type: object.TypeBlob, Data: data, Base: -1})
	}
	name, err := Write(dir, objs)
	if err != nil {
		t.Fatal(err)
	}
	ps := NewSet(dir)
	if err := ps.Refresh(); err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for _, o := range objs {
		re, err := ps.ReadRaw(o.ID)
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, re.Off)
	}
	ps.Close()
	path := filepath.Join(dir, "pack-"+name.String()+".pack")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range objs {
		for _, c := range []struct {
			name string
			edit func(b []byte, off int64)
		}{
			{"ref delta", func(b []byte, off int64) { b[off] = 7<<4 | b[off]&0x0f }},
			{"offset delta running off the end", func(b []byte, off int64) {
				b[off] = 6<<4 | b[off]&0x0f
				for p := off + 1; p < int64(len(b))-20; p++ {
					b[p] = 0xff
				}
			}},
		} {
			damaged := append([]byte(nil), orig...)
			c.edit(damaged, offs[i])
			if err := os.WriteFile(path, damaged, 0o644); err != nil {
				t.Fatal(err)
			}
			ps := NewSet(dir)
			if err := ps.Refresh(); err != nil {
				t.Fatal(err)
			}
			if _, _, err := ps.Read(o.ID); err == nil {
				t.Errorf("entry %d as a %s: read without an error", i, c.name)
			}
			ps.Close()
		}
	}
}
