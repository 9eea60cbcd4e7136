package gitstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// ApartChain is this ledger's side of a session's ref that a pull found
// extended differently on a remote: the thoughts only this side has, and
// where they part from the remote's chain. A pull turns it into a branch of
// the session forked where the chains part, so that both sides keep every
// thought and neither needs to force anything.
type ApartChain struct {
	Ref string
	// Ours is the ref's tip here ("" when this ledger lacks the ref).
	Ours string
	// Behind is true when ours is absent or part of the remote's chain:
	// the ref just moves forward to the remote's tip. Ahead is true when
	// the remote's tip is part of ours: the ref stays. The fields below
	// are only for a chain that is neither.
	Behind, Ahead bool
	// ForkThought is the number of the last main-chain thought both chains
	// share: the thought the branch forks from.
	ForkThought int
	// First is the oldest commit only this side has; a branch made of the
	// chain is named after it, so the name stays the same however long
	// the chain grows before the pull that turns it into a branch.
	First string
	// Thoughts are this side's thoughts after the fork, oldest first, and
	// Authors who recorded each (the author of the commit that wrote it).
	Thoughts []ledger.ThoughtData
	Authors  []ledger.Author
	// Unmergeable, when not empty, says why this chain cannot become a
	// branch: it stays apart, as `thoughtbox diverged` lists it.
	Unmergeable string
}

// Apart reads this ledger's chain at ref (a session's main chain or one of
// its branches) against theirs, a remote's tip of the same ref that is
// here but is neither behind nor ahead of ours. It walks our chain back to
// the last commit the remote's also holds.
func (s *Store) Apart(ctx context.Context, sessionID, ref, theirs string) (*ApartChain, error) {
	branch := ""
	switch {
	case ref == s.lay.mainRef(sessionID):
	case strings.HasPrefix(ref, s.lay.sessions()+sessionID+"/branches/"):
		branch = strings.TrimPrefix(ref, s.lay.sessions()+sessionID+"/branches/")
	default:
		return nil, fmt.Errorf("%s is not a chain of session %s", ref, sessionID)
	}
	th, err := object.ParseHash(theirs)
	if err != nil {
		return nil, fmt.Errorf("the remote's tip: %w", err)
	}
	ours, err := s.ReadRef(ref)
	if err != nil {
		return nil, err
	}
	ac := &ApartChain{Ref: ref}
	if ours == zeroHash {
		ac.Behind = true
		return ac, nil
	}
	ac.Ours = ours.String()
	theirSet := map[hash]bool{}
	if err := s.markAncestors(th, theirSet); err != nil {
		return nil, err
	}
	if theirSet[ours] {
		ac.Behind = true
		return ac, nil
	}
	if ahead, err := s.IsAncestor(th, ours); err != nil || ahead {
		ac.Ahead = ahead
		return ac, err
	}
	common, authors, err := s.walkApart(ctx, ac, sessionID, branch, ours, theirSet)
	if err != nil || ac.Unmergeable != "" {
		return ac, err
	}
	if common == zeroHash {
		ac.Unmergeable = "the two chains share no commit"
		return ac, nil
	}
	cc, err := s.readCommit(common)
	if err != nil {
		return nil, err
	}
	if tr := trailers(cc.Message); tr[trailerBranch] != "" {
		ac.Unmergeable = fmt.Sprintf("both sides extended branch %s: a branch cannot fork from a branch", tr[trailerBranch])
		return ac, nil
	}
	// The fork is the last main-chain thought the common commit holds.
	at, err := s.readChainFiles(common, sessionID, "")
	if err != nil {
		return nil, err
	}
	for _, f := range at.files {
		ac.ForkThought = max(ac.ForkThought, fileNumber(f.name))
	}
	if ac.ForkThought < 1 {
		ac.Unmergeable = "the chains part before the session's first thought, and a branch must fork from a thought"
		return ac, nil
	}
	cf, err := s.readChainFiles(ours, sessionID, branch)
	if err != nil {
		return nil, err
	}
	s.decodeFiles(cf, new(atomic.Int64))
	for _, f := range cf.files {
		if branch == "" && fileNumber(f.name) <= ac.ForkThought {
			continue
		}
		if !f.ok {
			return nil, fmt.Errorf("%s: %v", ref, f.err)
		}
		ac.Thoughts = append(ac.Thoughts, f.td)
	}
	sort.SliceStable(ac.Thoughts, func(i, j int) bool { return ac.Thoughts[i].ThoughtNumber < ac.Thoughts[j].ThoughtNumber })
	for _, td := range ac.Thoughts {
		ac.Authors = append(ac.Authors, authors[td.ThoughtNumber])
	}
	if len(ac.Thoughts) == 0 {
		ac.Unmergeable = "this side's commits after the fork hold no thought of their own"
	}
	return ac, nil
}

