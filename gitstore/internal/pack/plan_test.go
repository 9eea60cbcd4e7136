package pack

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
)

// folder returns version v of a growing object, as a session folder's tree
// grows by one entry per thought.
func folder(v int) []byte {
	var b bytes.Buffer
	for i := 0; i <= v; i++ {
		fmt.Fprintf(&b, "100644 %03d.json\x00%020d", i, i*7919)
	}
	return b.Bytes()
}

// logged logs versions from..to of the growing object as the store does:
// each an edit of the one before (the first whole when from is 0), one
// record per version.
func logged(from, to int) []*wal.Batch {
	var recs []*wal.Batch
	for v := from; v <= to; v++ {
		data := folder(v)
		o := wal.Object{ID: object.HashObject(object.TypeTree, data), Type: object.TypeTree}
		if v == 0 {
			o.Data = data
		} else {
			prev := folder(v - 1)
			o.Base, o.Edit = object.HashObject(object.TypeTree, prev), delta.Diff(prev, data)
		}
		recs = append(recs, &wal.Batch{Objects: []wal.Object{o}})
	}
	return recs
}

// readAll writes objs as a pack in dir and reads every object back through
// a Set, checking each against its id.
func readAll(t *testing.T, dir string, objs []Object) *Set {
	t.Helper()
	if _, err := Write(dir, objs); err != nil {
		t.Fatal(err)
	}
	ps := NewSet(dir)
	t.Cleanup(ps.Close)
	if err := ps.Refresh(); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		typ, data, err := ps.Read(o.ID)
		if err != nil {
			t.Fatalf("read %s: %v", o.ID, err)
		}
		if object.HashObject(typ, data) != o.ID {
			t.Fatalf("%s reads back as other content", o.ID)
		}
	}
	return ps
}

