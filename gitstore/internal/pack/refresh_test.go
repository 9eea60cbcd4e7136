package pack

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// writeFlushes writes versions 0..5 of a growing object as two packs, as
// two flushes would, with their links.
func writeFlushes(t *testing.T, dir, links string) {
	t.Helper()
	var heads map[object.Hash][]byte
	for i := 0; i < 2; i++ {
		lay, err := Plan(logged(i*3, i*3+2), heads, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		name, err := Write(dir, lay.Objects)
		if err != nil {
			t.Fatal(err)
		}
		WriteLinks(links, "pack-"+name.String(), lay.Links)
		heads = lay.Heads
	}
}

// TestRefreshDuringMerge: another process merges packs between Refresh's
// listing of the directory and its opening of the packs it listed. Every
// object must still be found: the listed packs are gone, and the merged
// pack holding their objects was not in the listing. (A candidate cause of
// a one-off TestMultiProcessWriterKilled failure: survivors could not read
// an edit's base while the writer later killed merged packs every few
// milliseconds.)
func TestRefreshDuringMerge(t *testing.T) {
	dir := t.TempDir()
	links := filepath.Join(t.TempDir(), "links")
	writeFlushes(t, dir, links)

	merger := NewSet(dir)
	defer merger.Close()
	if err := merger.Refresh(); err != nil {
		t.Fatal(err)
	}
	merged := false
	refreshListed = func() {
		if merged {
			return
		}
		merged = true
		if err := Merge(dir, links, merger.Packs(), merger.Read); err != nil {
			t.Errorf("merge: %v", err)
		}
	}
	t.Cleanup(func() { refreshListed = nil })

	reader := NewSet(dir)
	defer reader.Close()
	if err := reader.Refresh(); err != nil {
		t.Fatal(err)
	}
	if !merged {
		t.Fatal("the merge did not run inside Refresh")
	}
	if n := len(reader.Packs()); n != 1 {
		t.Errorf("the set holds %d packs after the merge; want the merged one", n)
	}
	for v := 0; v <= 5; v++ {
		id := object.HashObject(object.TypeTree, folder(v))
		if _, data, err := reader.Read(id); err != nil || !bytes.Equal(data, folder(v)) {
			t.Errorf("version %d (%s), merged while the set was refreshed: %v", v, id, err)
		}
	}
}

// TestRefreshIndexWithoutPack: an index whose pack is missing for good is
// skipped after one more listing, not listed again and again, and the
// other packs are read.
func TestRefreshIndexWithoutPack(t *testing.T) {
	dir := t.TempDir()
	writeFlushes(t, dir, filepath.Join(t.TempDir(), "links"))
	idx, err := filepath.Glob(filepath.Join(dir, "pack-*.idx"))
	if err != nil || len(idx) != 2 {
		t.Fatalf("%d indexes (%v)", len(idx), err)
	}
	if err := os.Remove(strings.TrimSuffix(idx[0], ".idx") + ".pack"); err != nil {
		t.Fatal(err)
	}
	listings := 0
	refreshListed = func() { listings++ }
	t.Cleanup(func() { refreshListed = nil })

	ps := NewSet(dir)
	defer ps.Close()
	if err := ps.Refresh(); err != nil {
		t.Fatal(err)
	}
	if listings != 2 {
		t.Errorf("Refresh listed the directory %d times; want 2 (once more after the missing pack)", listings)
	}
	if n := len(ps.Packs()); n != 1 {
		t.Errorf("the set holds %d packs; want the one whose pack file exists", n)
	}
}
