package cli

import (
	"math"
	"slices"
	"strings"
)

// minShortID is the fewest characters a listing shows of a session id.
const minShortID = 8

// shortIDs gives each of ids the shortest prefix, at least minShortID
// characters, that names it alone among every id of the project (all, in
// any order; ids compared as Resolve does, ignoring case), so that what a
// listing shows can be typed back to any command.
func shortIDs(ids, all []string) map[string]string {
	sorted := make([]string, len(all))
	for i, id := range all {
		sorted[i] = strings.ToLower(id)
	}
	slices.Sort(sorted)
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		lower := strings.ToLower(id)
		i, _ := slices.BinarySearch(sorted, lower)
		// Only the ids next to it in sorted order can share a longer
		// prefix with it than any other.
		n := minShortID
		for _, j := range []int{i - 1, i + 1} {
			if j >= 0 && j < len(sorted) && sorted[j] != lower {
				n = max(n, commonPrefix(sorted[j], lower)+1)
			}
		}
		out[id] = id[:min(n, len(id))]
	}
	return out
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// projectIDs lists every session id of the project, for shortIDs.
func (a *app) projectIDs() ([]string, error) {
	all, _, err := a.ledger.ListPage(a.ctx, 0, math.MaxInt)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(all))
	for i, s := range all {
		ids[i] = s.ID
	}
	return ids, nil
}
