package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/sharing"
)

type showCmd struct {
	ID string `arg:"" name:"id" help:"Session id or unique prefix."`
}

// showOutput is the JSON form of show.
type showOutput struct {
	Session   ledger.Session                   `json:"session"`
	Completed bool                             `json:"completed"`
	Integrity ledger.IntegrityValidationResult `json:"integrity"`
	Branches  []ledger.BranchInfo              `json:"branches"`
	// Nodes holds every thought in creation order.
	Nodes []ledger.ThoughtNode `json:"nodes"`
	// Revisions is the revision index, by node id, for the nodes that
	// revise or are revised.
	Revisions map[string]ledger.RevisionInfo `json:"revisions"`
	// Diverged lists remotes' chains of this session that were extended
	// differently there (kept by pull; empty when none).
	Diverged []sharing.DivergedChain `json:"diverged"`
}

func (c *showCmd) Run(a *app) error {
	id, err := a.resolve(c.ID)
	if err != nil {
		return err
	}
	v, err := a.ledger.Load(a.ctx, id)
	if err != nil {
		return err
	}
	if !v.Integrity.Valid {
		fmt.Fprintf(a.env.Stderr, "warning: session %s is damaged; showing what could be read ('thoughtbox verify %s' tells more)\n", id, id)
	}
	diverged, err := a.proj.Diverged(id)
	if err != nil {
		return err
	}
	if a.format == FormatJSON {
		out := showOutput{
			Session:   v.Session,
			Completed: v.Graph.Completed(),
			Integrity: v.Integrity,
			Branches:  v.Graph.Branches(),
			Nodes:     v.Graph.Nodes(),
			Revisions: map[string]ledger.RevisionInfo{},
			Diverged:  append([]sharing.DivergedChain{}, diverged...),
		}
		for _, n := range out.Nodes {
			if r, ok := v.Graph.Revision(n.ID); ok && (r.RevisionDepth > 0 || len(r.RevisedBy) > 0) {
				out.Revisions[n.ID] = r
			}
		}
		return writeJSON(a.env.Stdout, out)
	}
	writeTree(a.env.Stdout, v)
	writeDiverged(a.env.Stdout, diverged)
	return nil
}

// writeDiverged prints the remotes' chains kept after a divergence: the
// thoughts a remote has on a chain of this session that this ledger lacks.
func writeDiverged(w io.Writer, chains []sharing.DivergedChain) {
	for _, d := range chains {
		chain := "main chain"
		if _, b, ok := strings.Cut(d.Ref, "/branches/"); ok {
			chain = "branch " + b
		}
		since := "from its start"
		if d.Since != "" {
			since = "after commit " + d.Since[:7]
		}
		fmt.Fprintf(w, "\ndiverged: %s's %s went its own way %s (%s)\n", d.Remote, chain, since, plural(len(d.Thoughts), "thought", "thoughts"))
		for _, t := range d.Thoughts {
			fmt.Fprintf(w, "  %s\n", clip(t, maxShownLine))
		}
		fmt.Fprintf(w, "  kept as %s (git log %s)\n", d.KeptAs, strings.TrimPrefix(d.KeptAs, "refs/"))
	}
}

// maxShownLine bounds the first line shown for each thought.
const maxShownLine = 100

