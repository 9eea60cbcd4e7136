package pack

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// TestReadRaw reads every entry of a pack unresolved: whole entries come
// back as their objects, deltas with their base's offset, and each delta
// patched onto its base gives the object. A byte flipped anywhere in an
// entry is then refused with ErrCRC, and an unknown id is not found.
func TestReadRaw(t *testing.T) {
	dir := t.TempDir()
	objs := chainObjects(40)
	name, err := Write(dir, objs)
	if err != nil {
		t.Fatal(err)
	}
	ps := NewSet(dir)
	defer ps.Close()
	if err := ps.Refresh(); err != nil {
		t.Fatal(err)
	}
	byOff := map[int64][]byte{}
	var offs []int64
	for i, o := range objs {
		re, err := ps.ReadRaw(o.ID)
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		if o.Base < 0 {
			if re.Type != object.TypeBlob || re.BaseOff != -1 || !bytes.Equal(re.Data, o.Data) {
				t.Fatalf("object %d: whole entry read as type %d, base %d", i, re.Type, re.BaseOff)
			}
		} else {
			base, ok := byOff[re.BaseOff]
			if re.Type != 0 || !ok {
				t.Fatalf("object %d: delta entry read as type %d, base %d (known %v)", i, re.Type, re.BaseOff, ok)
			}
			got, err := delta.Patch(base, re.Data)
			if err != nil || !bytes.Equal(got, o.Data) {
				t.Fatalf("object %d: the delta does not give the object: %v", i, err)
			}
		}
		byOff[re.Off] = o.Data
		offs = append(offs, re.Off)
	}
	if _, err := ps.ReadRaw(object.HashObject(object.TypeBlob, []byte("absent"))); !errors.Is(err, object.ErrNotFound) {
		t.Errorf("an absent object: %v, want ErrNotFound", err)
	}
	ps.Close()

	path := filepath.Join(dir, "pack-"+name.String()+".pack")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 5, 10, 39} {
		for _, at := range []int64{offs[i], offs[i] + 1, offs[i] + 5} {
			bad := bytes.Clone(orig)
			bad[at] ^= 0x01
			os.Chmod(path, 0o644)
			if err := os.WriteFile(path, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			ps := NewSet(dir)
			if err := ps.Refresh(); err != nil {
				t.Fatal(err)
			}
			if _, err := ps.ReadRaw(objs[i].ID); !errors.Is(err, ErrCRC) {
				t.Errorf("object %d with byte %d flipped: %v, want ErrCRC", i, at, err)
			}
			ps.Close()
		}
	}
}
