package gitstore

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Between two calls of an agent the server waits while the agent reads
// the answer and writes the next call. Prepare uses that time for what
// the next thought of a chain just appended to will certainly cost: the
// SHA-1 of its session folder's tree and manifest, which grow by an entry
// a thought and are hashed whole each time (Git's object header holds the
// length, so no hashing state carries over from one version to the next).
// All of each but its last entries is hashed ahead, for the length the
// next version will have if the next thought is the chain's next number;
// build then hashes only the rest (object.Ahead). A guess that turns out
// wrong — another number, a critique, a longer timestamp — costs the
// hashing done ahead and nothing else: the id is computed whole as before.

// aheadQueue holds the chains appended to since the last Prepare. It
// stays empty until something calls Prepare (the stdio transport does,
// once it has answered a call and no other waits), so a server whose
// transport never calls it keeps no list.
type aheadQueue struct {
	used  atomic.Bool
	mu    sync.Mutex
	items []aheadItem
}

type aheadItem struct {
	cs     *chainState
	branch string
}

// maxAhead bounds the chains remembered between two Prepare calls.
const maxAhead = 8

func (q *aheadQueue) add(cs *chainState, branch string) {
	if !q.used.Load() {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, it := range q.items {
		if it.cs == cs {
			return
		}
	}
	if len(q.items) == maxAhead {
		q.items = append(q.items[:0], q.items[1:]...)
	}
	q.items = append(q.items, aheadItem{cs, branch})
}

// Prepare does ahead of time, for each chain appended to since it was
// last called, the hashing its next thought will need. It only reads and
// hashes what the store holds in memory, so it may be called at any time,
// from any goroutine, even after Close; it costs the callers of Append
// nothing but a chain's lock for the time it hashes that chain.
func (s *Store) Prepare() {
	q := &s.ahead
	if !q.used.Load() {
		q.used.Store(true)
		return
	}
	q.mu.Lock()
	items := q.items
	q.items = nil
	q.mu.Unlock()
	for _, it := range items {
		it.cs.mu.Lock()
		if it.cs.valid {
			it.cs.prepare(it.branch)
		}
		it.cs.mu.Unlock()
	}
	if items != nil {
		q.mu.Lock()
		if q.items == nil {
			q.items = items[:0]
		}
		q.mu.Unlock()
	}
}

// prepare begins the ids of the trees and manifest of the chain's next
// thought, guessing that it follows the last one written here.
func (st *chainState) prepare(branch string) {
	m := st.manifest
	list, key, indent := m.ThoughtFiles, "", "  "
	if branch != "" {
		list, key, indent = m.BranchFiles[branch], "branch/"+branch, "    "
	}
	if len(list) == 0 {
		return
	}
	n, err := strconv.Atoi(strings.TrimSuffix(list[len(list)-1], ".json"))
	if err != nil || n < 0 {
		return
	}
	name := thoughtFile(n + 1)
	if st.manID != zeroHash && len(st.manBytes) > 0 {
		m.aheadOf(st.manBytes, st.manID, key, name, indent)
	}
	var changed [2]string
	for i, pt := range st.path {
		if pt.id == zeroHash || len(pt.bytes) == 0 {
			continue
		}
		ch := changed[:0]
		if i == st.folder {
			ch = append(ch, "manifest.json")
		}
		added := ""
		if i < len(st.path)-1 {
			ch = append(ch, st.path[i+1].name)
		} else {
			added = name
		}
		pt.t.AheadOf(&pt.ahead, pt.bytes, pt.id, ch, added)
	}
}