// writeTree prints a session as a tree: the main chain in creation order,
// each reasoning branch indented under the thought it forks from, and
// revisions marked.
//
//	1  The API got slower last week
//	2  Two suspects: the cache and the database
//	   ├─ branch cache (from 2, 2 thoughts)
//	   │  3  The cache hit rate fell
//	   │  4  Not the cache after all  [↺ revises 3]
//	   └─ branch db (from 2, 1 thought)
//	      3  The slow query log shows a full scan
//	3  It is the database  [done]
func writeTree(w io.Writer, v *ledger.SessionView) {
	s, g := v.Session, v.Graph
	fmt.Fprintf(w, "%s  %s\n", s.ID, s.Title)
	status := "in progress"
	if g.Completed() {
		status = "completed"
	}
	fmt.Fprintf(w, "%s, %s, %s; created %s, updated %s\n",
		plural(s.ThoughtCount, "thought", "thoughts"), plural(s.BranchCount, "branch", "branches"),
		status, stamp(s.CreatedAt), stamp(s.UpdatedAt))
	if len(s.Tags) > 0 {
		fmt.Fprintf(w, "tags: %s\n", strings.Join(s.Tags, ", "))
	}
	if s.Description != "" {
		fmt.Fprintf(w, "%s\n", oneLine(s.Description))
	}
	if g.Len() == 0 {
		fmt.Fprintln(w, "\n(no thoughts yet)")
		return
	}
	fmt.Fprintln(w)

	t := treeWriter{w: w, g: g, width: numberWidth(g)}
	forks := map[string][]ledger.BranchInfo{}
	var orphans []ledger.BranchInfo // branches whose fork point is gone
	for _, b := range g.Branches() {
		if b.Origin == "" {
			orphans = append(orphans, b)
			continue
		}
		forks[b.Origin] = append(forks[b.Origin], b)
	}
	for _, n := range g.MainChain() {
		t.thought("", n)
		bs := forks[n.ID]
		for i, b := range bs {
			t.branch(b, i == len(bs)-1, "")
		}
	}
	for i, b := range orphans {
		t.branch(b, i == len(orphans)-1, "fork point missing")
	}
}

type treeWriter struct {
	w     io.Writer
	g     *ledger.Graph
	width int
}

func (t *treeWriter) branch(b ledger.BranchInfo, last bool, note string) {
	indent := strings.Repeat(" ", t.width+2)
	head, body := "├─ ", "│  "
	if last {
		head, body = "└─ ", "   "
	}
	desc := fmt.Sprintf("from %d, %s", b.FromThought, plural(b.Count, "thought", "thoughts"))
	if note != "" {
		desc += ", " + note
	}
	fmt.Fprintf(t.w, "%s%sbranch %s (%s)\n", indent, head, b.ID, desc)
	nodes, _ := t.g.Branch(b.ID)
	for _, n := range nodes {
		t.thought(indent+body, n)
	}
}

func (t *treeWriter) thought(prefix string, n ledger.ThoughtNode) {
	text := clip(oneLine(n.Data.Thought), maxShownLine)
	var marks []string
	if n.RevisesNode != "" {
		marks = append(marks, "↺ revises "+t.ref(n.RevisesNode, n.BranchID))
	}
	if r, ok := t.g.Revision(n.ID); ok && len(r.RevisedBy) > 0 {
		refs := make([]string, len(r.RevisedBy))
		for i, id := range r.RevisedBy {
			refs[i] = t.ref(id, n.BranchID)
		}
		marks = append(marks, "revised by "+strings.Join(refs, ", "))
	}
	if !n.Data.NextThoughtNeeded {
		marks = append(marks, "done")
	}
	if len(n.Data.Code) > 0 {
		refs := make([]string, len(n.Data.Code))
		for i, r := range n.Data.Code {
			refs[i] = r.String()
		}
		marks = append(marks, "code "+strings.Join(refs, ", "))
	}
	line := fmt.Sprintf("%s%*d  %s", prefix, t.width, n.Data.ThoughtNumber, text)
	if len(marks) > 0 {
		line += "  [" + strings.Join(marks, "; ") + "]"
	}
	fmt.Fprintln(t.w, line)
}

// ref names a node for a reader looking at a thought on branch from: its
// bare number on the same chain, "main 3" or "cache 3" on another.
func (t *treeWriter) ref(id string, from ledger.BranchID) string {
	n, ok := t.g.Node(id)
	if !ok {
		return id
	}
	num := strconv.Itoa(n.Data.ThoughtNumber)
	switch {
	case n.BranchID == from:
		return num
	case n.BranchID == "":
		return "main " + num
	}
	return string(n.BranchID) + " " + num
}

// numberWidth is the width of the widest thought number.
func numberWidth(g *ledger.Graph) int {
	w := 1
	for _, n := range g.Nodes() {
		if l := len(strconv.Itoa(n.Data.ThoughtNumber)); l > w {
			w = l
		}
	}
	return w
}
