package project

import (
	"log/slog"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// activeSession keeps a code repository's worktree file of its active
// session current: the session this process last started or wrote a
// thought to becomes the one the prepare-commit-msg hook names in the next
// commit of that worktree. A failure to write it costs only that trailer,
// so it is logged, never returned.
type activeSession struct {
	repo *coderepo.Repo
	next ledger.EventSink
	log  *slog.Logger
}

func (a *activeSession) Publish(e ledger.Event) {
	switch e.Type {
	case ledger.EventSessionStarted, ledger.EventThoughtAdded, ledger.EventThoughtRevised, ledger.EventBranchCreated:
		if e.SessionID != "" {
			if err := a.repo.SetActiveSession(e.SessionID); err != nil {
				a.log.Warn("the worktree's active session was not recorded; the next commit may not name it", "session", e.SessionID, "err", err)
			}
		}
	}
	if a.next != nil {
		a.next.Publish(e)
	}
}
