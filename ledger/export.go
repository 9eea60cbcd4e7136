package ledger

// Export renderers (seed 004, "Session lifecycle"): the SessionExport JSON
// of seed 002, a Markdown document for people, and the cipher notation, one
// line per thought. They render a SessionView and write nothing themselves.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ExportVersion is the SessionExport schema version.
const ExportVersion = "1.0"

// ExportFormat is an export format.
type ExportFormat string

// The export formats.
const (
	ExportJSON     ExportFormat = "json"
	ExportMarkdown ExportFormat = "markdown"
	ExportCipher   ExportFormat = "cipher"
)

// ParseExportFormat accepts json, markdown or cipher; "" means json.
func ParseExportFormat(s string) (ExportFormat, error) {
	switch f := ExportFormat(s); f {
	case ExportJSON, ExportMarkdown, ExportCipher:
		return f, nil
	case "":
		return ExportJSON, nil
	}
	return "", InvalidField("format", "must be json, markdown or cipher, got %q", s)
}

// Extension is the file-name extension for the format, without the dot.
func (f ExportFormat) Extension() string {
	switch f {
	case ExportMarkdown:
		return "md"
	case ExportCipher:
		return "cipher"
	}
	return "json"
}

// SessionExport is seed 002's SessionExport v1.0: the session and every
// node of its graph, in creation order, with prev, next, revisesNode and
// branchOrigin links.
type SessionExport struct {
	Version    string        `json:"version"`
	Session    Session       `json:"session"`
	Nodes      []ThoughtNode `json:"nodes"`
	ExportedAt time.Time     `json:"exportedAt"`
	// Anchors is set when the export resolved cross-session anchors.
	Anchors *AnchorReport `json:"anchors,omitempty"`
}

// NewSessionExport builds the export of a session as of at.
func NewSessionExport(v *SessionView, at time.Time) *SessionExport {
	return &SessionExport{Version: ExportVersion, Session: v.Session, Nodes: v.Graph.Nodes(), ExportedAt: at}
}

// ExportOptions configure Export.
type ExportOptions struct {
	Format ExportFormat
	// At is the export time written into json and markdown.
	At time.Time
	// Anchors, if set, is included: in json as "anchors", in markdown as a
	// section. The cipher format has no place for it.
	Anchors *AnchorReport
}

// Export renders a session in one of the formats. Every format ends with a
// newline.
func Export(v *SessionView, o ExportOptions) ([]byte, error) {
	switch o.Format {
	case ExportMarkdown:
		return []byte(markdownExport(v, o.At, o.Anchors)), nil
	case ExportCipher:
		return []byte(cipherExport(v)), nil
	case ExportJSON, "":
		x := NewSessionExport(v, o.At)
		x.Anchors = o.Anchors
		return x.Encode()
	}
	return nil, InvalidField("format", "must be json, markdown or cipher, got %q", o.Format)
}

