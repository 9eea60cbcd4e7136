package pack

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// mergeBytesPerObject bounds what Merge allocates for each object it
// merges. A merge holds its bookkeeping for every object of every pack it
// takes at once, and late merges take in nearly the whole ledger: 64
// sessions × 300 thoughts made a live heap of 35 MB in one merge with
// entries of 96 bytes in and 96 out. With 48 each (the planning's tables
// and then the entries themselves are dropped as soon as they are done
// with) Merge allocates ~265 bytes an object here, the old layout ~367:
// the rest is the map from id to entry, the index's entries and its file.
const mergeBytesPerObject = 300

// TestMergeMemory: merging packs of many small objects (whole blobs and
// OFS delta chains, as flushes write them) allocates at most
// mergeBytesPerObject an object, and the merged pack reads back whole.
func TestMergeMemory(t *testing.T) {
	packDir, linksDir, ps := mergeDirs(t)
	var all []Object
	for k := range 4 {
		var objs []Object
		for i := range 5000 {
			data := fmt.Appendf(nil, "pack %d, thought %d: the latency follows deploy %d\n", k, i, i*7)
			o := Object{ID: object.HashObject(object.TypeBlob, data), Type: object.TypeBlob, Data: data, Base: -1}
			if i%5 != 0 {
				// a version of the object before it
				prev := objs[len(objs)-1]
				o.Base = len(objs) - 1
				o.Delta = delta.Diff(prev.Data, data).GitDelta(len(prev.Data))
			}
			objs = append(objs, o)
		}
		if _, err := Write(packDir, objs); err != nil {
			t.Fatal(err)
		}
		all = append(all, objs...)
	}
	if err := ps.Refresh(); err != nil {
		t.Fatal(err)
	}
	packs := ps.Packs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := Merge(packDir, linksDir, packs, ps.Read); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	per := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(all))
	t.Logf("Merge allocated %.0f bytes an object (%d objects)", per, len(all))
	if per > mergeBytesPerObject && !raceOn {
		t.Errorf("Merge allocated %.0f bytes an object, over the bound of %d", per, mergeBytesPerObject)
	}
	merged := openSet(t, packDir)
	if n := len(merged.Packs()); n != 1 {
		t.Fatalf("%d packs after the merge, want 1", n)
	}
	for _, o := range all {
		typ, data, err := merged.Read(o.ID)
		if err != nil || typ != o.Type || !bytes.Equal(data, o.Data) {
			t.Fatalf("object %s after the merge: type %v, %v", o.ID, typ, err)
		}
	}
}

// TestMergeRefDeltas: a pack with REF deltas (as git pack-objects writes
// without --delta-base-offset, and as a pull may bring) merges with one of
// our own, and git verify-pack accepts the result.
func TestMergeRefDeltas(t *testing.T) {
	needGit(t)
	repo := t.TempDir()
	gitOut(t, nil, "init", "-q", "--bare", repo)
	ids := gitBlobs(t, repo, 300)
	packBytes, idxBytes := gitPack(t, repo, ids, "--depth=50", "--window=20")
	dir := t.TempDir()
	packDir, linksDir := filepath.Join(dir, "pack"), filepath.Join(dir, "links")
	os.MkdirAll(packDir, 0o755)
	sum := packBytes[len(packBytes)-20:]
	name := filepath.Join(packDir, fmt.Sprintf("pack-%x", sum))
	if err := os.WriteFile(name+".pack", packBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name+".idx", idxBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	own := chainObjects(5)
	if _, err := Write(packDir, own); err != nil {
		t.Fatal(err)
	}
	ps := NewSet(packDir)
	defer ps.Close()
	if err := ps.Refresh(); err != nil {
		t.Fatal(err)
	}
	refs := 0
	for _, id := range strings.Fields(ids) {
		h, err := object.ParseHash(id)
		if err != nil {
			t.Fatal(err)
		}
		if re, err := ps.ReadRaw(h); err == nil && re.RefDelta {
			refs++
		}
	}
	if refs == 0 {
		t.Fatal("git wrote no REF delta: the test proves nothing")
	}
	if err := Merge(packDir, linksDir, ps.Packs(), ps.Read); err != nil {
		t.Fatal(err)
	}
	merged := openSet(t, packDir)
	packs := merged.Packs()
	if len(packs) != 1 {
		t.Fatalf("%d packs after the merge, want 1", len(packs))
	}
	for _, id := range strings.Fields(ids) {
		h, _ := object.ParseHash(id)
		typ, data, err := merged.Read(h)
		if err != nil || object.HashObject(typ, data) != h {
			t.Fatalf("object %s after the merge: %v", id, err)
		}
	}
	for _, o := range own {
		if _, data, err := merged.Read(o.ID); err != nil || !bytes.Equal(data, o.Data) {
			t.Fatalf("object %s after the merge: %v", o.ID, err)
		}
	}
	gitOut(t, nil, "verify-pack", filepath.Join(packDir, packs[0].Name()+".idx"))
}
