package pack

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/idxfile"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// TestFindOffsetAgreesWithGoGit: the lookup that replaces go-git's
// FindOffset finds every object of a pack at the same offset, and no
// object the pack does not hold.
func TestFindOffsetAgreesWithGoGit(t *testing.T) {
	dir := t.TempDir()
	var objs []Object
	for i := range 700 {
		data := []byte(fmt.Sprintf("blob number %d\n", i))
		objs = append(objs, Object{ID: object.HashObject(object.TypeBlob, data), Type: object.TypeBlob, Data: data, Base: -1})
	}
	name, err := Write(dir, objs)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "pack-"+name.String()+".idx"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(f).Decode(idx); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		want, err := idx.FindOffset(o.ID)
		if err != nil {
			t.Fatal(err)
		}
		got, err := findOffset(idx, o.ID)
		if err != nil || got != want {
			t.Fatalf("%s: findOffset = %d, %v; go-git says %d", o.ID, got, err, want)
		}
	}
	for i := range 300 {
		absent := object.HashObject(object.TypeBlob, []byte(fmt.Sprintf("absent %d", i)))
		if off, err := findOffset(idx, absent); err == nil {
			t.Fatalf("%s, never written, found at %d", absent, off)
		}
	}
}

// TestFindOffsetLarge: an offset past 2 GiB is read from the 64-bit
// table, and one pointing past that table is an error, not a panic.
func TestFindOffsetLarge(t *testing.T) {
	id := object.HashObject(object.TypeBlob, []byte("far"))
	idx := idxfile.NewMemoryIndex()
	for i := range idx.FanoutMapping {
		idx.FanoutMapping[i] = -1
	}
	idx.FanoutMapping[id[0]] = 0
	idx.Names = [][]byte{id[:]}
	idx.Offset32 = [][]byte{binary.BigEndian.AppendUint32(nil, 0x80000001)}
	idx.Offset64 = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, 7), 5<<32)
	if off, err := findOffset(idx, id); err != nil || off != 5<<32 {
		t.Fatalf("findOffset = %d, %v; want %d", off, err, int64(5<<32))
	}
	idx.Offset64 = idx.Offset64[:8]
	if _, err := findOffset(idx, id); err == nil {
		t.Fatal("an offset past the 64-bit table was read")
	}
}
