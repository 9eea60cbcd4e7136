package pack

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// chainObjects is n versions of a growing file, every tenth whole and the
// others OFS deltas of the version before, as Write takes them.
func chainObjects(n int) []Object {
	var objs []Object
	var prev []byte
	for i := 0; i < n; i++ {
		var b bytes.Buffer
		for j := 0; j <= i; j++ {
			fmt.Fprintf(&b, "line %d of a thought\n", j)
		}
		data := b.Bytes()
		o := Object{ID: object.HashObject(object.TypeBlob, data), Type: object.TypeBlob, Data: data, Base: -1}
		if prev != nil && i%10 != 0 {
			o.Base = len(objs) - 1
			o.Delta = delta.Diff(prev, data).GitDelta(len(prev))
		}
		objs = append(objs, o)
		prev = data
	}
	return objs
}

// openSet opens the packs of dir as a Set, closed when the test ends.
func openSet(t *testing.T, dir string) *Set {
	t.Helper()
	ps := NewSet(dir)
	t.Cleanup(ps.Close)
	if err := ps.Refresh(); err != nil {
		t.Fatal(err)
	}
	return ps
}

// damage rewrites the file at path (written read-only, as packs are) with
// what change makes of its bytes.
func damage(t *testing.T, path string, change func([]byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o644)
	if err := os.WriteFile(path, change(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedPackNeverPanics flips each byte of a pack in turn: reading
// every object must end in an error or in bytes (a reader that crashed on
// a damaged pack would take the server with it; a received pack is read
// back with the same code). Set.Read does not check the CRC (verify does,
// through ReadRaw), so a flip in a payload may still read back.
func TestDamagedPackNeverPanics(t *testing.T) {
	dir := t.TempDir()
	objs := chainObjects(12)
	name, err := Write(dir, objs)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pack-"+name.String()+".pack")
	orig, _ := os.ReadFile(path)
	os.Chmod(path, 0o644)
	ps := openSet(t, dir)
	// The set keeps the pack open; each damaged copy is written over the
	// same file, and Refresh empties the base cache between them.
	readAll := func(what string) (failed int) {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("%s: read panicked: %v", what, r)
			}
		}()
		if err := ps.Refresh(); err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			typ, data, err := ps.Read(o.ID)
			if err != nil {
				failed++
			} else if what == "the undamaged pack" && (typ != o.Type || !bytes.Equal(data, o.Data)) {
				t.Fatalf("%s: %s reads back as other content", what, o.ID)
			}
		}
		return failed
	}
	if failed := readAll("the undamaged pack"); failed != 0 {
		t.Fatalf("the undamaged pack: %d objects failed", failed)
	}
	failures := 0
	for at := 12; at < len(orig)-20; at++ {
		for _, mask := range []byte{0x01, 0xff} {
			bad := bytes.Clone(orig)
			bad[at] ^= mask
			if err := os.WriteFile(path, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			failures += readAll(fmt.Sprintf("byte %d ^ %#x", at, mask))
		}
	}
	// Most flips land in a header or a checksummed payload: they must
	// show as errors, not as silently different bytes everywhere.
	if failures == 0 {
		t.Fatal("no damaged pack gave a single read error")
	}
}

// TestReadRawCompressed: an entry large enough to be compressed (not
// stored) reads back raw through the inflater.
func TestReadRawCompressed(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("a long thought, compressed in the pack\n"), 200)
	id := object.HashObject(object.TypeBlob, data)
	name, err := Write(dir, []Object{{ID: id, Type: object.TypeBlob, Data: data, Base: -1}})
	if err != nil {
		t.Fatal(err)
	}
	ps := openSet(t, dir)
	re, err := ps.ReadRaw(id)
	if err != nil || re.Type != object.TypeBlob || !bytes.Equal(re.Data, data) {
		t.Fatalf("ReadRaw of a compressed entry: type %v, %d bytes, %v", re.Type, len(re.Data), err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "pack-"+name.String()+".pack")); fi.Size() > int64(len(data))/4 {
		t.Fatalf("the entry was not compressed: the pack has %d bytes", fi.Size())
	}
}

// TestDamagedIndexNeverPanics changes each byte of a pack's index in turn
// (one bit with the index mapped, all eight with it read by pread) and
// reads every object through a new set: each read ends in an error or in
// bytes, never a panic, and CheckIndexes (what verify asks) notices every
// change, which lookups alone do not always do.
func TestDamagedIndexNeverPanics(t *testing.T) {
	dir := t.TempDir()
	objs := chainObjects(12)
	name, err := Write(dir, objs)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pack-"+name.String()+".idx")
	orig, _ := os.ReadFile(path)
	os.Chmod(path, 0o644)
	bothWays(t, func(t *testing.T) {
		mask := byte(0x01)
		if noMap {
			mask = 0xff
		}
		for at := range len(orig) {
			bad := bytes.Clone(orig)
			bad[at] ^= mask
			if err := os.WriteFile(path, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("byte %d ^ %#x: read panicked: %v", at, mask, r)
					}
				}()
				ps := NewSet(dir)
				defer ps.Close()
				if err := ps.Refresh(); err != nil {
					t.Fatal(err)
				}
				for _, o := range objs {
					ps.Read(o.ID)
					ps.ReadRaw(o.ID)
					ps.Has(o.ID)
				}
				if err := ps.CheckIndexes(); err == nil {
					t.Fatalf("byte %d ^ %#x: CheckIndexes found nothing wrong", at, mask)
				}
			}()
		}
		os.WriteFile(path, orig, 0o644)
	})
}