// Encode writes the export as JSON with a trailing newline, the form of
// export files: indented, except that each node is written compactly on a
// line of its own. That reads well, diffs node by node, and costs one
// encoding pass per node, where indenting every node's fields would cost
// two more over the whole document (10,000 thoughts make ten megabytes).
func (x *SessionExport) Encode() ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(512 + 1024*len(x.Nodes))
	field := func(name string, v any, last bool) error {
		b, err := json.MarshalIndent(v, "  ", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(&buf, "  %q: %s", name, b)
		if !last {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
		return nil
	}
	buf.WriteString("{\n")
	err := field("version", x.Version, false)
	if err == nil {
		err = field("session", x.Session, false)
	}
	if err != nil {
		return nil, Errorf(CodeInternal, "encode the export of session %s: %w", x.Session.ID, err)
	}
	buf.WriteString(`  "nodes": [`)
	for i, n := range x.Nodes {
		b, err := n.MarshalJSON()
		if err != nil {
			return nil, Errorf(CodeInternal, "encode node %s: %w", n.ID, err)
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString("\n    ")
		buf.Write(b)
	}
	if len(x.Nodes) > 0 {
		buf.WriteString("\n  ")
	}
	buf.WriteString("],\n")
	err = field("exportedAt", x.ExportedAt, x.Anchors == nil)
	if err == nil && x.Anchors != nil {
		err = field("anchors", x.Anchors, true)
	}
	if err != nil {
		return nil, Errorf(CodeInternal, "encode the export of session %s: %w", x.Session.ID, err)
	}
	buf.WriteString("}\n")
	return buf.Bytes(), nil
}

// markdownExport renders a session for people: a header with the counts
// (branch thoughts and revisions included), the main chain, each branch,
// the revisions, and the anchors if resolved.
func markdownExport(v *SessionView, at time.Time, anchors *AnchorReport) string {
	s, g := v.Session, v.Graph
	sh := shapeOf(g)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", oneLineText(s.Title))
	if s.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(s.Description))
	}
	status := "in progress"
	if g.Completed() {
		status = "completed"
	}
	fmt.Fprintf(&b, "- **Session:** `%s`\n", s.ID)
	if len(s.Tags) > 0 {
		fmt.Fprintf(&b, "- **Tags:** %s\n", strings.Join(s.Tags, ", "))
	}
	fmt.Fprintf(&b, "- **Status:** %s\n", status)
	fmt.Fprintf(&b, "- **Thoughts:** %d: %d on the main chain, %d on %s; %s\n",
		len(sh.nodes), len(sh.main), len(sh.nodes)-len(sh.main), countOf(len(sh.branches), "branch"), countOf(len(sh.revisions), "revision"))
	fmt.Fprintf(&b, "- **Created:** %s\n- **Updated:** %s\n", mdTime(s.CreatedAt), mdTime(s.UpdatedAt))
	if !at.IsZero() {
		fmt.Fprintf(&b, "- **Exported:** %s\n", mdTime(at))
	}
	if !v.Integrity.Valid {
		fmt.Fprintf(&b, "- **Integrity:** damaged; this export holds what could be read (%s)\n", strings.Join(v.Integrity.Errors, "; "))
	}

	forks := map[string][]BranchID{}
	for _, br := range sh.branches {
		if br.Origin != "" {
			forks[br.Origin] = append(forks[br.Origin], br.ID)
		}
	}
	b.WriteString("\n## Main chain\n")
	if len(sh.main) == 0 {
		b.WriteString("\n*No thoughts on the main chain.*\n")
	}
	for _, n := range sh.main {
		mdThought(&b, g, n, forks[n.ID])
	}
	for _, br := range sh.branches {
		from := fmt.Sprintf("from thought %d", br.FromThought)
		if br.Origin == "" {
			from += " (fork point missing)"
		}
		fmt.Fprintf(&b, "\n## Branch `%s`, %s, %s\n", br.ID, from, countOf(br.Count, "thought"))
		for _, n := range sh.branchNodes[br.ID] {
			mdThought(&b, g, n, nil)
		}
	}
	if len(sh.revisions) > 0 {
		b.WriteString("\n## Revisions\n\n| Revision | Revises | Depth |\n|---|---|---|\n")
		for _, n := range sh.revisions {
			rev, _ := g.Revision(n.ID)
			target := "?"
			if t, ok := g.Node(n.RevisesNode); ok {
				target = thoughtLabel(t)
			}
			fmt.Fprintf(&b, "| %s | %s | %d |\n", thoughtLabel(n), target, rev.RevisionDepth)
		}
	}
	if anchors != nil {
		mdAnchors(&b, g, anchors)
	}
	return b.String()
}

// mdThought writes one thought: a heading with its number, cipher type and
// links, then its text and critique.
func mdThought(b *strings.Builder, g *Graph, n ThoughtNode, forks []BranchID) {
	fmt.Fprintf(b, "\n### %s", strconv.Itoa(n.Data.ThoughtNumber))
	if n.Cipher != nil {
		fmt.Fprintf(b, " (%s)", n.Cipher.Type.Name())
	}
	var marks []string
	if t, ok := g.Node(n.RevisesNode); ok {
		marks = append(marks, "revises "+thoughtLabel(t))
	}
	if rev, ok := g.Revision(n.ID); ok && len(rev.RevisedBy) > 0 {
		by := make([]string, 0, len(rev.RevisedBy))
		for _, id := range rev.RevisedBy {
			if t, ok := g.Node(id); ok {
				by = append(by, thoughtLabel(t))
			}
		}
		marks = append(marks, "revised by "+strings.Join(by, ", "))
	}
	if len(forks) > 0 {
		names := make([]string, len(forks))
		for i, f := range forks {
			names[i] = string(f)
		}
		marks = append(marks, "branches: "+strings.Join(names, ", "))
	}
	if !n.Data.NextThoughtNeeded {
		marks = append(marks, "final")
	}
	if len(marks) > 0 {
		fmt.Fprintf(b, " · %s", strings.Join(marks, "; "))
	}
	fmt.Fprintf(b, "\n\n%s\n", strings.TrimRight(n.Data.Thought, " \t\r\n"))
	if len(n.Data.Code) > 0 {
		refs := make([]string, len(n.Data.Code))
		for i, r := range n.Data.Code {
			refs[i] = "`" + strings.ReplaceAll(r.String(), "`", "'") + "`"
		}
		fmt.Fprintf(b, "\nCode: %s\n", strings.Join(refs, ", "))
	}
	if c := n.Data.Critique; c != nil {
		fmt.Fprintf(b, "\n> **Critique** by %s, %s:\n", c.Model, mdTime(c.Timestamp))
		for line := range strings.SplitSeq(strings.TrimRight(c.Text, "\n"), "\n") {
			fmt.Fprintf(b, "> %s\n", line)
		}
	}
}

