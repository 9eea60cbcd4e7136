package cli

import (
	"fmt"
	"strings"

	"github.com/thoughtbox/thoughtbox/ledger"
)

type searchCmd struct {
	Query  []string `arg:"" name:"query" help:"Words to find in session titles, descriptions, tags and thoughts; every word must match."`
	Limit  int      `default:"50" placeholder:"N" help:"At most N sessions (1 to 100)."`
	Offset int      `placeholder:"N" help:"Skip the first N sessions."`
}

func (c *searchCmd) Run(a *app) error {
	q := strings.Join(c.Query, " ")
	r, err := a.ledger.Search(a.ctx, ledger.SearchQuery{Query: q, Limit: c.Limit, Offset: c.Offset})
	if err != nil {
		return err
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, r)
	}
	if r.Total == 0 {
		fmt.Fprintf(a.env.Stderr, "no session of project %s matches %q\n", a.cfg.Project, q)
		return nil
	}
	w := a.env.Stdout
	for _, h := range r.Hits {
		var where []string
		if h.Matched.Title {
			where = append(where, "title")
		}
		if h.Matched.Description {
			where = append(where, "description")
		}
		for _, t := range h.Matched.Tags {
			where = append(where, "tag "+t)
		}
		if h.Matched.Thoughts > 0 {
			where = append(where, plural(h.Matched.Thoughts, "thought", "thoughts"))
		}
		fmt.Fprintf(w, "%s  %s  (score %g: %s)\n", h.Session.ID, clip(oneLine(h.Session.Title), 60), h.Score, strings.Join(where, ", "))
		for _, x := range h.Matched.Excerpts {
			num := fmt.Sprint(x.ThoughtNumber)
			if x.BranchID != "" {
				num = string(x.BranchID) + "/" + num
			}
			fmt.Fprintf(w, "    %s  %s\n", num, clip(x.Text, 100))
		}
	}
	if shown := c.Offset + len(r.Hits); shown < r.Total {
		fmt.Fprintf(a.env.Stderr, "%d of %d matching sessions shown; --offset %d shows more\n", len(r.Hits), r.Total, shown)
	}
	return nil
}
