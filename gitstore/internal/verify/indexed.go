package verify

import "fmt"

// A pull checks what it brings in right after our own indexer took the
// received pack: it inflated every entry, checked its size, applied every
// delta and hashed every object whole. A blob the checks do not parse —
// every file of the new commits but those of the tips' trees, which
// CheckChain reads — is checked only for its type (a tree may not name a
// tree where it names a file) and its size (fileMax); both are what the
// indexer found, so the walk takes them from it instead of inflating the
// blob again (Source.Indexed). Verify never does: it is the check of
// what is stored now, whatever happened to the pack since.

// indexedBlob checks a blob of a pack this process indexed through what
// the indexer found of it; false when the indexer has nothing to say (the
// walk then reads it).
func (v *Check) indexedBlob(it walkItem) bool {
	if !v.trustIndexed || it.typ != typeBlob || v.full || v.tips[it.commit] {
		return false
	}
	t, size, ok := v.src.Indexed(it.id) // the staged pack of a pull too
	if !ok {
		return false
	}
	if t != typeBlob {
		// As the thorough read says it.
		problem := fmt.Sprintf("it is a %s, not a %s", t, it.typ)
		v.status[it.id] = problem
		v.Fail("corrupt object %s: %s; %s", it.id, it.what(), problem)
		return true
	}
	v.status[it.id] = ""
	v.sized(it.id, size)
	return true
}
