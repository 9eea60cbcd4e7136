package pack

import (
	"path/filepath"
	"sync"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// A pull checks every object it brings in (gitstore/internal/verify), right
// after the indexer has inflated, sized and hashed each of them, deltas
// applied. What the indexer learnt of each object — its type and size —
// is kept with the pack for the rest of the process, so that the checks
// need not inflate an object again only to learn them (a blob the checks
// do not parse needs nothing else). Four bytes an object, in the index's
// order; only for packs this process indexed, and never written to disk:
// another process reads the pack the thorough way.

// kindOf packs a type and a size into a kind: the type in the top three
// bits, the size below. 0 (unknown) when the size does not fit.
func kindOf(t object.Type, size int) uint32 {
	if size < 0 || size >= 1<<29 || t < 1 || t > 4 {
		return 0
	}
	return uint32(t)<<29 | uint32(size)
}

// indexedKinds holds the kinds of the packs Install wrote, by the pack
// file's path, until the Set of that directory opens the pack.
var indexedKinds struct {
	sync.Mutex
	byPath map[string][]uint32
}

// maxKeptKinds bounds the packs whose kinds wait for a Set to open them.
const maxKeptKinds = 16

// rememberKinds keeps the kinds of entries (sorted by id, as the index
// is) for the pack at path.
func rememberKinds(path string, entries []indexed) {
	kinds := make([]uint32, len(entries))
	for i, e := range entries {
		kinds[i] = e.kind
	}
	indexedKinds.Lock()
	defer indexedKinds.Unlock()
	if indexedKinds.byPath == nil {
		indexedKinds.byPath = map[string][]uint32{}
	}
	// A pack no Set of this process opens (a push received for a store
	// this process does not read) would hold its kinds for good: a few
	// are kept at most, which is all a pull needs.
	for p := range indexedKinds.byPath {
		if len(indexedKinds.byPath) < maxKeptKinds {
			break
		}
		delete(indexedKinds.byPath, p)
	}
	indexedKinds.byPath[path] = kinds
}

// takeKinds returns (and forgets) the kinds kept for the pack at path.
func takeKinds(path string) []uint32 {
	indexedKinds.Lock()
	defer indexedKinds.Unlock()
	k := indexedKinds.byPath[path]
	delete(indexedKinds.byPath, path)
	return k
}

// Indexed returns the type and size of id as this process's indexer
// found them when it indexed the pack that holds it; ok is false when
// the pack a read would take id from was not indexed by this process
// (written by us, merged, or indexed by another process), or id is in no
// pack. The object's bytes are not read: the indexer hashed them whole
// (the pack is the one it indexed, renamed into place).
func (ps *Set) Indexed(id object.Hash) (t object.Type, size int, ok bool) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	for _, pe := range ps.order {
		if err := pe.loadIdx(); err != nil {
			return 0, 0, false
		}
		i, found, err := pe.idx.find(id)
		if err != nil || !found {
			if err != nil {
				return 0, 0, false
			}
			continue
		}
		if i >= len(pe.kinds) || pe.kinds[i] == 0 {
			return 0, 0, false
		}
		k := pe.kinds[i]
		return object.Type(k >> 29), int(k & (1<<29 - 1)), true
	}
	return 0, 0, false
}

// kindsPath is the key of a pack's kinds: its pack file's path.
func kindsPath(dir, name string) string { return filepath.Join(dir, name+".pack") }
