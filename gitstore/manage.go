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
	defer cs.mu.Unlock()
	cs.valid = false // until the batch is applied: build changes it in place
	old := cs.manifest.Metadata.Title
	meta := req.Meta
	meta.CreatedAt = cs.manifest.Metadata.CreatedAt
	setMeta(cs.manifest, meta)
	if err := s.refreshBranchLists(ctx, id, cs.manifest); err != nil {
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
	b, cid := cs.build(nil, "", req.Author, meta.UpdatedAt, msg.String(), expected)
	b.Updates = []refUpdate{{Name: ref, Old: expected, New: cid}}
	if err := s.be.Apply(ctx, b); err != nil {
		if errors.Is(err, errConflict) {
			return "", ledger.ErrConflict
		}
		return "", err
	}
	cs.tip, cs.valid = cid, true
	return ledger.CommitID(cid.String()), nil
}