// walkApart walks our chain's first parents from ours back to the last
// commit theirs holds (zero when there is none), noting in ac the oldest
// commit only ours has, and who wrote each of our thoughts on the way
// (the newest commit naming it); a commit not of the session makes the
// chain unmergeable.
func (s *Store) walkApart(ctx context.Context, ac *ApartChain, sessionID, branch string, ours hash, theirSet map[hash]bool) (hash, map[int]ledger.Author, error) {
	authors := map[int]ledger.Author{}
	for id := ours; id != zeroHash; {
		if err := ctx.Err(); err != nil {
			return zeroHash, nil, err
		}
		if theirSet[id] {
			return id, authors, nil
		}
		data, err := s.readTyped(id, typeCommit)
		if err != nil {
			return zeroHash, nil, fmt.Errorf("commit %s: %w", id, err)
		}
		c, err := object.ParseCommit(data)
		if err != nil {
			return zeroHash, nil, fmt.Errorf("commit %s: %w", id, err)
		}
		tr := trailers(c.Message)
		if tr[trailerSession] != sessionID {
			ac.Unmergeable = fmt.Sprintf("commit %s is not a thought of session %s", id, sessionID)
			return zeroHash, nil, nil
		}
		if n, err := strconv.Atoi(tr[trailerThought]); err == nil && tr[trailerBranch] == branch {
			if _, seen := authors[n]; !seen {
				if a, _, err := parseAuthorLine(data); err == nil {
					authors[n] = a
				}
			}
		}
		ac.First = id.String()
		id = zeroHash
		if len(c.Parents) > 0 {
			id = c.Parents[0]
		}
	}
	return zeroHash, authors, nil
}

// BranchThoughts reads the thoughts of a session's branch, in order; none
// when the branch does not exist.
func (s *Store) BranchThoughts(sessionID, branch string) ([]ledger.ThoughtData, error) {
	tip, err := s.ReadRef(s.lay.branchRef(sessionID, branch))
	if err != nil || tip == zeroHash {
		return nil, err
	}
	cf, err := s.readChainFiles(tip, sessionID, branch)
	if err != nil {
		return nil, err
	}
	s.decodeFiles(cf, new(atomic.Int64))
	out := make([]ledger.ThoughtData, 0, len(cf.files))
	for _, f := range cf.files {
		if !f.ok {
			return nil, fmt.Errorf("branch %s of session %s: %v", branch, sessionID, f.err)
		}
		out = append(out, f.td)
	}
	return out, nil
}

// RefMove is one ref moved by MoveRefs: from Old to New, each a commit id
// or "" for an absent ref.
type RefMove struct {
	Ref, Old, New string
}

// MoveRefs moves session refs and kept chains (refs/thoughtbox/diverged/)
// all or nothing, each by compare-and-swap from its Old value; if one of
// them moved meanwhile, nothing is changed and the error wraps
// ledger.ErrConflict. It is how a pull settles a diverged session in one
// step: its chains set to the remote's tips and the kept copies dropped.
func (s *Store) MoveRefs(ctx context.Context, moves []RefMove) error {
	b := &batch{}
	parse := func(v string) (hash, error) {
		if v == "" {
			return zeroHash, nil
		}
		return object.ParseHash(v)
	}
	for _, m := range moves {
		if s.lay.sessionOfRef(m.Ref) == "" && !strings.HasPrefix(m.Ref, divergedPrefix) || strings.Contains(m.Ref, "..") {
			return fmt.Errorf("%s is neither a session's ref nor a kept chain", m.Ref)
		}
		old, err := parse(m.Old)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Ref, err)
		}
		nu, err := parse(m.New)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Ref, err)
		}
		if nu != zeroHash {
			if _, err := s.readCommit(nu); err != nil {
				return fmt.Errorf("%s: %w", m.Ref, err)
			}
		}
		b.Updates = append(b.Updates, refUpdate{Name: m.Ref, Old: old, New: nu})
	}
	if len(b.Updates) == 0 {
		return nil
	}
	err := s.be.Apply(ctx, b)
	s.branchRefs.clear()
	if errors.Is(err, errConflict) {
		return fmt.Errorf("a ref moved meanwhile: %w", ledger.ErrConflict)
	}
	return err
}