// TestPlanNewestWhole: within one flush each version is stored as a delta
// of the next, so the newest is whole — and every version reads back.
func TestPlanNewestWhole(t *testing.T) {
	recs := logged(0, 9)
	lay, err := Plan(recs, nil, nil, func(id object.Hash) ([]byte, error) {
		t.Fatalf("Plan read %s, which the flush holds", id)
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lay.Objects) != 10 {
		t.Fatalf("%d entries for 10 versions", len(lay.Objects))
	}
	newest := object.HashObject(object.TypeTree, folder(9))
	whole := 0
	for _, o := range lay.Objects {
		if o.Base < 0 {
			whole++
			if o.ID != newest {
				t.Errorf("%s is whole; only the newest version should be", o.ID)
			}
		}
	}
	if whole != 1 {
		t.Errorf("%d whole entries, want 1", whole)
	}
	if _, ok := lay.Heads[newest]; !ok || len(lay.Heads) != 1 {
		t.Errorf("Heads = %d entries, want the newest version only", len(lay.Heads))
	}
	if len(lay.Links) != 0 {
		t.Errorf("a chain starting in this flush has %d links", len(lay.Links))
	}
	readAll(t, t.TempDir(), lay.Objects)
}

// TestPlanContinuesChain: a chain whose first version's base was written
// by the previous flush takes that content from heads (no read), and
// records a link with a delta for the merge.
func TestPlanContinuesChain(t *testing.T) {
	first, err := Plan(logged(0, 4), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	reads := 0
	second, err := Plan(logged(5, 8), first.Heads, nil, func(object.Hash) ([]byte, error) { reads++; return nil, io.EOF })
	if err != nil {
		t.Fatal(err)
	}
	if reads != 0 {
		t.Errorf("Plan read %d objects that heads held", reads)
	}
	if len(second.Links) != 1 || second.Links[0].Older != object.HashObject(object.TypeTree, folder(4)) || len(second.Links[0].Delta) == 0 {
		t.Fatalf("links = %+v, want one from version 5 to version 4 with a delta", second.Links)
	}
	// Without heads, the base is read.
	_, err = Plan(logged(5, 6), nil, nil, func(id object.Hash) ([]byte, error) {
		reads++
		return folder(4), nil
	})
	if err != nil || reads != 1 {
		t.Fatalf("without heads: %v after %d reads, want 1", err, reads)
	}
	if _, err := Plan(logged(5, 6), nil, nil, func(object.Hash) ([]byte, error) { return nil, io.EOF }); err == nil {
		t.Fatal("a base nobody has was not an error")
	}
}

// TestPlanSkipsKnown: on replay, objects the repository has are left out.
func TestPlanSkipsKnown(t *testing.T) {
	recs := logged(0, 3)
	known := recs[0].Objects[0].ID
	lay, err := Plan(recs, nil, func(id object.Hash) bool { return id == known }, func(id object.Hash) ([]byte, error) {
		if id == known {
			return folder(0), nil
		}
		return nil, io.EOF
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range lay.Objects {
		if o.ID == known {
			t.Fatal("an object the repository has was packed again")
		}
	}
	if len(lay.Objects) != 3 {
		t.Fatalf("%d entries, want 3", len(lay.Objects))
	}
}

// TestPlanBoundsDeltaChains: every maxDeltaDepth-th version is whole.
func TestPlanBoundsDeltaChains(t *testing.T) {
	n := maxDeltaDepth + 10
	lay, err := Plan(logged(0, n-1), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	whole := 0
	for _, o := range lay.Objects {
		if o.Base < 0 {
			whole++
		}
	}
	if whole != 2 {
		t.Fatalf("%d whole entries in a chain of %d, want 2", whole, n)
	}
	readAll(t, t.TempDir(), lay.Objects)
}

// TestMergeWithLinks: packs from successive flushes merge into one that
// git verifies, the link turning the older whole version into a delta.
func TestMergeWithLinks(t *testing.T) {
	dir := t.TempDir()
	links := filepath.Join(t.TempDir(), "links")
	var heads map[object.Hash][]byte
	for i := 0; i < 3; i++ {
		lay, err := Plan(logged(i*5, i*5+4), heads, nil, nil)
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
	ps := NewSet(dir)
	defer ps.Close()
	if err := ps.Refresh(); err != nil {
		t.Fatal(err)
	}
	if n := len(ps.Packs()); n != 3 {
		t.Fatalf("%d packs", n)
	}
	if err := Merge(dir, links, ps.Packs(), ps.Read); err != nil {
		t.Fatal(err)
	}
	if err := ps.Refresh(); err != nil {
		t.Fatal(err)
	}
	if n := len(ps.Packs()); n != 1 {
		t.Fatalf("%d packs after merging", n)
	}
	for v := 0; v < 15; v++ {
		id := object.HashObject(object.TypeTree, folder(v))
		_, data, err := ps.Read(id)
		if err != nil || !bytes.Equal(data, folder(v)) {
			t.Fatalf("version %d after the merge: %v", v, err)
		}
	}
	if _, err := exec.LookPath("git"); err == nil {
		idx, _ := filepath.Glob(filepath.Join(dir, "*.idx"))
		if out, err := exec.Command("git", "verify-pack", "-v", idx[0]).CombinedOutput(); err != nil {
			t.Fatalf("git verify-pack: %v\n%s", err, out)
		} else {
			// Each flush left one whole version; without the links the
			// merge would keep all three, with them it turns older ones
			// into deltas of their successors (where the delta pays).
			whole := 0
			for _, l := range strings.Split(string(out), "\n") {
				if f := strings.Fields(l); len(f) == 5 && f[1] == "tree" {
					whole++
				}
			}
			if whole >= 3 || bytes.Count(out, []byte(" tree ")) != 15 {
				t.Fatalf("git verify-pack lists %d whole trees of 15, want fewer than 3:\n%s", whole, out)
			}
		}
	}
}

// TestStreamInstall: a pack streamed for a push, with deltas against
// objects already in it, installs into another directory whole and reads
// back there.
func TestStreamInstall(t *testing.T) {
	s, err := NewStream(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var prev []byte
	var prevID object.Hash
	var ids []object.Hash
	for v := 0; v < 5; v++ {
		data := folder(v * 40)
		id := object.HashObject(object.TypeTree, data)
		if err := s.Add(id, object.TypeTree, data, prevID, prev); err != nil {
			t.Fatal(err)
		}
		if !s.Has(id) {
			t.Fatal("Has misses an added object")
		}
		prev, prevID = data, id
		ids = append(ids, id)
	}
	if s.Count != 5 {
		t.Fatalf("Count = %d", s.Count)
	}
	f, size, err := s.Finish()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Discard()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	packDir := filepath.Join(t.TempDir(), "pack")
	os.MkdirAll(packDir, 0o755)
	n, got, err := Install(filepath.Join(t.TempDir(), "transfer"), packDir, io.LimitReader(f, size))
	if err != nil || n != 5 || got != size {
		t.Fatalf("Install = %d objects, %d bytes, %v; want 5, %d", n, got, err, size)
	}
	ps := NewSet(packDir)
	defer ps.Close()
	if err := ps.Refresh(); err != nil {
		t.Fatal(err)
	}
	for v, id := range ids {
		if _, data, err := ps.Read(id); err != nil || !bytes.Equal(data, folder(v*40)) {
			t.Fatalf("version %d: %v", v, err)
		}
	}
	if _, _, err := ps.Read(object.HashObject(object.TypeBlob, []byte("absent"))); err == nil {
		t.Fatal("an absent object read")
	}
	// A truncated pack is refused and leaves nothing behind.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if _, _, err := Install(filepath.Join(t.TempDir(), "transfer"), other, io.LimitReader(f, size-30)); err == nil {
		t.Fatal("a truncated pack installed")
	}
	if left, _ := os.ReadDir(other); len(left) != 0 {
		t.Fatalf("a refused pack left %d files", len(left))
	}
}

// TestPlanBaseLoggedLater: two sessions with the same content log the same
// object ids, so within one flush an edit's base can first appear after
// the edit. Here version 2 (an edit of version 1, which the previous flush
// packed) is logged first, then another session logs version 1 again,
// whole. Version 1 must not become a delta of version 2: a pack entry's
// base precedes it, and version 2 comes after version 1 in the pack.
// (Plan once took the base's index as 0 here: the delta was written
// against the pack's first entry, a pack that git fsck rejects.)
func TestPlanBaseLoggedLater(t *testing.T) {
	first, err := Plan(logged(0, 1), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	blob := func(s string) *wal.Batch {
		data := []byte(s)
		return &wal.Batch{Objects: []wal.Object{{ID: object.HashObject(object.TypeBlob, data), Type: object.TypeBlob, Data: data}}}
	}
	again := folder(1)
	recs := []*wal.Batch{blob("before"), logged(2, 2)[0],
		{Objects: []wal.Object{{ID: object.HashObject(object.TypeTree, again), Type: object.TypeTree, Data: again}}},
		blob("after")}
	lay, err := Plan(recs, first.Heads, nil, func(id object.Hash) ([]byte, error) {
		t.Fatalf("Plan read %s, which the flush or heads hold", id)
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range lay.Objects {
		if o.Base >= 0 && lay.Objects[o.Base].ID != object.HashObject(object.TypeTree, folder(2)) {
			t.Errorf("entry %d (%s) is a delta of entry %d (%s)", i, o.ID, o.Base, lay.Objects[o.Base].ID)
		}
	}
	dir := t.TempDir()
	readAll(t, dir, lay.Objects)
	if _, err := exec.LookPath("git"); err == nil {
		packs, _ := filepath.Glob(filepath.Join(dir, "*.idx"))
		if out, err := exec.Command("git", "verify-pack", packs[0]).CombinedOutput(); err != nil {
			t.Errorf("git verify-pack: %v\n%s", err, out)
		}
	}
}
