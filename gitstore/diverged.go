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
	"github.com/thoughtbox/thoughtbox/sharing"
)

// divergedPrefix is where pull keeps a remote's chain of a session that was
// extended differently here: refs/thoughtbox/diverged/<remote>/sessions/<id>/main.
// It is outside refs/heads, so sessions list, load and push as before, and
// `git log --all` still shows the remote's thoughts.
const divergedPrefix = "refs/thoughtbox/diverged/"

// Diverged lists the chains of a session kept from remotes that are still
// apart from ours (a kept chain that ours has since caught up with, or
// that is already part of ours, is not listed).
// An empty sessionID lists the kept chains of every session.
func (s *Store) Diverged(sessionID string) ([]sharing.DivergedChain, error) {
	kept, err := s.ListRefs(divergedPrefix)
	if err != nil {
		return nil, err
	}
	var out []sharing.DivergedChain
	for keep, tip := range kept {
		rest := strings.TrimPrefix(keep, divergedPrefix)
		remote, local, ok := strings.Cut(rest, "/")
		if !ok || sessionID != "" && s.lay.sessionOfRef(s.lay.refRoot()+local) != sessionID {
			continue
		}
		ref := s.lay.refRoot() + local
		l, err := s.ReadRef(ref)
		if err != nil {
			return nil, err
		}
		if l == tip {
			continue
		}
		mine := map[hash]bool{}
		if l != zeroHash {
			if err := s.markAncestors(l, mine); err != nil {
				return nil, err
			}
		}
		if mine[tip] {
			continue
		}
		dc := sharing.DivergedChain{Remote: remote, Ref: ref, KeptAs: keep, Tip: tip.String(), Thoughts: []string{}}
		var subjects []string
		for id := tip; id != zeroHash; {
			if mine[id] {
				dc.Since = id.String()
				break
			}
			c, err := s.readCommit(id)
			if err != nil {
				return nil, fmt.Errorf("%s: commit %s: %w", keep, id, err)
			}
			subject, _, _ := strings.Cut(c.Message, "\n")
			subjects = append(subjects, subject)
			id = zeroHash
			if len(c.Parents) > 0 {
				id = c.Parents[0]
			}
		}
		for i := len(subjects) - 1; i >= 0; i-- {
			dc.Thoughts = append(dc.Thoughts, subjects[i])
		}
		out = append(out, dc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].KeptAs < out[j].KeptAs })
	return out, nil
}

// DropDiverged forgets a chain kept from a remote (keptAs is a ref under
// refs/thoughtbox/diverged/, as Diverged lists it): its ref is deleted
// through the log like any other ref move. The remote still has it; a
// later pull keeps it again if it is still apart from ours.
func (s *Store) DropDiverged(ctx context.Context, keptAs string) error {
	if !strings.HasPrefix(keptAs, divergedPrefix) || strings.Contains(keptAs, "..") {
		return withKind(ErrNoKeptChain, fmt.Errorf("%q is not a kept chain: expected a ref under %s", keptAs, divergedPrefix))
	}
	cur, err := s.ReadRef(keptAs)
	if err != nil {
		return err
	}
	if cur == zeroHash {
		return withKind(ErrNoKeptChain, fmt.Errorf("no kept chain %s: 'thoughtbox diverged list' shows what is kept", keptAs))
	}
	err = s.Apply(ctx, &batch{Updates: []refUpdate{{Name: keptAs, Old: cur, New: zeroHash}}})
	if errors.Is(err, errConflict) {
		return fmt.Errorf("%s moved meanwhile (a pull?): look again: %w", keptAs, ledger.ErrConflict)
	}
	return err
}

// DivergedThoughts reads the thoughts a kept chain has after the last
// commit it shares with ours, oldest first, and the number of that shared
// thought (0 if the chains share none): what adopting the chain as a
// branch records.
func (s *Store) DivergedThoughts(sessionID, keptAs string) (since int, thoughts []ledger.ThoughtData, err error) {
	chains, err := s.Diverged(sessionID)
	if err != nil {
		return 0, nil, err
	}
	var dc *sharing.DivergedChain
	for i := range chains {
		if chains[i].KeptAs == keptAs {
			dc = &chains[i]
		}
	}
	if dc == nil {
		return 0, nil, withKind(ErrNoKeptChain, fmt.Errorf("no kept chain %s apart from session %s: 'thoughtbox diverged list' shows what is kept", keptAs, sessionID))
	}
	if dc.Since != "" {
		h, err := object.ParseHash(dc.Since)
		if err != nil {
			return 0, nil, err
		}
		c, err := s.readCommit(h)
		if err != nil {
			return 0, nil, err
		}
		since, _ = strconv.Atoi(trailers(c.Message)["Thoughtbox-Thought"])
	}
	tip, err := object.ParseHash(dc.Tip)
	if err != nil {
		return 0, nil, err
	}
	cf, err := s.readChainFiles(tip, sessionID, "")
	if err != nil {
		return 0, nil, err
	}
	s.decodeFiles(cf, new(atomic.Int64))
	for _, f := range cf.files {
		if !f.ok && fileNumber(f.name) > since {
			return 0, nil, fmt.Errorf("%s: %v", keptAs, f.err)
		}
		if f.ok && f.td.ThoughtNumber > since {
			thoughts = append(thoughts, f.td)
		}
	}
	sort.Slice(thoughts, func(i, j int) bool { return thoughts[i].ThoughtNumber < thoughts[j].ThoughtNumber })
	return since, thoughts, nil
}

// ErrNoKeptChain is returned for a name that is not a chain a pull kept
// aside (refs/thoughtbox/diverged/...), or one no longer kept.
var ErrNoKeptChain = errors.New("no such kept chain")

// kindError gives err a sentinel kind for errors.Is without changing the
// text the user reads.
type kindError struct {
	kind, err error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

// withKind marks err as being of kind (ErrNoKeptChain).
func withKind(kind, err error) error { return &kindError{kind: kind, err: err} }
