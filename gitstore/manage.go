package gitstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// UpdateSession implements ledger.SessionEditor: the session's manifest is
// rewritten with the new title, description and tags in one commit on its
// main chain, so `git log` shows who changed what and when, and the
// session's thoughts are untouched.
func (s *Store) UpdateSession(ctx context.Context, req ledger.UpdateSessionRequest) (ledger.CommitID, error) {
	id := req.Meta.ID
	cs, ref, expected, err := s.lockChain(id, "", req.ExpectedTip)
	if err != nil {
		return "", err
	}
	defer cs.Unlock()
	cs.Invalidate() // until the batch is applied: build changes it in place
	m := cs.Manifest()
	old := m.Metadata.Title
	meta := req.Meta
	meta.CreatedAt = m.Metadata.CreatedAt
	setMeta(m, meta)
	if err := s.refreshBranchLists(ctx, id, m); err != nil {
		return "", err
	}

	var msg strings.Builder
	msg.WriteString("Update session: " + firstLine(meta.Title, 72) + "\n\n")
	if old != meta.Title {
		fmt.Fprintf(&msg, "Title was: %s\n", firstLine(old, 200))
	}
	if len(req.Changed) > 0 {
		fmt.Fprintf(&msg, "Changed: %s\n", strings.Join(req.Changed, ", "))
	}
	msg.WriteString("\n" + trailerSession + ": " + id + "\n")
	b, cid := buildCommit(cs, nil, "", req.Author, meta.UpdatedAt, msg.String(), expected)
	b.Updates = []refUpdate{{Name: ref, Old: expected, New: cid}}
	if err := s.be.Apply(ctx, b); err != nil {
		if errors.Is(err, errConflict) {
			return "", ledger.ErrConflict
		}
		return "", err
	}
	cs.Settle(cid)
	return ledger.CommitID(cid.String()), nil
}
