package pack

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// wantKinds checks that Indexed gives, for every object of the one pack in
// packDir, the type and size a full read finds.
func wantKinds(t *testing.T, packDir string) *Set {
	t.Helper()
	ps := openSet(t, packDir)
	x, err := ps.Packs()[0].Index()
	if err != nil {
		t.Fatal(err)
	}
	for i := range x.Count() {
		e, _ := x.Entry(i)
		typ, data, err := ps.Read(e.ID)
		if err != nil {
			t.Fatal(err)
		}
		gt, size, ok := ps.Indexed(e.ID)
		if !ok || gt != typ || size != len(data) {
			t.Fatalf("Indexed(%s) = %s, %d, %v; the object is a %s of %d bytes", e.ID, gt, size, ok, typ, len(data))
		}
	}
	return ps
}

// TestIndexedKinds: the type and size the indexer records of each object
// of a pack Install took are the object's, for whole objects, OFS and REF
// deltas (resolved in the pass or after it, of trees as of blobs), and
// objects too large for the indexer's window (the largest only hashed).
func TestIndexedKinds(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	gitOut(t, nil, "init", "-q", "--bare", dir)
	ids := gitBlobs(t, dir, 200)
	for _, args := range [][]string{{"--delta-base-offset", "--depth=50"}, {"--depth=50"}} {
		pack, _ := gitPack(t, dir, ids, args...)
		packDir, _, _ := install(t, pack)
		wantKinds(t, packDir) // the first Set of the directory takes the kinds
		if ofs, ref := deltaCounts(t, packDir); ofs+ref < 50 {
			t.Fatalf("%v: only %d deltas", args, ofs+ref)
		}
	}

	huge := bytes.Repeat([]byte("a long thought, repeated over and over. "), (streamHashSize+1<<20)/40)
	mid := bytes.Repeat([]byte("a thought of middling size. "), (maxIndexWindow+1<<20)/28)
	large := gitBlobs(t, dir, 3, huge, mid)
	pack, _ := gitPack(t, dir, large, "--delta-base-offset")
	packDir, _, _ := install(t, pack)
	wantKinds(t, packDir)

	v := versions(4)
	tree := func(name string) []byte {
		return append([]byte("100644 "+name+"\x00"), idOf(v[0])[:]...)
	}
	t0, t1 := tree("001.json"), append(tree("001.json"), tree("002.json")...)
	tid := object.HashObject(object.TypeTree, t0)
	commit := []byte("tree " + tid.String() + "\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\n\nthought\n")
	pack = craftPack([]entrySpec{
		{typ: object.TypeBlob, data: v[1], ofs: -1, ref: idOf(v[0]), base: v[0]}, // 0: base is entry 2
		{typ: object.TypeBlob, data: v[2], ofs: 0, base: v[1]},                   // 1: of a pending delta
		{typ: object.TypeBlob, data: v[0], ofs: -1},                              // 2
		{typ: object.TypeTree, data: t0, ofs: -1},                                // 3
		{typ: object.TypeTree, data: t1, ofs: 3, base: t0},                       // 4: a tree's delta
		{typ: object.TypeCommit, data: commit, ofs: -1},                          // 5
	})
	packDir, _, _ = install(t, pack)
	ps := wantKinds(t, packDir)
	if typ, _, ok := ps.Indexed(object.HashObject(object.TypeTree, t1)); !ok || typ != object.TypeTree {
		t.Fatalf("the tree's delta is a %s (%v)", typ, ok)
	}
}

// TestIndexedOnlyWhatThisProcessIndexed: a pack this process did not index
// (put in place by git), and a pack indexed once but opened again by a
// second Set, have no kinds: Indexed says so, and the reader reads them
// the thorough way.
func TestIndexedOnlyWhatThisProcessIndexed(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	gitOut(t, nil, "init", "-q", "--bare", dir)
	ids := gitBlobs(t, dir, 20)
	pack, idx := gitPack(t, dir, ids, "--delta-base-offset")

	byGit := t.TempDir()
	sum := object.Hash(pack[len(pack)-20:])
	for ext, data := range map[string][]byte{".pack": pack, ".idx": idx} {
		if err := os.WriteFile(filepath.Join(byGit, "pack-"+sum.String()+ext), data, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	id, err := object.ParseHash(ids[:40])
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := openSet(t, byGit).Indexed(id); ok {
		t.Fatal("Indexed answers for a pack git wrote")
	}

	packDir, _, _ := install(t, pack)
	wantKinds(t, packDir)
	if _, _, ok := openSet(t, packDir).Indexed(id); ok {
		t.Fatal("a second Set of the directory has the kinds too: they are kept twice")
	}
	if _, _, ok := openSet(t, packDir).Indexed(object.Hash{1}); ok {
		t.Fatal("Indexed answers for an object in no pack")
	}
}
