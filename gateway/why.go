package gateway

import (
	"context"
	"errors"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/why"
)

type whyParams struct {
	Commit string `json:"commit,omitempty" jsonschema:"A commit (HEAD, an id, a branch) or a range A..B of the code repository."`
	Path   string `json:"path,omitempty" jsonschema:"A file, relative to the repository's root: the reasoning behind its lines."`
	From   int    `json:"from,omitempty" jsonschema:"First line of path to ask about (1-based); all lines when absent."`
	To     int    `json:"to,omitempty" jsonschema:"Last line of path to ask about; defaults to from."`
}

// whyOp answers from the code repository the project's ledger lives in,
// through package why (the CLI's why and blame answer the same way).
func whyOp(ctx context.Context, c *call, p *whyParams) (any, error) {
	switch {
	case (p.Commit == "") == (p.Path == ""):
		return nil, ledger.InvalidField("commit", "give either commit (a commit or a range A..B) or path, not both or neither")
	case p.From < 0:
		return nil, ledger.InvalidField("from", "must be at least 1, got %d", p.From)
	case p.To != 0 && p.To < p.From:
		return nil, ledger.InvalidField("to", "must not be before from (%d), got %d", p.From, p.To)
	case p.To != 0 && p.From == 0:
		return nil, ledger.InvalidField("from", "is needed with to")
	case p.Commit != "" && (p.From != 0 || p.To != 0):
		return nil, ledger.InvalidField("from", "goes with path, not commit")
	}
	var repo *coderepo.Repo
	if c.g.opts.CodeRepo != nil {
		repo = c.g.opts.CodeRepo(c.project)
	}
	if repo == nil {
		return nil, ledger.Errorf(ledger.CodeInvalidOperation, "project %q keeps its ledger apart from any code, so no commit names its reasoning: run `thoughtbox enable` (and `thoughtbox hooks install`) in the code's repository, and serve from there", c.project)
	}
	ask := &why.Asker{Repo: repo, Sessions: c.ledger}
	if fetch := c.g.opts.FetchSessions; fetch != nil {
		ask.Fetch = func(ctx context.Context, ids []string) error { return fetch(ctx, c.project, ids) }
	}
	if c.g.opts.CodeLinks != nil {
		if links := c.g.opts.CodeLinks(c.project); links != nil {
			ask.Links = links
			if _, err := ask.Drain(ctx, true); err != nil {
				return nil, err
			}
		}
	}
	if p.Commit != "" {
		ans, err := ask.Commits(ctx, p.Commit)
		if errors.Is(err, coderepo.ErrNoCommit) {
			return nil, ledger.InvalidField("commit", "%v", err)
		}
		return ans, err
	}
	rel, err := repo.RelPath(repo.Worktree, p.Path)
	if err != nil {
		return nil, ledger.InvalidField("path", "%v", err)
	}
	ans, err := ask.Blame(ctx, rel, p.From, p.To)
	if err != nil {
		return nil, ledger.InvalidField("path", "%v", err)
	}
	return ans, nil
}
