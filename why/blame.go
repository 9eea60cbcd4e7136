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
}

// Blame answers for lines from..to of path (relative to the repository's
// root; from 0 for the whole file) as the worktree has them.
func (a *Asker) Blame(ctx context.Context, path string, from, to int) (*BlameAnswer, error) {
	ranges, err := a.Repo.Blame(ctx, path, from, to)
	if err != nil {
		return nil, err
	}
	ans := &BlameAnswer{Path: path, Lines: []Lines{}, Warnings: []string{}}
	// A commit blamed for several runs is read, and warned about, once.
	type read struct {
		commit coderepo.Commit
		views  []linkedSession
	}
	seen := map[string]*read{}
	for _, r := range ranges {
		out := Lines{From: r.From, To: r.To, Commit: r.Commit, Sessions: []Session{}}
		if r.Commit == coderepo.NotCommitted {
			ans.Lines = append(ans.Lines, out)
			continue
		}
		rd := seen[r.Commit]
		if rd == nil {
			commits, err := a.Repo.Commits(ctx, r.Commit)
			if err != nil {
				return nil, err
			}
			if len(commits) == 0 {
				continue
			}
			rd = &read{commit: commits[0]}
			if rd.views, err = a.linked(ctx, rd.commit, &ans.Warnings); err != nil {
				return nil, err
			}
			seen[r.Commit] = rd
		}
		out.Subject = rd.commit.Subject
		touches := func(ref ledger.CodeRef) bool { return overlaps(ref, path, r.From, r.To) }
		for _, v := range rd.views {
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
