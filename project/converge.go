package project

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/sharing"
)

// convergeAttempts bounds how often a pull settles one session again after
// a writer of ours moved one of its refs meanwhile.
const convergeAttempts = 4

// converge settles the sessions a pull found extended differently here and
// on the remote. The remote's chain arrived there first, so it stays the
// chain; this ledger's thoughts after the last thought both share are
// recorded, through the ledger, as a new branch of the session forked at
// that thought, and then — in one compare-and-swap — each diverged ref
// takes the remote's tip and the kept copies are dropped. A push then
// sends the new branch like any other: both sides reach the same refs, and
// nothing needs forcing.
//
// A kill between the two steps loses nothing: our chain is still where it
// was, and the next pull finds the branch already (partly) recorded under
// the same name and goes on from where it stopped. A session that cannot
// be settled this way (the chains share no thought, or both sides extended
// the same branch) stays in res.Diverged with the reason.
func (p *Project) converge(ctx context.Context, res *sharing.PullResult) error {
	bySession := map[string][]sharing.Divergence{}
	var ids []string
	for _, d := range res.Diverged {
		if d.Session == "" {
			continue
		}
		if _, ok := bySession[d.Session]; !ok {
			ids = append(ids, d.Session)
		}
		bySession[d.Session] = append(bySession[d.Session], d)
	}
	sort.Strings(ids)
	kept := res.Diverged[:0:0]
	for _, d := range res.Diverged {
		if d.Session == "" {
			kept = append(kept, d)
		}
	}
	for _, id := range ids {
		divs := bySession[id]
		var branched []sharing.Branched
		var why string
		var err error
		for attempt := 0; attempt < convergeAttempts; attempt++ {
			branched, why, err = p.convergeSession(ctx, id, divs)
			if !errors.Is(err, ledger.ErrConflict) {
				break
			}
		}
		switch {
		case err != nil && ctx.Err() != nil:
			return err
		case err != nil:
			why = err.Error()
		}
		if why != "" {
			for _, d := range divs {
				d.Why = why
				kept = append(kept, d)
			}
			continue
		}
		res.Branched = append(res.Branched, branched...)
		if err := p.ledger.Pulled(ctx, ledger.PulledSessions{Moved: []string{id}}); err != nil {
			return fmt.Errorf("reading session %s again: %w", id, err)
		}
	}
	res.Diverged = kept
	return nil
}

// convergeSession settles one session's diverged refs (see converge). It
// returns why it could not, or the branches it recorded; an error wrapping
// ledger.ErrConflict means a ref moved meanwhile and it may be tried again.
func (p *Project) convergeSession(ctx context.Context, id string, divs []sharing.Divergence) ([]sharing.Branched, string, error) {
	var moves []gitstore.RefMove
	var apart []*gitstore.ApartChain
	for _, d := range divs {
		ac, err := p.store.Apart(ctx, id, d.Ref, d.Remote)
		if err != nil {
			return nil, "", err
		}
		switch {
		case ac.Behind:
			moves = append(moves, gitstore.RefMove{Ref: d.Ref, Old: ac.Ours, New: d.Remote})
		case ac.Ahead:
		case ac.Unmergeable != "":
			return nil, fmt.Sprintf("%s: %s", strings.TrimPrefix(d.Ref, "refs/heads/"), ac.Unmergeable), nil
		default:
			apart = append(apart, ac)
			moves = append(moves, gitstore.RefMove{Ref: d.Ref, Old: ac.Ours, New: d.Remote})
		}
		moves = append(moves, gitstore.RefMove{Ref: d.KeptAs, Old: d.Remote})
	}
	var out []sharing.Branched
	for _, ac := range apart {
		b, why, err := p.recordApart(ctx, id, ac)
		if err != nil || why != "" {
			return nil, why, err
		}
		out = append(out, b)
	}
	if err := p.store.MoveRefs(ctx, moves); err != nil {
		return nil, "", err
	}
	return out, "", nil
}

// recordApart records a chain's own thoughts as a branch forked at
// ac.ForkThought, named after the author of its first thought and its
// first commit. A branch of that name already there holds what an earlier,
// interrupted pull recorded: the thoughts it has are not recorded again.
func (p *Project) recordApart(ctx context.Context, id string, ac *gitstore.ApartChain) (sharing.Branched, string, error) {
	name := apartBranchName(ac)
	b := sharing.Branched{Session: id, Ref: ac.Ref, Branch: name, FromThought: ac.ForkThought, Thoughts: len(ac.Thoughts)}
	have, err := p.store.BranchThoughts(id, name)
	if err != nil {
		return b, "", err
	}
	if len(have) > len(ac.Thoughts) {
		return b, fmt.Sprintf("branch %s already exists with more thoughts than this side's chain has", name), nil
	}
	for i, td := range have {
		if td.Thought != ac.Thoughts[i].Thought {
			return b, fmt.Sprintf("branch %s already exists with other thoughts", name), nil
		}
	}
	for i := len(have); i < len(ac.Thoughts); i++ {
		td := ac.Thoughts[i]
		in := ledger.ThoughtInput{Thought: td.Thought, NextThoughtNeeded: td.NextThoughtNeeded, BranchID: name}
		if i == 0 {
			from := ac.ForkThought
			in.BranchFromThought = &from
		}
		if _, err := p.ledger.AddThought(ctx, id, in, ac.Authors[i]); err != nil {
			return b, "", fmt.Errorf("recording thought %d of %s as branch %s: %w", td.ThoughtNumber, strings.TrimPrefix(ac.Ref, "refs/heads/"), name, err)
		}
	}
	return b, "", nil
}

// apartBranchName names the branch a diverged chain becomes: the author
// of its first thought, as a branch id allows ([a-z0-9-]), and the first
// seven hex digits of the chain's first commit of its own, which keeps two
// branches of one author apart and stays the same as the chain grows.
func apartBranchName(ac *gitstore.ApartChain) string {
	author := ""
	if len(ac.Authors) > 0 {
		author = ac.Authors[0].Name
	}
	var b strings.Builder
	for _, r := range strings.ToLower(author) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
		if b.Len() >= 40 {
			break
		}
	}
	slug := strings.Trim(b.String(), "-")
	if slug == "" {
		slug = "agent"
	}
	return slug + "-" + ac.First[:7]
}
