package verify

import (
	"bytes"
	"sort"
)

// checkedTree is a tree the verifier has checked and found whole, with the
// offset of each of its entries, kept as the reference for the next
// version of the tree at the same path.
//
// A session's folder tree has one version per thought, each the one before
// plus an entry and a changed manifest id: checking every version entry by
// entry costs the square of the session's length (28 s for 10,000
// thoughts). Against the last version checked, a new one differs in a short
// run of bytes; the entries before and after that run are the same bytes
// as entries already found valid, in the same order, so only the run and
// its two neighbours (for the ordering rule) need checking.
type checkedTree struct {
	data   []byte
	bounds []int // offset of each entry, ascending
}

// changedRegion returns the part of data (a tree) that differs from ref,
// widened to whole entries and to one unchanged entry on each side, and the
// entry offsets of data. ok is false when data does not parse where it was
// read; the caller then checks the whole tree.
func (ref *checkedTree) changedRegion(data []byte) (from, to int, bounds []int, ok bool) {
	old := ref.data
	prefix := 0
	for prefix < len(data) && prefix < len(old) && data[prefix] == old[prefix] {
		// Compare in large steps first: most of the tree is the same.
		n := min(len(data), len(old)) - prefix
		step := min(n, 4096)
		if step > 1 && bytes.Equal(data[prefix:prefix+step], old[prefix:prefix+step]) {
			prefix += step
			continue
		}
		prefix++
	}
	suffix := 0
	for maxS := min(len(data), len(old)) - prefix; suffix < maxS && data[len(data)-1-suffix] == old[len(old)-1-suffix]; suffix++ {
	}
	delta := len(data) - len(old)

	// The last entry of ref that starts within the common prefix is where
	// the change can begin; the entry before it anchors the ordering check.
	i := sort.SearchInts(ref.bounds, prefix+1) - 1 // bounds[i] <= prefix
	if i < 0 {
		i = 0
	}
	start := 0
	if len(ref.bounds) > 0 {
		start = ref.bounds[i]
	}
	from = start
	if i > 0 {
		from = ref.bounds[i-1]
	}
	bounds = append(bounds, ref.bounds[:i]...)

	isRefBound := func(p int) bool {
		if p == len(old) {
			return true
		}
		j := sort.SearchInts(ref.bounds, p)
		return j < len(ref.bounds) && ref.bounds[j] == p
	}
	pos := start
	for {
		if pos >= len(data)-suffix && isRefBound(pos-delta) {
			break
		}
		next, good := entryEnd(data, pos)
		if !good {
			return 0, 0, nil, false
		}
		bounds = append(bounds, pos)
		pos = next
	}
	// From pos on, data is ref's entries from pos-delta, moved by delta.
	to = pos
	if pos < len(data) {
		if to, ok = entryEnd(data, pos); !ok {
			return 0, 0, nil, false
		}
	}
	for _, b := range ref.bounds[sort.SearchInts(ref.bounds, pos-delta):] {
		bounds = append(bounds, b+delta)
	}
	return from, to, bounds, true
}

// entryEnd returns where the tree entry starting at pos ends.
func entryEnd(data []byte, pos int) (int, bool) {
	sp := bytes.IndexByte(data[pos:], ' ')
	if sp <= 0 {
		return 0, false
	}
	nul := bytes.IndexByte(data[pos+sp+1:], 0)
	if nul < 0 {
		return 0, false
	}
	end := pos + sp + 1 + nul + 1 + 20
	if end > len(data) {
		return 0, false
	}
	return end, true
}

// treeBounds returns the offset of each entry of a tree that parsed.
func treeBounds(data []byte) []int {
	var bounds []int
	for pos := 0; pos < len(data); {
		next, ok := entryEnd(data, pos)
		if !ok {
			return nil
		}
		bounds = append(bounds, pos)
		pos = next
	}
	return bounds
}
