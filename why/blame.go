package why

import (
	"context"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// Lines is the answer for one run of lines git blame gives to one commit.
type Lines struct {
	From   int    `json:"from"`
	To     int    `json:"to"`
	Commit string `json:"commit"`
	// Subject is the commit's first line ("" for lines not committed).
	Subject string `json:"subject"`
	// Sessions are those the commit is linked to; their Touching are the
	// thoughts whose code references overlap the path and these lines.
	Sessions []Session `json:"sessions"`
}

// BlameAnswer is what Blame returns.
type BlameAnswer struct {
	Path     string   `json:"path"`
	Lines    []Lines  `json:"lines"`
	Warnings []string `json:"warnings"`
	// Fetched are the sessions this answer fetched first (see
	// Asker.Fetch).
	Fetched []string `json:"fetched,omitempty"`
}

// Blame answers for lines from..to of path (relative to the repository's
// root; from 0 for the whole file) as the worktree has them.
func (a *Asker) Blame(ctx context.Context, path string, from, to int) (*BlameAnswer, error) {
	ranges, err := a.Repo.Blame(ctx, path, from, to)
	if err != nil {
		return nil, err
	}
	ans := &BlameAnswer{Path: path, Lines: []Lines{}, Warnings: []string{}}
	// Each commit blamed is read once, however many runs it has, and the
	// sessions they name that the ledger lacks are fetched in one go.
	commits := map[string]coderepo.Commit{}
	var order []coderepo.Commit
	for _, r := range ranges {
		if _, ok := commits[r.Commit]; ok || r.Commit == coderepo.NotCommitted {
			continue
		}
		list, err := a.Repo.Commits(ctx, r.Commit)
		if err != nil {
			return nil, err
		}
		if len(list) > 0 {
			commits[r.Commit] = list[0]
			order = append(order, list[0])
		}
	}
	ans.Fetched, ans.Warnings = a.fetchMissing(ctx, order)
	views := map[string][]linkedSession{}
	for _, c := range order {
		v, err := a.linked(ctx, c, &ans.Warnings)
		if err != nil {
			return nil, err
		}
		views[c.ID] = v
	}
	for _, r := range ranges {
		out := Lines{From: r.From, To: r.To, Commit: r.Commit, Sessions: []Session{}}
		c, ok := commits[r.Commit]
		if r.Commit != coderepo.NotCommitted && !ok {
			continue
		}
		out.Subject = c.Subject
		touches := func(ref ledger.CodeRef) bool { return overlaps(ref, path, r.From, r.To) }
		for _, v := range views[c.ID] {
			out.Sessions = append(out.Sessions, summarize(v, touches))
		}
		ans.Lines = append(ans.Lines, out)
	}
	return ans, nil
}

// overlaps says whether ref names path and a line of from..to; a
// reference to the whole file names every line.
func overlaps(ref ledger.CodeRef, path string, from, to int) bool {
	if ref.Path != path {
		return false
	}
	if ref.From == 0 {
		return true
	}
	end := ref.To
	if end < ref.From {
		end = ref.From
	}
	return ref.From <= to && end >= from
}
