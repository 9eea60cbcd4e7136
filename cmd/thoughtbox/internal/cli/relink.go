package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/thoughtbox/thoughtbox/coderepo"
)

type relinkCmd struct {
	Range  string `arg:"" name:"range" help:"A commit or a range A..B (e.g. main~5..main after a squash merge)."`
	DryRun bool   `name:"dry-run" help:"Say what would be linked; record nothing."`
}

// Run links the commits of the range that have no reasoning to the
// sessions of the linked commits they replace, and says what it linked
// and which commits it could not match.
func (c *relinkCmd) Run(a *app) error {
	ask, err := a.asker()
	if err != nil {
		return err
	}
	res, err := ask.Relink(a.ctx, c.Range, c.DryRun)
	if errors.Is(err, coderepo.ErrNoCommit) {
		return &failure{msg: err.Error()}
	}
	if err != nil {
		return err
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, res)
	}
	verb := "linked"
	if c.DryRun {
		verb = "would link"
	}
	for _, r := range res.Linked {
		from := make([]string, len(r.From))
		for i, f := range r.From {
			from[i] = f[:12]
		}
		fmt.Fprintf(a.env.Stdout, "%s %s  %s\n  to %s (by %s, from %s)\n", verb, r.Commit[:12], r.Subject,
			strings.Join(r.Sessions, ", "), r.By, strings.Join(from, ", "))
	}
	for _, u := range res.Unmatched {
		fmt.Fprintf(a.env.Stdout, "no match for %s: no linked commit it replaces was found here\n", u[:12])
	}
	fmt.Fprintf(a.env.Stdout, "%d %s, %d already linked, %d unmatched\n", len(res.Linked), verb, res.AlreadyLinked, len(res.Unmatched))
	return nil
}
