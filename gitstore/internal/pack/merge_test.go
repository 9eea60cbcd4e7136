package pack

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// TestPickMerge: nothing to merge up to MaxPacks; past it, the newest packs
// are taken while the next older one is under twice their sum, and always
// enough of them to bring the count back to MaxPacks.
func TestPickMerge(t *testing.T) {
	sized := func(sizes ...int64) []*Entry {
		out := make([]*Entry, len(sizes))
		for i, s := range sizes {
			out[i] = &Entry{name: fmt.Sprint(i), size: s}
		}
		return out
	}
	for _, c := range []struct {
		sizes []int64
		want  int
	}{
		{[]int64{1, 1, 1, 1, 1, 1, 1, 1}, 0},
		{[]int64{1, 1, 1, 1, 1, 1, 1, 1, 1}, 9},
		// three small new packs merge; the large old ones stay
		{[]int64{1, 1, 1, 1000, 1000, 1000, 1000, 1000, 1000, 1000}, 3},
		// a large pack just behind the newest: taken anyway, or the count
		// would stay above MaxPacks
		{[]int64{1, 1000, 10 << 20, 10 << 20, 10 << 20, 10 << 20, 10 << 20, 10 << 20, 10 << 20}, 2},
	} {
		got := PickMerge(sized(c.sizes...))
		if len(got) != c.want {
			t.Errorf("PickMerge(%v) took %d packs, want %d", c.sizes, len(got), c.want)
		}
		if len(got) > 0 && got[0].name != "0" {
			t.Errorf("PickMerge(%v) does not start from the newest", c.sizes)
		}
		if len(got) > 0 && len(c.sizes)-len(got)+1 > MaxPacks {
			t.Errorf("PickMerge(%v) leaves %d packs", c.sizes, len(c.sizes)-len(got)+1)
		}
	}
}

// mergeFixture writes ten packs, oldest first, as ten flushes of one
// growing file would: pack k holds version k whole, a blob of its own, an
// OFS delta chain, and (packs 3 and 7) one blob that both hold. Each pack
// but the first records a link from its version to the one before it,
// with the flusher's delta for odd k and none (the merge computes it) for
// even k. Like the store, it refreshes ps after each pack (a Set orders
// the packs one Refresh finds by their files' age, which within one
// test can tie; refreshing per flush puts them newest first regardless).
func mergeFixture(t *testing.T, ps *Set, packDir, linksDir string) (all []Object, versions []object.Hash) {
	t.Helper()
	shared := []byte("a blob two packs hold\n")
	var prev []byte
	for k := 0; k < 10; k++ {
		data := folder(40 + k)
		id := object.HashObject(object.TypeTree, data)
		objs := []Object{{ID: id, Type: object.TypeTree, Data: data, Base: -1}}
		own := []byte(fmt.Sprintf("pack %d's own blob\n", k))
		objs = append(objs, Object{ID: object.HashObject(object.TypeBlob, own), Type: object.TypeBlob, Data: own, Base: -1})
		chain := chainObjects(3)
		for i := range chain {
			// distinct per pack: a line naming the pack
			d := append([]byte(fmt.Sprintf("pack %d\n", k)), chain[i].Data...)
			chain[i].Data, chain[i].ID = d, object.HashObject(object.TypeBlob, d)
			chain[i].Base = -1
			if i > 0 {
				chain[i].Base = len(objs) + i - 1
				chain[i].Delta = delta.Diff(chain[i-1].Data, d).GitDelta(len(chain[i-1].Data))
			}
		}
		objs = append(objs, chain...)
		if k == 3 || k == 7 {
			objs = append(objs, Object{ID: object.HashObject(object.TypeBlob, shared), Type: object.TypeBlob, Data: shared, Base: -1})
		}
		name, err := Write(packDir, objs)
		if err != nil {
			t.Fatal(err)
		}
		if err := ps.Refresh(); err != nil {
			t.Fatal(err)
		}
		if prev != nil {
			l := Link{Newer: id, Older: versions[k-1]}
			if k%2 == 1 {
				l.Delta = delta.Diff(data, prev).GitDelta(len(data))
			}
			WriteLinks(linksDir, "pack-"+name.String(), []Link{l})
		}
		for _, o := range objs {
			if k != 7 || !bytes.Equal(o.Data, shared) {
				all = append(all, o)
			}
		}
		versions = append(versions, id)
		prev = data
	}
	return all, versions
}

