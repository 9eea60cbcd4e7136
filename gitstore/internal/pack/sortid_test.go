package pack

import (
	"bytes"
	"cmp"
	"crypto/sha1"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

func randomEntries(n int, seed uint64) []indexed {
	r := rand.New(rand.NewPCG(seed, 1))
	entries := make([]indexed, n)
	for i := range entries {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], r.Uint64())
		entries[i] = indexed{off: uint64(i * 7), id: sha1.Sum(b[:]), crc: uint32(i)}
	}
	return entries
}

func TestSortByID(t *testing.T) {
	for _, n := range []int{0, 1, 2, 511, 512, 513, 5000} {
		entries := randomEntries(n, uint64(n))
		// Two IDs that differ only in their last byte, and the same ID
		// twice (a received pack may carry an object twice): the bytes
		// past the first eight, then the offset, decide.
		if n > 10 {
			entries[3].id = entries[2].id
			entries[3].id[19] ^= 1
			entries[5].id = entries[4].id
		}
		want := slices.Clone(entries)
		slices.SortFunc(want, func(a, b indexed) int {
			if c := bytes.Compare(a.id[:], b.id[:]); c != 0 {
				return c
			}
			return cmp.Compare(a.off, b.off)
		})
		sortByID(entries)
		if !slices.Equal(entries, want) {
			t.Fatalf("%d entries: sortByID differs from a plain sort by ID, then offset", n)
		}
	}
}

func BenchmarkSortByID(b *testing.B) {
	src := randomEntries(16000, 7)
	work := make([]indexed, len(src))
	b.Run("bucketed", func(b *testing.B) {
		for b.Loop() {
			copy(work, src)
			sortByID(work)
		}
	})
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			copy(work, src)
			slices.SortFunc(work, func(a, b indexed) int { return bytes.Compare(a.id[:], b.id[:]) })
		}
	})
}
