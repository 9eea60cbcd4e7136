package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/thoughtbox/thoughtbox/ledger"
)

type deleteCmd struct {
	ID string `arg:"" name:"id" help:"Session id or unique prefix."`
}

func (c *deleteCmd) Run(a *app) error {
	id, err := a.resolve(c.ID)
	if err != nil {
		return err
	}
	d, err := a.ledger.DeleteSession(a.ctx, id, a.author())
	if err != nil {
		return err
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, d)
	}
	fmt.Fprintf(a.env.Stdout, "deleted session %s %q (%s kept under refs/thoughtbox/deleted/%s/)\n", d.ID, oneLine(d.Title), plural(len(d.Refs), "ref", "refs"), d.ID)
	fmt.Fprintf(a.env.Stderr, "'thoughtbox restore %s' brings it back\n", short8(d.ID))
	return nil
}

type restoreCmd struct {
	ID string `arg:"" name:"id" help:"Id or unique prefix of a deleted session ('thoughtbox sessions --deleted' lists them)."`
}

func (c *restoreCmd) Run(a *app) error {
	list, err := a.ledger.DeletedSessions(a.ctx)
	if err != nil {
		return err
	}
	var matches []ledger.DeletedSession
	for _, d := range list {
		if strings.HasPrefix(d.ID, c.ID) {
			matches = append(matches, d)
		}
	}
	switch {
	case len(matches) == 0:
		return &failure{msg: fmt.Sprintf("no deleted session matches %q", c.ID), hints: []string{"'thoughtbox sessions --deleted' lists the deleted sessions"}}
	case len(matches) > 1:
		f := &failure{msg: fmt.Sprintf("deleted session id prefix %q is ambiguous: it matches %d sessions", c.ID, len(matches)), hints: []string{"give more characters of one of:"}}
		for _, d := range matches {
			f.lines = append(f.lines, d.ID+"  "+clip(oneLine(d.Title), 60))
		}
		return f
	}
	d, err := a.ledger.RestoreSession(a.ctx, matches[0].ID)
	if err != nil {
		return err
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, d)
	}
	fmt.Fprintf(a.env.Stdout, "restored session %s %q\n", d.ID, oneLine(d.Title))
	return nil
}

// listDeleted is sessions --deleted: a page of at most limit, from
// --offset.
func (c *sessionsCmd) listDeleted(a *app, limit int) error {
	all, err := a.ledger.DeletedSessions(a.ctx)
	if err != nil {
		return err
	}
	list := all[min(c.Offset, len(all)):]
	list = list[:min(limit, len(list))]
	if a.format == FormatJSON {
		return writeJSONList(a.env.Stdout, list)
	}
	if len(all) == 0 {
		fmt.Fprintf(a.env.Stderr, "no deleted sessions in project %s\n", a.cfg.Project)
		return nil
	}
	if len(list) == 0 {
		fmt.Fprintf(a.env.Stderr, "no deleted session at --offset %d: there are %d\n", c.Offset, len(all))
		return nil
	}
	if shown := c.Offset + len(list); shown < len(all) {
		defer fmt.Fprintf(a.env.Stderr, "%d of %d deleted sessions shown; --offset %d shows more\n", len(list), len(all), shown)
	}
	tw := tabwriter.NewWriter(a.env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTITLE\tDELETED\tBY")
	for _, d := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.ID, clip(oneLine(d.Title), 48), stamp(d.DeletedAt), clip(oneLine(d.DeletedBy), 24))
	}
	return tw.Flush()
}