// mergeDirs makes a pack directory and a links directory beside it in a
// new temporary directory, and a Set over the packs, closed at the end
// of the test.
func mergeDirs(t *testing.T) (packDir, linksDir string, ps *Set) {
	t.Helper()
	dir := t.TempDir()
	packDir, linksDir = filepath.Join(dir, "pack"), filepath.Join(dir, "links")
	if err := os.MkdirAll(packDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ps = NewSet(packDir)
	t.Cleanup(func() { ps.Close() })
	return packDir, linksDir, ps
}

// TestMerge merges ten packs into one: every object reads back as itself
// and is stored once, the older versions a link names become deltas of
// their successors (with the flusher's delta or one the merge computes),
// the merged packs and their links are gone, a link whose older version
// was not merged is carried over, and git accepts the result.
func TestMerge(t *testing.T) {
	packDir, linksDir, ps := mergeDirs(t)
	all, versions := mergeFixture(t, ps, packDir, linksDir)
	// A link from the newest pack to an object outside the merge.
	outside := Link{Newer: versions[9], Older: object.HashObject(object.TypeBlob, []byte("in an older pack"))}
	newest := ps.Packs()[0].Name()
	old := ReadLinks(linksDir, newest)
	WriteLinks(linksDir, newest, append(old, outside))
	picked := ps.MergeCandidates(nil)
	if len(picked) != 10 {
		t.Fatalf("MergeCandidates picked %d of 10 packs of like size", len(picked))
	}
	if err := Merge(packDir, linksDir, picked, ps.Read); err != nil {
		t.Fatal(err)
	}
	merged := openSet(t, packDir)
	packs := merged.Packs()
	if len(packs) != 1 {
		t.Fatalf("%d packs after the merge, want 1", len(packs))
	}
	idx, err := packs[0].Index()
	if err != nil {
		t.Fatal(err)
	}
	if n := idx.Count(); n != len(all) {
		t.Errorf("the merged pack holds %d objects, want %d (the shared blob once)", n, len(all))
	}
	for _, o := range all {
		typ, data, err := merged.Read(o.ID)
		if err != nil || typ != o.Type || !bytes.Equal(data, o.Data) {
			t.Fatalf("object %s after the merge: type %v, %v", o.ID, typ, err)
		}
		if !merged.Has(o.ID) {
			t.Errorf("Has(%s) is false after the merge", o.ID)
		}
	}
	for k, v := range versions[:9] {
		re, err := merged.ReadRaw(v)
		if err != nil {
			t.Fatal(err)
		}
		if re.BaseOff < 0 {
			t.Errorf("version %d is still whole: its link (delta recorded: %v) was not used", k, (k+1)%2 == 1)
		}
	}
	if re, _ := merged.ReadRaw(versions[9]); re.BaseOff >= 0 {
		t.Error("the newest version became a delta")
	}
	entries, _ := os.ReadDir(linksDir)
	if len(entries) != 1 || entries[0].Name() != packs[0].Name() {
		t.Fatalf("links after the merge: %v, want only the merged pack's", entries)
	}
	if kept := ReadLinks(linksDir, packs[0].Name()); len(kept) != 1 || kept[0].Older != outside.Older {
		t.Errorf("links carried over: %+v, want only the one to the unmerged object", kept)
	}
	if _, err := exec.LookPath("git"); err == nil {
		out, err := exec.Command("git", "verify-pack", filepath.Join(packDir, packs[0].Name()+".idx")).CombinedOutput()
		if err != nil {
			t.Errorf("git verify-pack: %v\n%s", err, out)
		}
	}
}

// TestMergeRefusesDamage: a merge over a pack whose index is damaged, or
// whose header disagrees with its index, fails and removes nothing.
func TestMergeRefusesDamage(t *testing.T) {
	for _, what := range []string{"index", "count", "magic"} {
		t.Run(what, func(t *testing.T) {
			packDir, linksDir, ps := mergeDirs(t)
			mergeFixture(t, ps, packDir, linksDir)
			victim := filepath.Join(packDir, ps.Packs()[4].Name())
			switch what {
			case "index":
				damage(t, victim+".idx", func([]byte) []byte { return []byte("not an index") })
			case "count":
				damage(t, victim+".pack", func(p []byte) []byte { p[11]++; return p })
			case "magic":
				damage(t, victim+".pack", func(p []byte) []byte { copy(p, "KCAP"); return p })
			}
			// A fresh set: the damage is read as a new process would.
			ps2 := openSet(t, packDir)
			err := Merge(packDir, linksDir, ps2.Packs(), ps2.Read)
			if err == nil {
				t.Fatal("the merge succeeded over a damaged pack")
			}
			if left, _ := filepath.Glob(filepath.Join(packDir, "pack-*.pack")); len(left) != 10 {
				t.Errorf("%d packs left after a failed merge, want the 10 it started with", len(left))
			}
			if tmp, _ := filepath.Glob(filepath.Join(packDir, "tmp_pack_*")); len(tmp) != 0 {
				t.Errorf("a failed merge left %v", tmp)
			}
		})
	}
}

// TestDamagedIndex: an index that does not decode is an error naming the
// file for every reader (Read, ReadRaw, Index), and Has says no.
func TestDamagedIndex(t *testing.T) {
	dir := t.TempDir()
	objs := chainObjects(5)
	name, err := Write(dir, objs)
	if err != nil {
		t.Fatal(err)
	}
	idxPath := filepath.Join(dir, "pack-"+name.String()+".idx")
	damage(t, idxPath, func(p []byte) []byte { return p[:len(p)/2] })
	ps := openSet(t, dir)
	if _, _, err := ps.Read(objs[0].ID); err == nil || errors.Is(err, object.ErrNotFound) || !bytes.Contains([]byte(err.Error()), []byte(idxPath)) {
		t.Errorf("Read through a truncated index: %v, want an error naming %s", err, idxPath)
	}
	if _, err := ps.ReadRaw(objs[0].ID); err == nil || errors.Is(err, object.ErrNotFound) {
		t.Errorf("ReadRaw through a truncated index: %v", err)
	}
	if _, err := ps.Packs()[0].Index(); err == nil {
		t.Error("Index of a truncated index: no error")
	}
	if ps.Has(objs[0].ID) {
		t.Error("Has answered yes through a truncated index")
	}
}

// TestTruncatedPack: a pack cut short (a disk that lost its tail) gives
// errors for the entries past the cut and still reads those before it.
func TestTruncatedPack(t *testing.T) {
	dir := t.TempDir()
	objs := chainObjects(20)
	name, err := Write(dir, objs)
	if err != nil {
		t.Fatal(err)
	}
	damage(t, filepath.Join(dir, "pack-"+name.String()+".pack"), func(p []byte) []byte { return p[:len(p)/2] })
	ps := openSet(t, dir)
	good, failed := 0, 0
	for _, o := range objs {
		typ, got, err := ps.Read(o.ID)
		switch {
		case err != nil:
			failed++
		case typ == o.Type && bytes.Equal(got, o.Data):
			good++
		default:
			t.Errorf("%s reads back as other content from a truncated pack", o.ID)
		}
		if _, err := ps.ReadRaw(o.ID); err != nil && errors.Is(err, object.ErrNotFound) {
			t.Errorf("ReadRaw of %s in a truncated pack: not found", o.ID)
		}
	}
	if good == 0 || failed == 0 {
		t.Errorf("a pack cut in half: %d objects read, %d failed; want some of each", good, failed)
	}
}
