package pack

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
)

// sessionTree is version v of session s's folder tree: one entry a thought.
func sessionTree(s, v int) []byte {
	var b bytes.Buffer
	for i := 0; i <= v; i++ {
		fmt.Fprintf(&b, "100644 %03d-thought-%05d.json\x00%020d", s, i, i*7919+s)
	}
	return b.Bytes()
}

// sessionManifest is version v of session s's manifest: a list of every
// thought file, then a timestamp that every version changes.
func sessionManifest(s, v int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\n  \"id\": \"session-%03d\",\n  \"thoughtFiles\": [\n", s)
	for i := 0; i <= v; i++ {
		fmt.Fprintf(&b, "    \"%03d-thought-%05d.json\",\n", s, i)
	}
	fmt.Fprintf(&b, "  ],\n  \"updatedAt\": \"2026-11-25T04:%02d:%02d.%06dZ\"\n}\n", v/60%60, v%60, v*37)
	return b.Bytes()
}

// sessionsFlush logs what sessions agents writing side by side leave for
// one flush: thoughts from..to of each session, round robin, each record a
// new folder tree and manifest (edits of the session's previous ones) and
// a small whole thought file. It returns the records and, as the previous
// flush's Layout.Heads would hold them, the versions before from.
func sessionsFlush(sessions, from, to int) ([]*wal.Batch, map[object.Hash][]byte) {
	heads := map[object.Hash][]byte{}
	for s := 0; s < sessions; s++ {
		for _, c := range [][]byte{sessionTree(s, from-1), sessionManifest(s, from-1)} {
			heads[object.HashObject(object.TypeBlob, c)] = c
		}
	}
	var recs []*wal.Batch
	for v := from; v <= to; v++ {
		for s := 0; s < sessions; s++ {
			r := &wal.Batch{}
			for _, gen := range []func(int, int) []byte{sessionTree, sessionManifest} {
				prev, data := gen(s, v-1), gen(s, v)
				r.Objects = append(r.Objects, wal.Object{
					ID: object.HashObject(object.TypeBlob, data), Type: object.TypeBlob,
					Base: object.HashObject(object.TypeBlob, prev), Edit: delta.Diff(prev, data).Detached(),
				})
			}
			thought := []byte(fmt.Sprintf(`{"session":%d,"thought":%d}`, s, v))
			r.Objects = append(r.Objects, wal.Object{ID: object.HashObject(object.TypeBlob, thought), Type: object.TypeBlob, Data: thought})
			recs = append(recs, r)
		}
	}
	return recs, heads
}

