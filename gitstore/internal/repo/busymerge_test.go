package repo

import (
	"fmt"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/pack"
)

// TestFSBusyFlushesPutMergesOff: while the background flusher carries busy
// batches (busyRecords and more a flush), packs are not merged until
// busyMaxPacks of them pile up; the first quiet tick merges them, and
// every object stays readable throughout.
func TestFSBusyFlushesPutMergesOff(t *testing.T) {
	r := openFS(t, t.TempDir())
	ctx := t.Context()
	tips := map[string]object.Hash{}
	var blobs []object.Hash
	flush := func(records int) {
		t.Helper()
		for i := range records {
			ref := fmt.Sprintf("%ss%d/main", sessions, i)
			content := fmt.Sprintf("thought %d of flush %d", i, len(blobs))
			b, tip := commitBatch(ref, tips[ref], tips[ref], content)
			if err := r.Apply(ctx, b); err != nil {
				t.Fatal(err)
			}
			tips[ref] = tip
			blobs = append(blobs, object.HashObject(object.TypeBlob, []byte(content)))
		}
		if err := r.flushSoon(); err != nil {
			t.Fatal(err)
		}
	}
	most := 0
	for range busyMaxPacks {
		flush(busyRecords)
		most = max(most, len(r.Packs().Packs()))
	}
	if most <= pack.MaxPacks+1 {
		t.Fatalf("at most %d packs over %d busy flushes: merges were not put off", most, busyMaxPacks)
	}
	if most > busyMaxPacks {
		t.Fatalf("%d packs over busy flushes, over the bound of %d", most, busyMaxPacks)
	}
	if !r.mergeOwed.Load() {
		t.Fatal("no merge owed after busy flushes left more than MaxPacks packs")
	}
	// A quiet tick: nothing logged, the owed merge runs.
	if err := r.flushSoon(); err != nil {
		t.Fatal(err)
	}
	if n := len(r.Packs().Packs()); n > pack.MaxPacks {
		t.Fatalf("%d packs after the quiet tick, want at most %d", n, pack.MaxPacks)
	}
	if r.mergeOwed.Load() {
		t.Error("a merge is still owed after the quiet tick merged")
	}
	// A flush of few records is not busy: it merges as before.
	for range pack.MaxPacks + 2 {
		flush(2)
	}
	if n := len(r.Packs().Packs()); n > pack.MaxPacks+1 {
		t.Fatalf("%d packs after flushes of few records, want at most %d", n, pack.MaxPacks+1)
	}
	for _, id := range blobs {
		if _, _, err := r.ReadObject(ctx, id); err != nil {
			t.Fatalf("blob %s: %v", id, err)
		}
	}
}
