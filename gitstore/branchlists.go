package gitstore

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/manifest"
)

// Seed 003's manifest tracks the main chain and the branches' files in one
// place. Here a branch is a ref of its own whose manifest lists its files,
// so main's manifest copies those lists whenever main is written: a reader
// of main alone (`git show <main>:.../manifest.json`) sees the whole
// session as of main's last commit. The copy is never read back to find a
// file; each branch's own tip stays the authority for that branch.

// refreshBranchLists sets m.BranchFiles to the files each of the session's
// branches lists at its tip. Listing the session's branch refs takes the
// log's read lock and looks at the disk, which on every write of main cost
// the HTTP server a tenth of its processor time a thought; so a listing
// serves the writes of main that follow while nothing can have moved a
// branch: it is dropped when this store writes a branch (Append,
// AddCritique) or moves refs some other way (a pull's Apply, MoveRefs,
// delete and restore), and when the session's lock shows that another
// process held it since this store's last turn. A writer that moves a
// branch without that lock (a pull in another process) is seen once the
// listing is branchListsFor old.
func (s *Store) refreshBranchLists(ctx context.Context, id string, m *manifest.Manifest) error {
	prefix := s.lay.sessions() + id + "/branches/"
	if s.sessionLocks != nil && !s.sessionLocks.Quiet(id) {
		s.branchRefs.forget(id)
	}
	refs, err := s.branchRefs.get(id, func() (map[string]hash, error) { return s.be.ListRefs(ctx, prefix) })
	if err != nil {
		return err
	}
	lists := make(map[string][]string, len(refs))
	for ref, tip := range refs {
		b := strings.TrimPrefix(ref, prefix)
		list, err := s.branchList(ref, b, tip, id)
		if err != nil {
			return err
		}
		lists[b] = list
	}
	m.BranchFiles = lists
	return nil
}

// branchListsFor is how long a session's listed branch refs are used for
// the next writes of its main chain.
const branchListsFor = time.Second

// branchRefCache keeps each session's branch refs as last listed.
type branchRefCache struct {
	mu sync.Mutex
	m  map[string]listedBranches
}

type listedBranches struct {
	refs map[string]hash
	at   time.Time
}

// get returns the session's branch refs, listing them when it has no
// listing younger than branchListsFor.
func (c *branchRefCache) get(id string, list func() (map[string]hash, error)) (map[string]hash, error) {
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	if ok && time.Since(e.at) < branchListsFor {
		return e.refs, nil
	}
	// The listing's age counts from before it was taken: a branch moved
	// while it was taken is then seen no later than branchListsFor after.
	at := time.Now()
	refs, err := list()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxBranchListings {
		c.m = map[string]listedBranches{} // all old by now but a few
	}
	c.m[id] = listedBranches{refs: refs, at: at}
	return refs, nil
}

// forget drops the session's listing: this store wrote one of its
// branches, whose tip the listing no longer has.
func (c *branchRefCache) forget(id string) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}

// clear drops every session's listing.
func (c *branchRefCache) clear() {
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
}

// maxBranchListings bounds the cache: past it, it starts again empty.
const maxBranchListings = 4096

// branchList is branch b's file list at tip: from this store's state of
// the chain when it is at tip, else read from the tip's manifest. The
// caller holds main's chain lock; nothing holds a branch's lock while it
// takes main's, so the order cannot deadlock.
func (s *Store) branchList(ref, b string, tip hash, id string) ([]string, error) {
	s.mu.Lock()
	c := s.chains[ref]
	s.mu.Unlock()
	if c != nil {
		c.Lock()
		if c.At(tip) {
			list := c.BranchFiles(b)
			c.Unlock()
			return list, nil
		}
		c.Unlock()
	}
	st, err := s.readChain(tip, id, b)
	if err != nil {
		return nil, err
	}
	return st.BranchFiles(b), nil
}