// TestPlanSessionsMemory: a flush of many sessions' long lines of edits
// allocates, beyond what its layout keeps (the newest versions whole, the
// deltas), bookkeeping and a few scratch buffers the size of the largest
// version — not a buffer per version. Plan once rebuilt each version in
// whatever free buffer fit, and with sessions growing side by side few
// did: here it allocated 2.0 MB for a layout of 0.35 MB (now 0.9 MB).
func TestPlanSessionsMemory(t *testing.T) {
	const sessions, from, to = 16, 200, 239
	recs, heads := sessionsFlush(sessions, from, to)
	read := func(id object.Hash) ([]byte, error) {
		t.Fatalf("Plan read %s, which heads hold", id)
		return nil, nil
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	lay, err := Plan(recs, heads, nil, read)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	allocated := int64(after.TotalAlloc - before.TotalAlloc)
	var kept, largest int64
	for _, o := range lay.Objects {
		kept += int64(len(o.Data) + len(o.Delta))
		largest = max(largest, int64(len(o.Data)))
	}
	// Beyond what the layout keeps: bookkeeping (the index, the
	// versions, the entries, the heads map), a few hundred bytes a
	// version, and scratch buffers, a few times the largest version.
	limit := kept + int64(len(lay.Objects))*384 + 8*largest
	t.Logf("allocated %d bytes; the layout holds %d (largest object %d); limit %d", allocated, kept, largest, limit)
	if allocated > limit {
		t.Errorf("Plan allocated %d bytes for a layout of %d: more than %d", allocated, kept, limit)
	}
	// And the layout is right: the newest version of each line whole and
	// in Heads, everything else a delta, every object readable.
	whole := 0
	for _, o := range lay.Objects {
		if o.Base < 0 && o.Type == object.TypeBlob && len(o.Data) > 1000 {
			whole++
			if !bytes.Equal(lay.Heads[o.ID], o.Data) {
				t.Errorf("whole %s is not in Heads", o.ID)
			}
		}
	}
	if whole != 2*sessions || len(lay.Heads) != 2*sessions {
		t.Errorf("%d whole versions and %d heads, want %d each", whole, len(lay.Heads), 2*sessions)
	}
	if len(lay.Links) != 2*sessions {
		t.Errorf("%d links, want %d", len(lay.Links), 2*sessions)
	}
	for _, l := range lay.Links {
		if len(l.Delta) == 0 {
			t.Errorf("link %s → %s has no delta", l.Newer, l.Older)
		} else if got, err := delta.Patch(findData(t, lay, l.Newer), l.Delta); err != nil || !bytes.Equal(got, heads[l.Older]) {
			t.Errorf("link %s → %s does not rebuild the older version: %v", l.Newer, l.Older, err)
		}
	}
	readAll(t, t.TempDir(), lay.Objects)
}

// findData rebuilds the content of id from the layout's entries.
func findData(t *testing.T, lay *Layout, id object.Hash) []byte {
	t.Helper()
	for i := range lay.Objects {
		if lay.Objects[i].ID == id {
			return entryData(t, lay, i)
		}
	}
	t.Fatalf("%s is not in the layout", id)
	return nil
}

func entryData(t *testing.T, lay *Layout, i int) []byte {
	o := lay.Objects[i]
	if o.Base < 0 {
		return o.Data
	}
	d, err := delta.Patch(entryData(t, lay, o.Base), o.Delta)
	if err != nil {
		t.Fatalf("entry %d: %v", i, err)
	}
	return d
}

// BenchmarkPlanSessions plans one flush of 64 sessions written side by
// side, 30 thoughts each, at the length they reach late in a 300-thought
// run. allocB/op is what Plan allocates; heldB/op what its layout keeps.
func BenchmarkPlanSessions(b *testing.B) {
	recs, heads := sessionsFlush(64, 270, 299)
	b.ReportAllocs()
	var held int
	for b.Loop() {
		lay, err := Plan(recs, heads, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		held = 0
		for _, o := range lay.Objects {
			held += len(o.Data) + len(o.Delta)
		}
	}
	b.ReportMetric(float64(held), "heldB/op")
}

// TestPlanNoLinkWhereDeltaDoesNotPay: a small tree whose one entry
// changed (a session's parent folder, 63 bytes, a new id in it) gets no
// link to its older version: the delta would carry most of the base, so
// the merge would read both versions back only to keep the older whole.
// The folder tree that grows by an entry still gets its link, delta
// included.
func TestPlanNoLinkWhereDeltaDoesNotPay(t *testing.T) {
	small := func(v int) []byte {
		id := object.HashObject(object.TypeBlob, []byte(fmt.Sprint(v)))
		return append([]byte("40000 0a3d2c1b-7d56-4051-9066-0501b63ac836\x00"), id[:]...)
	}
	old, next := small(1), small(2)
	oldID, nextID := object.HashObject(object.TypeTree, old), object.HashObject(object.TypeTree, next)
	big, bigNext := folder(30), folder(31)
	bigID := object.HashObject(object.TypeTree, big)
	recs := []*wal.Batch{{Objects: []wal.Object{
		{ID: nextID, Type: object.TypeTree, Base: oldID, Edit: delta.Diff(old, next)},
		{ID: object.HashObject(object.TypeTree, bigNext), Type: object.TypeTree, Base: bigID, Edit: delta.Diff(big, bigNext)},
	}}}
	lay, err := Plan(recs, map[object.Hash][]byte{oldID: old, bigID: big}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lay.Links) != 1 || lay.Links[0].Older != bigID || len(lay.Links[0].Delta) == 0 {
		t.Fatalf("links = %+v, want only the folder tree's, with a delta", lay.Links)
	}
	readAll(t, t.TempDir(), lay.Objects)
}
