package pack

import (
	"math/rand/v2"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// TestFindOffsetAgreesWithGoGit: our lookup finds every id of an index at
// the offset go-git's finds it, 64-bit offsets included, and finds no id
// the index lacks.
func TestFindOffsetAgreesWithGoGit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	w := new(idxfile.Writer)
	const n = 5000
	if err := w.OnHeader(n); err != nil {
		t.Fatal(err)
	}
	want := map[object.Hash]int64{}
	for i := range n {
		var h object.Hash
		for j := range h {
			h[j] = byte(r.Uint32())
		}
		if i%7 == 0 {
			h[0] = 0x42 // many ids in one fanout bucket
		}
		off := int64(12 + i*100)
		if i%5 == 0 {
			off += 5 << 30 // past 4 GiB: a 64-bit offset
		}
		want[h] = off
		w.Add(plumbing.Hash(h), uint64(off), uint32(i))
	}
	if err := w.OnFooter(plumbing.ZeroHash); err != nil {
		t.Fatal(err)
	}
	idx, err := w.Index()
	if err != nil {
		t.Fatal(err)
	}
	for h, off := range want {
		got, ok, err := findOffset(idx, h)
		if err != nil || !ok || got != off {
			t.Fatalf("%s: got %d %v %v, want %d", h, got, ok, err, off)
		}
		gg, err := idx.FindOffset(plumbing.Hash(h))
		if err != nil || gg != off {
			t.Fatalf("%s: go-git finds %d %v, want %d", h, gg, err, off)
		}
	}
	for range 2000 {
		var h object.Hash
		for j := range h {
			h[j] = byte(r.Uint32())
		}
		if _, in := want[h]; in {
			continue
		}
		if _, ok, err := findOffset(idx, h); ok || err != nil {
			t.Fatalf("%s, not in the index: found %v, err %v", h, ok, err)
		}
	}
	empty := idxfile.NewMemoryIndex()
	for i := range empty.FanoutMapping {
		empty.FanoutMapping[i] = -1
	}
	if _, ok, err := findOffset(empty, object.Hash{1}); ok || err != nil {
		t.Fatalf("empty index: found %v, err %v", ok, err)
	}
	// A damaged index whose 64-bit offset points past its table is an
	// error, not a panic.
	for h, off := range want {
		if off < 1<<31 {
			continue
		}
		idx.Offset64 = idx.Offset64[:0]
		if _, _, err := findOffset(idx, h); err == nil {
			t.Fatal("a 64-bit offset past the table was accepted")
		}
		break
	}
}