func mdAnchors(b *strings.Builder, g *Graph, r *AnchorReport) {
	b.WriteString("\n## Cross-session anchors\n\n")
	if len(r.Resolved)+len(r.Unresolved) == 0 {
		b.WriteString("*No anchors in this session.*\n")
		return
	}
	src := func(a AnchorRef) string {
		if n, ok := g.Node(a.SourceNode); ok {
			return thoughtLabel(n)
		}
		return strconv.Itoa(a.SourceThought)
	}
	for _, a := range r.Resolved {
		fmt.Fprintf(b, "- `%s` in thought %s: session %q (`%s`, by %s), %s\n",
			a.Text, src(a.AnchorRef), a.SessionTitle, a.SessionID, a.Strategy, countOf(len(a.Nodes), "thought"))
	}
	for _, a := range r.Unresolved {
		fmt.Fprintf(b, "- `%s` in thought %s: unresolved, %s\n", a.Text, src(a.AnchorRef), a.Reason)
	}
}

func mdTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// cipherExport writes one cipher line per thought: the main chain, then
// each branch under a "# branch" comment line, after a "# session" comment
// line. A thought written in cipher keeps its parsed line; any other is
// written with what the ledger knows of it and nothing more (see
// plainCipher). Line breaks inside a thought are written as the two
// characters \n, so that every thought stays on one line. Comment lines
// start with '#', which no cipher line does.
func cipherExport(v *SessionView) string {
	sh := shapeOf(v.Graph)
	var b strings.Builder
	fmt.Fprintf(&b, "# session %s: %s\n", v.Session.ID, oneLineText(v.Session.Title))
	for _, n := range sh.main {
		b.WriteString(cipherLine(v.Graph, n))
	}
	for _, br := range sh.branches {
		fmt.Fprintf(&b, "# branch %s from S%d\n", br.ID, br.FromThought)
		for _, n := range sh.branchNodes[br.ID] {
			b.WriteString(cipherLine(v.Graph, n))
		}
	}
	return b.String()
}

func cipherLine(g *Graph, n ThoughtNode) string {
	line := ""
	if n.Cipher != nil {
		line = CipherExportInfo(*n.Cipher, n.Data.ThoughtNumber).String()
	} else {
		line = plainCipher(g, n)
	}
	return foldLines(line) + "\n"
}

// plainCipher writes a thought that was not written in cipher as
// S{n}|{type}|{refs}|{content}. A revision (the ledger recorded it as
// revising thought m) is type R with the one reference ^S{m}: the ledger
// knows that much. Any other thought gets an empty type — the agent
// declared none, and guessing one would put words in its mouth — which
// keeps the line from reading back as a typed cipher thought.
func plainCipher(g *Graph, n ThoughtNode) string {
	typ, refs := "", ""
	if t, ok := g.Node(n.RevisesNode); ok {
		typ, refs = string(CipherRevision), "^S"+strconv.Itoa(t.Data.ThoughtNumber)
	}
	return "S" + strconv.Itoa(n.Data.ThoughtNumber) + "|" + typ + "|" + refs + "|" + strings.TrimSpace(n.Data.Thought)
}

// foldLines writes line breaks as the two characters \n.
func foldLines(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\n", `\n`)
}

// oneLineText joins the lines of s with spaces.
func oneLineText(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
