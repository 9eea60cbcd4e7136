package pack

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// writeBlobPack writes a pack of one blob of n bytes (distinct per tag)
// and dates it at.
func writeBlobPack(t *testing.T, packDir, tag string, n int, at time.Time) string {
	t.Helper()
	data := append([]byte(tag+"\n"), bytes.Repeat([]byte(tag), n/len(tag))...)
	// Incompressible enough that the pack's size follows n.
	for i := range data {
		data[i] ^= byte(i * 131 >> 3)
	}
	h, err := Write(packDir, []Object{{ID: object.HashObject(object.TypeBlob, data), Type: object.TypeBlob, Data: data, Base: -1}})
	if err != nil {
		t.Fatal(err)
	}
	name := "pack-" + h.String()
	for _, ext := range []string{".pack", ".idx"} {
		if err := os.Chtimes(filepath.Join(packDir, name+ext), at, at); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

// TestRefreshOrdersByAge opens a directory of packs in one Refresh, as a
// new process does: the set must list them newest first by their files'
// age, not by name, whatever the names are.
func TestRefreshOrdersByAge(t *testing.T) {
	packDir := t.TempDir()
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	var names []string
	for i := range 6 {
		names = append(names, writeBlobPack(t, packDir, fmt.Sprintf("p%d", i), 64, t0))
	}
	// Age against the names: the largest name is the oldest.
	byName := slices.Clone(names)
	slices.Sort(byName)
	want := make([]string, len(byName)) // newest first
	for i, n := range byName {
		at := t0.Add(-time.Duration(i) * time.Hour)
		for _, ext := range []string{".pack", ".idx"} {
			os.Chtimes(filepath.Join(packDir, n+ext), at, at)
		}
		want[i] = n
	}
	ps := openSet(t, packDir)
	var got []string
	for _, pe := range ps.Packs() {
		got = append(got, pe.Name())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("packs newest first:\n got %v\nwant %v", got, want)
	}
}

// TestFreshOpenDoesNotMergeTheOldPack: a ledger's one large old pack and
// many small newer ones, opened by a new process; the merge it picks must
// be of the small ones only (rewriting the large pack for a few small
// ones is what a writer on a large ledger paid).
func TestFreshOpenDoesNotMergeTheOldPack(t *testing.T) {
	packDir := t.TempDir()
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	big := writeBlobPack(t, packDir, "big", 256<<10, t0)
	for i := range MaxPacks + 2 {
		writeBlobPack(t, packDir, fmt.Sprintf("small%d", i), 256, t0.Add(time.Duration(i+1)*time.Minute))
	}
	ps := openSet(t, packDir)
	picked := ps.MergeCandidates(nil)
	if len(picked) < 2 {
		t.Fatalf("picked %d packs of %d", len(picked), len(ps.Packs()))
	}
	for _, pe := range picked {
		if pe.Name() == big {
			t.Fatalf("the merge picked the large old pack among %d", len(picked))
		}
	}
}
