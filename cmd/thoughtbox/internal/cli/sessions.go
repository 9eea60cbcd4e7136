package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/thoughtbox/thoughtbox/ledger"
)

type sessionsCmd struct {
	Tags    []string `name:"tag" placeholder:"TAG" help:"Only sessions with this tag; repeat for several (all must match)."`
	Since   string   `placeholder:"WHEN" help:"Only sessions updated since WHEN: a date (2026-11-01), a time (RFC 3339) or an age (36h, 7d)."`
	Limit   *int     `placeholder:"N" help:"Show at most N sessions (default 50; --all for every one)."`
	Offset  int      `placeholder:"N" help:"Skip the first N sessions (after filtering)."`
	All     bool     `help:"Show every session (no --limit)."`
	Deleted bool     `help:"List the deleted sessions instead ('thoughtbox restore <id>' brings one back)."`
	FullIDs bool     `name:"full-ids" help:"Show whole session ids (the text listing shows the shortest unique prefix, at least 8 characters)."`
	Status  string   `placeholder:"STATUS" help:"Only sessions that are active, completed (the last thought asked for no more) or abandoned (not completed, no thought for THOUGHTBOX_OBSERVATORY_ABANDON_AFTER, default 24h)."`
}

// Validate checks the flags' values (exit 2).
func (c *sessionsCmd) Validate() error {
	if c.Limit != nil && *c.Limit < 1 {
		return fmt.Errorf("--limit must be at least 1, got %d", *c.Limit)
	}
	if c.Offset < 0 {
		return fmt.Errorf("--offset must be at least 0, got %d", c.Offset)
	}
	if c.Since != "" {
		if _, err := parseSince(c.Since, time.Now()); err != nil {
			return err
		}
	}
	if c.All && c.Limit != nil {
		return fmt.Errorf("--all and --limit do not go together")
	}
	if c.Deleted && (len(c.Tags) > 0 || c.Since != "" || c.Status != "") {
		return fmt.Errorf("--deleted lists the deleted sessions and takes no filter (--limit, --offset and --all page them)")
	}
	switch c.Status {
	case "", ledger.StatusActive, ledger.StatusCompleted, ledger.StatusAbandoned:
	default:
		return fmt.Errorf("--status must be active, completed or abandoned, got %q", c.Status)
	}
	return nil
}

func (c *sessionsCmd) Run(a *app) error {
	limit := defaultSessionsLimit
	if c.Limit != nil {
		limit = *c.Limit
	}
	if c.All {
		limit = math.MaxInt
	}
	if c.Deleted {
		return c.listDeleted(a, limit)
	}
	if len(c.Tags) == 0 && c.Since == "" && c.Status == "" {
		// Unfiltered: one page (with --all, every session), read from the
		// store's index: it costs the page, not every session's history.
		page, total, err := a.ledger.ListPage(a.ctx, c.Offset, limit)
		if err != nil {
			return err
		}
		return c.print(a, page, total, total)
	}
	all, err := a.ledger.List(a.ctx)
	if err != nil {
		return err
	}
	list := all[:0:0]
	since := time.Time{}
	if c.Since != "" {
		since, _ = parseSince(c.Since, time.Now())
	}
	var abandonAfter time.Duration
	if c.Status != "" {
		obs, err := a.cfg.Observatory()
		if err != nil {
			return err
		}
		abandonAfter = obs.AbandonAfter
	}
	now := time.Now()
	for _, s := range all {
		if s.UpdatedAt.Before(since) || !hasTags(s.Tags, c.Tags) {
			continue
		}
		if c.Status != "" {
			// The status needs the last thought: only sessions that
			// passed the other filters are read.
			v, err := a.ledger.Load(a.ctx, s.ID)
			if err != nil {
				return err
			}
			if st, _ := v.Graph.Status(s.UpdatedAt, now, abandonAfter); st != c.Status {
				continue
			}
		}
		list = append(list, s)
	}
	filtered := len(list)
	list = list[min(c.Offset, len(list)):]
	if !c.All {
		list = list[:min(limit, len(list))]
	}
	return c.print(a, list, len(all), filtered)
}

// defaultSessionsLimit is how many sessions 'thoughtbox sessions' shows
// without --limit or --all.
const defaultSessionsLimit = 50

// print shows a page of sessions: total is how many the project holds,
// filtered how many passed the filters.
func (c *sessionsCmd) print(a *app, list []ledger.Session, total, filtered int) error {
	if a.format == FormatJSON {
		return writeJSONList(a.env.Stdout, list)
	}
	if len(list) == 0 {
		if total == 0 {
			fmt.Fprintf(a.env.Stderr, "no sessions in project %s (%s); 'thoughtbox start <title>' starts one\n",
				a.cfg.Project, a.cfg.DataDir)
		} else {
			fmt.Fprintf(a.env.Stderr, "no session of the %d in project %s matches (%d after the filters)\n", total, a.cfg.Project, filtered)
		}
		return nil
	}
	if shown := c.Offset + len(list); shown < filtered {
		defer fmt.Fprintf(a.env.Stderr, "%d of %d sessions shown; --offset %d shows more\n", len(list), filtered, shown)
	}
	rows := make([][]string, 0, len(list)+1)
	rows = append(rows, []string{"ID", "TITLE", "THOUGHTS", "BRANCHES", "UPDATED"})
	short := map[string]string{}
	if !c.FullIDs {
		all, err := a.projectIDs()
		if err != nil {
			return err
		}
		ids := make([]string, len(list))
		for i, s := range list {
			ids[i] = s.ID
		}
		short = shortIDs(ids, all)
	}
	for _, s := range list {
		id := s.ID
		if p, ok := short[id]; ok {
			id = p
		}
		rows = append(rows, []string{id, clip(oneLine(s.Title), 48), strconv.Itoa(s.ThoughtCount), strconv.Itoa(s.BranchCount), stamp(s.UpdatedAt)})
	}
	if a.color {
		return writeColorTable(a.env.Stdout, rows)
	}
	return writeTable(a.env.Stdout, rows)
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

// hasTags reports whether tags holds every one of want, ignoring case.
func hasTags(tags, want []string) bool {
	for _, w := range want {
		found := false
		for _, t := range tags {
			if strings.EqualFold(t, w) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// parseSince reads --since: an RFC 3339 time, a date (midnight UTC), or an
// age before now in hours (36h), days (7d) or weeks (2w).
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if n := len(s); n >= 2 {
		if v, err := strconv.Atoi(s[:n-1]); err == nil && v >= 0 {
			unit := map[byte]time.Duration{'m': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[s[n-1]]
			if unit != 0 && v <= 100*365 {
				return now.Add(-time.Duration(v) * unit), nil
			}
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: expected a date (2026-11-01), a time (2026-11-01T10:00:00Z) or an age (90m, 36h, 7d, 2w)", s)
}
