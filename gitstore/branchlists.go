package gitstore

import (
	"context"
	"slices"
	"strings"
)

// Seed 003's manifest tracks the main chain and the branches' files in one
// place. Here a branch is a ref of its own whose manifest lists its files,
// so main's manifest copies those lists whenever main is written: a reader
// of main alone (`git show <main>:.../manifest.json`) sees the whole
// session as of main's last commit. The copy is never read back to find a
// file; each branch's own tip stays the authority for that branch.

// refreshBranchLists sets m.BranchFiles to the files each of the session's
// branches lists at its tip. It lists the session's branch refs on every
// write of main, whichever process made them: a bisect of packed-refs and
// one directory lookup, lost in the write's fsync (BenchmarkAppend moved
// by less than its run-to-run spread).
func (s *Store) refreshBranchLists(ctx context.Context, id string, m *manifest) error {
	prefix := s.lay.sessions() + id + "/branches/"
	refs, err := s.be.ListRefs(ctx, prefix)
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

// branchList is branch b's file list at tip: from this store's state of
// the chain when it is at tip, else read from the tip's manifest. The
// caller holds main's chain lock; nothing holds a branch's lock while it
// takes main's, so the order cannot deadlock.
func (s *Store) branchList(ref, b string, tip hash, id string) ([]string, error) {
	s.mu.Lock()
	c := s.chains[ref]
	s.mu.Unlock()
	if c != nil {
		c.mu.Lock()
		if c.valid && c.tip == tip {
			list := slices.Clone(c.manifest.BranchFiles[b])
			c.mu.Unlock()
			return list, nil
		}
		c.mu.Unlock()
	}
	st, err := s.readChain(tip, id, b)
	if err != nil {
		return nil, err
	}
	return slices.Clone(st.manifest.BranchFiles[b]), nil
}

// keepOnly drops from a new branch's manifest (forked from main's, which
// lists every branch) the other branches' lists: a branch's manifest
// speaks for the main chain up to its fork and for itself.
func keepOnly(m *manifest, branch string) {
	for b := range m.BranchFiles {
		if b != branch {
			delete(m.BranchFiles, b)
		}
	}
}
