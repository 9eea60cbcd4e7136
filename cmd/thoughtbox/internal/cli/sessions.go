package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/thoughtbox/thoughtbox/ledger"
)

type sessionsCmd struct{}

func (c *sessionsCmd) Run(a *app) error {
	list, err := a.ledger.List(a.ctx)
	if err != nil {
		return err
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, list)
	}
	if len(list) == 0 {
		fmt.Fprintf(a.env.Stderr, "no sessions in project %s (%s); 'thoughtbox start <title>' starts one\n",
			a.cfg.Project, a.cfg.DataDir)
		return nil
	}
	tw := tabwriter.NewWriter(a.env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTITLE\tTHOUGHTS\tBRANCHES\tUPDATED")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n",
			s.ID, clip(oneLine(s.Title), 48), s.ThoughtCount, s.BranchCount, stamp(s.UpdatedAt))
	}
	return tw.Flush()
}

// resolve turns a session id or unique prefix into the full id. An
// ambiguous prefix becomes a failure listing the candidates with their
// titles.
func (a *app) resolve(prefix string) (string, error) {
	id, err := a.ledger.Resolve(a.ctx, prefix)
	var amb *ledger.AmbiguousIDError
	if !errors.As(err, &amb) {
		return id, err
	}
	titles := map[string]string{}
	if list, lerr := a.ledger.List(a.ctx); lerr == nil {
		for _, s := range list {
			titles[s.ID] = s.Title
		}
	}
	f := &failure{
		msg:   fmt.Sprintf("session id prefix %q is ambiguous: it matches %d sessions", amb.Prefix, len(amb.Candidates)),
		hints: []string{"give more characters of one of:"},
	}
	for _, c := range amb.Candidates {
		f.lines = append(f.lines, strings.TrimSpace(c+"  "+clip(oneLine(titles[c]), 60)))
	}
	return "", f
}

// writeJSON writes v as indented JSON and a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// stamp formats a time for people: UTC, to the second.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// oneLine returns the first non-blank line of s, trimmed.
func oneLine(s string) string {
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

// clip cuts s to at most n characters, marking the cut with "…".
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
