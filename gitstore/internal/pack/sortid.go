package pack

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"
)

// sortByID sorts an index's entries by object ID, and entries of the same
// ID by offset, as the .idx file lists them. Object IDs are uniformly
// spread, so the entries are first placed by their first byte (which the
// index's fan-out table counts anyway) and each of the 256 runs is sorted
// on its own, comparing the first eight bytes as one number before the
// rest. A flush of 64 agents' thoughts indexes some 16,000 objects, and a
// comparison sort of the whole, each comparison a call to bytes.Compare,
// was the largest part of writing the pack's index (3 % of a busy
// server's processor time).
func sortByID(entries []indexed) {
	if len(entries) < 512 {
		slices.SortFunc(entries, compareIndexed)
		return
	}
	var start [257]int
	for i := range entries {
		start[int(entries[i].id[0])+1]++
	}
	for b := 1; b <= 256; b++ {
		start[b] += start[b-1]
	}
	// In place, as an American flag sort does: a received pack's index
	// can hold millions of entries, and a second slice of them would
	// double what indexing it holds.
	var next [256]int
	copy(next[:], start[:256])
	for b := range 256 {
		for next[b] < start[b+1] {
			i := next[b]
			d := int(entries[i].id[0])
			if d == b {
				next[b]++
				continue
			}
			entries[i], entries[next[d]] = entries[next[d]], entries[i]
			next[d]++
		}
	}
	for b := range 256 {
		if run := entries[start[b]:start[b+1]]; len(run) > 1 {
			slices.SortFunc(run, compareIndexed)
		}
	}
}

func compareIndexed(a, b indexed) int {
	if c := cmp.Compare(binary.BigEndian.Uint64(a.id[:8]), binary.BigEndian.Uint64(b.id[:8])); c != 0 {
		return c
	}
	if c := bytes.Compare(a.id[8:], b.id[8:]); c != 0 {
		return c
	}
	return cmp.Compare(a.off, b.off)
}
