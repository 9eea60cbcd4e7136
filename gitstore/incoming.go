package gitstore

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/verify"
)

// What a pull brings in is checked before any ref of ours moves, by the
// incoming check of the ref's kind (kinds.go; the quarantine of what fails
// is gitstore/remote's). A session's incoming chain is checked here
// because the checks are verify's own.

// maxIncomingFileRoom is what a file a pull brings in may hold beyond the
// texts the thought limit bounds: the limit is on a thought's text, not
// on the file that stores it. A thought file holds a thought and perhaps a
// critique, each up to the limit, and JSON may write each byte of them as
// six (`<` is written \u003c); the room is for the rest — a long session's
// manifest, an RLM transcript, a knowledge entry's front matter — and
// stops a remote from handing us a file no ledger could have written.
const maxIncomingFileRoom = 64 << 20

// MaxIncomingFileBytes is the largest file a pull takes (a session's,
// the knowledge zone's) under a thought
// limit of maxThought.
func MaxIncomingFileBytes(maxThought int) int64 {
	return 2*6*int64(maxThought) + maxIncomingFileRoom
}

// CheckIncomingSession checks a session's incoming refs (ref -> remote
// tip) with verify's own checks (every new commit carries the session's
// trailers, the tip's manifest parses and names the session, the thought
// files parse and agree with the manifest and with the commits), plus the
// layout of each tip's tree (the session's folder and nothing else) and the
// size limit. Commits we already have are not walked again: the walk stops
// at the session's current tips here, so a pull costs what it brings.
func (s *Store) CheckIncomingSession(ctx context.Context, id string, incoming map[string]hash, maxBytes int) ([]string, error) {
	return s.checkIncomingSession(ctx, s.verifySource(), id, incoming, maxBytes)
}

// checkIncomingSession is CheckIncomingSession reading through src.
func (s *Store) checkIncomingSession(ctx context.Context, src verify.Source, id string, incoming map[string]hash, maxBytes int) ([]string, error) {
	v := verify.New(ctx, src, verifyLayout, id,
		verify.Options{MaxText: maxBytes, FileMax: MaxIncomingFileBytes(maxBytes), TrustIndexed: true})
	if tip, ok := incoming[s.lay.linksRef(id)]; ok && s.lay.linksOfRef(s.lay.linksRef(id)) == id {
		// The links ref is no chain of thoughts: it has its own check,
		// and moves in a group of its own (see kinds.go).
		problems, err := s.checkIncomingLinks(ctx, id, tip)
		if err != nil || len(problems) > 0 || len(incoming) == 1 {
			return problems, err
		}
		chains := make(map[string]hash, len(incoming)-1)
		for ref, h := range incoming {
			if ref != s.lay.linksRef(id) {
				chains[ref] = h
			}
		}
		incoming = chains
	}
	local, err := s.ListRefs(s.lay.sessions() + id + "/")
	if err != nil {
		return nil, err
	}
	for ref, h := range local {
		// Only chains stop the walk: another kind kept in the session's
		// folder (its links) is no chain of thoughts.
		if k, _, _ := s.lay.kindOf(ref); k == sessionKind {
			v.Known(h)
		}
	}
	refs := make([]string, 0, len(incoming))
	for ref := range incoming {
		refs = append(refs, ref)
	}
	sort.Slice(refs, func(i, j int) bool { return refOrder(refs[i]) < refOrder(refs[j]) })
	chains := make([]verify.Chain, 0, len(refs))
	for _, ref := range refs {
		c := verify.Chain{Ref: ref, Tip: incoming[ref]}
		if b, ok := strings.CutPrefix(ref, s.lay.sessions()+id+"/branches/"); ok {
			c.Branch = b
		}
		chains = append(chains, c)
	}
	if _, ok := incoming[s.lay.mainRef(id)]; !ok && local[s.lay.mainRef(id)] == zeroHash {
		v.Fail("the remote has branch refs of session %s but no main chain", id)
	}
	for i := range chains {
		v.CheckTip(&chains[i])
	}
	if err := v.Walk(chains); err != nil {
		return nil, err
	}
	for i := range chains {
		if !chains[i].TipOK {
			continue
		}
		if local[chains[i].Ref] == chains[i].Tip {
			continue
		}
		v.CheckChain(&chains[i])
		s.checkSessionLayout(v, &chains[i], id)
	}
	// The thoughts at the tips were measured by CheckChain (their text,
	// as the ledger measures a thought it accepts); every other file the
	// new commits brought — older versions of thought files included — was
	// bounded by the walk as it read it (verify.Options.FileMax).
	missing, missingBranch := v.Missing()
	for _, name := range missing {
		v.Fail("the manifest lists %s, which is not in the tree", name)
	}
	for b, names := range missingBranch {
		for _, name := range names {
			v.Fail("the manifest lists %s of branch %s, which is not in the tree", name, b)
		}
	}
	return v.Finish().Errors, nil
}

// checkSessionLayout checks that a chain's tip holds session id's folder
// and nothing else: a root with only sessions/, which holds only <id>/ or
// one partition folder holding only <id>/. Another session's folder in a
// session's chain would make that session appear twice.
func (s *Store) checkSessionLayout(v *verify.Check, c *verify.Chain, id string) {
	at := fmt.Sprintf("%s (commit %s)", c.Label(), c.Tip)
	cm, err := s.readCommit(c.Tip)
	if err != nil {
		return // reported by the walk
	}
	root, _, err := s.readTreeBytes(cm.Tree)
	if err != nil {
		return
	}
	for _, e := range root.Entries {
		if e.Name != "sessions" || !e.Dir {
			v.Fail("%s: %s is outside sessions/%s/: a session's chain holds only its own folder", at, e.Name, id)
		}
	}
	se, ok := root.Get("sessions")
	if !ok || !se.Dir {
		return // checkChain reported it
	}
	sessions, _, err := s.readTreeBytes(se.ID)
	if err != nil {
		return
	}
	if len(sessions.Entries) != 1 || !sessions.Entries[0].Dir {
		v.Fail("%s: sessions/ holds %d entries: expected only the folder of session %s", at, len(sessions.Entries), id)
		return
	}
	e := sessions.Entries[0]
	if e.Name == id {
		return
	}
	part, _, err := s.readTreeBytes(e.ID)
	if err != nil {
		return
	}
	if len(part.Entries) != 1 || part.Entries[0].Name != id || !part.Entries[0].Dir {
		v.Fail("%s: sessions/%s/ holds something other than the folder of session %s", at, e.Name, id)
	}
}

// blobSize returns the size of a blob (-1 for another type).
func (s *Store) blobSize(id hash) (int, error) {
	t, data, err := s.ReadObject(id)
	if err != nil {
		return 0, err
	}
	if t != typeBlob {
		return -1, nil
	}
	return len(data), nil
}
