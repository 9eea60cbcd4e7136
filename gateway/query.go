package gateway

// Reading a session back: read_thoughts and get_structure (seed 002,
// "Thought Query Types").

import (
	"context"
	"fmt"

	"github.com/thoughtbox/thoughtbox/ledger"
)

type thoughtRange struct {
	Start *int `json:"start"`
	End   *int `json:"end"`
}

// readThoughtsParams is seed 002's ReadThoughtsQuery, plus the session.
type readThoughtsParams struct {
	SessionID     string        `json:"sessionId,omitempty" schema:"note=default: the active session"`
	ThoughtNumber *int          `json:"thoughtNumber,omitempty"`
	Last          *int          `json:"last,omitempty"`
	Range         *thoughtRange `json:"range,omitempty"`
	BranchID      string        `json:"branchId,omitempty"`
	// Limit and Offset page whatever the query selects; without them
	// every thought it selects comes back, as seed 002 says.
	Limit  *int `json:"limit,omitempty" schema:"note=1-100: page the thoughts selected, with offset"`
	Offset int  `json:"offset,omitempty"`
}

func (p *readThoughtsParams) check() error {
	if p.Offset < 0 {
		return ledger.InvalidField("offset", "must be at least 0, got %d", p.Offset)
	}
	if err := checkLimit(p.Limit); err != nil {
		return err
	}
	// branchId alone reads a branch; beside thoughtNumber or range it
	// names the chain they read (the main chain otherwise).
	if err := oneOf(map[string]bool{
		"thoughtNumber": p.ThoughtNumber != nil,
		"last":          p.Last != nil,
		"range":         p.Range != nil,
	}); err != nil {
		return err
	}
	if p.Last != nil && p.BranchID != "" {
		return oneOf(map[string]bool{"last": true, "branchId": true})
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"thoughtNumber", p.ThoughtNumber}, {"last", p.Last}} {
		if f.v != nil && *f.v < 1 {
			return ledger.InvalidField(f.name, "must be at least 1, got %d", *f.v)
		}
	}
	if r := p.Range; r != nil {
		switch {
		case r.Start == nil:
			return ledger.InvalidField("range.start", "is required (integer, at least 1)")
		case r.End == nil:
			return ledger.InvalidField("range.end", "is required (integer, at least range.start)")
		case *r.Start < 1:
			return ledger.InvalidField("range.start", "must be at least 1, got %d", *r.Start)
		case *r.End < *r.Start:
			return ledger.InvalidField("range.end", "must be at least range.start (%d), got %d", *r.Start, *r.End)
		}
	}
	if p.BranchID != "" {
		if _, err := ledger.NewBranchID(p.BranchID); err != nil {
			return err
		}
	}
	return nil
}

// query echoes the query that ran.
func (p *readThoughtsParams) query() map[string]any {
	q := map[string]any{}
	switch {
	case p.ThoughtNumber != nil:
		q["thoughtNumber"] = *p.ThoughtNumber
	case p.Last != nil:
		q["last"] = *p.Last
	case p.Range != nil:
		q["range"] = map[string]int{"start": *p.Range.Start, "end": *p.Range.End}
	case p.BranchID == "":
		q["mainChain"] = true
	}
	if p.BranchID != "" {
		q["branchId"] = p.BranchID
	}
	if p.Limit != nil {
		q["limit"] = *p.Limit
	}
	if p.Offset > 0 {
		q["offset"] = p.Offset
	}
	return q
}

// readThoughtsReply is seed 002's ReadThoughtsResponse.
type readThoughtsReply struct {
	Thoughts  []ledger.ThoughtData `json:"thoughts"`
	Count     int                  `json:"count"`
	SessionID string               `json:"sessionId"`
	Query     map[string]any       `json:"query"`
	// Branches names the session's branches when the main chain is read,
	// so that an agent knows there is more.
	Branches []ledger.BranchID `json:"branches,omitempty"`
	// Total is how many thoughts the query selects; HasMore says a page
	// (limit, offset) left some after it, and Hint how to ask for them.
	Total   int    `json:"total"`
	HasMore bool   `json:"hasMore"`
	Hint    string `json:"hint,omitempty"`
}

func readThoughts(ctx context.Context, c *call, p *readThoughtsParams) (any, error) {
	id, err := c.activeSession(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	v, err := c.ledger.View(ctx, id)
	if err != nil {
		return nil, err
	}
	nodes, err := selectThoughts(v.Graph, p)
	if err != nil {
		return nil, err
	}
	total := len(nodes)
	nodes = nodes[min(p.Offset, total):]
	if p.Limit != nil {
		nodes = nodes[:min(*p.Limit, len(nodes))]
	}
	r := &readThoughtsReply{Thoughts: make([]ledger.ThoughtData, len(nodes)), Count: len(nodes), SessionID: id, Query: p.query(), Total: total}
	if end := min(p.Offset, total) + len(nodes); end < total {
		r.HasMore = true
		r.Hint = fmt.Sprintf("%d more: call read_thoughts again with the same query and offset %d", total-end, end)
	}
	for i, n := range nodes {
		r.Thoughts[i] = n.Data
	}
	if _, all := r.Query["mainChain"]; all {
		r.Branches = v.Graph.BranchIDs()
	}
	return r, nil
}

// selectThoughts runs a ReadThoughtsQuery against a graph:
//   - no query: the main chain;
//   - thoughtNumber N: the main chain's thought N — or, with branchId, the
//     branch's (THOUGHT_NOT_FOUND when there is none); seed 002 calls it
//     "get single specific thought", so it never returns two;
//   - last: the N most recent thoughts on any chain, in creation order;
//   - range: the main chain's thoughts numbered start..end, or the
//     branch's with branchId;
//   - branchId alone: the branch's thoughts.
func selectThoughts(g *ledger.Graph, p *readThoughtsParams) ([]ledger.ThoughtNode, error) {
	if p.Last != nil {
		all := g.Nodes()
		return all[max(0, len(all)-*p.Last):], nil
	}
	chain := g.MainChain()
	if p.BranchID != "" {
		nodes, ok := g.Branch(ledger.BranchID(p.BranchID))
		if !ok {
			e := ledger.InvalidField("branchId", "session %s has no branch %q; its branches: %v", g.SessionID(), p.BranchID, g.BranchIDs())
			e.Details["branches"] = g.BranchIDs()
			return nil, e
		}
		chain = nodes
	}
	switch {
	case p.ThoughtNumber != nil:
		n := *p.ThoughtNumber
		out := numbered(chain, n, n)
		if len(out) == 0 {
			return nil, thoughtNotFound(g.SessionID(), p.BranchID, n)
		}
		return out, nil
	case p.Range != nil:
		return numbered(chain, *p.Range.Start, *p.Range.End), nil
	}
	return chain, nil
}

// numbered lists the thoughts of chain numbered start..end.
func numbered(chain []ledger.ThoughtNode, start, end int) []ledger.ThoughtNode {
	out := []ledger.ThoughtNode{}
	for _, n := range chain {
		if num := n.Data.ThoughtNumber; num >= start && num <= end {
			out = append(out, n)
		}
	}
	return out
}

// inRange lists the thoughts numbered start..end on any chain, in
// creation order (the range resource template's listing).
func inRange(g *ledger.Graph, start, end int) []ledger.ThoughtNode {
	return numbered(g.Nodes(), start, end)
}

func thoughtNotFound(sessionID, branch string, n int) *ledger.Error {
	where := "main chain"
	if branch != "" {
		where = "branch " + branch
	}
	e := ledger.Errorf(ledger.CodeThoughtNotFound, "session %s has no thought %d on its %s: %w", sessionID, n, where, ledger.ErrThoughtNotFound)
	e.Details = map[string]any{"sessionId": sessionID, "thoughtNumber": n}
	if branch != "" {
		e.Details["branchId"] = branch
	}
	return e
}

type getStructureParams struct {
	SessionID string `json:"sessionId,omitempty"`
}

type chainRange struct {
	First int `json:"first"`
	Last  int `json:"last"`
}

type mainChainInfo struct {
	Count int        `json:"count"`
	Range chainRange `json:"range"`
}

type branchSummary struct {
	ID          ledger.BranchID `json:"id"`
	FromThought int             `json:"fromThought"`
	Count       int             `json:"count"`
}

type revisionSummary struct {
	ThoughtNumber int             `json:"thoughtNumber"`
	Revises       int             `json:"revises"`
	BranchID      ledger.BranchID `json:"branchId,omitempty"`
}

type structureSummary struct {
	TotalThoughts  int `json:"totalThoughts"`
	TotalBranches  int `json:"totalBranches"`
	TotalRevisions int `json:"totalRevisions"`
}

// structureReply is seed 002's GetStructureResponse.
type structureReply struct {
	SessionID string            `json:"sessionId"`
	MainChain mainChainInfo     `json:"mainChain"`
	Branches  []branchSummary   `json:"branches"`
	Revisions []revisionSummary `json:"revisions"`
	Summary   structureSummary  `json:"summary"`
}

func getStructure(ctx context.Context, c *call, p *getStructureParams) (any, error) {
	id, err := c.activeSession(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	v, err := c.ledger.View(ctx, id)
	if err != nil {
		return nil, err
	}
	return structureOf(v.Graph), nil
}

func structureOf(g *ledger.Graph) *structureReply {
	r := &structureReply{SessionID: g.SessionID(), Branches: []branchSummary{}, Revisions: []revisionSummary{}}
	main := g.MainChain()
	r.MainChain.Count = len(main)
	if len(main) > 0 {
		r.MainChain.Range = chainRange{First: main[0].Data.ThoughtNumber, Last: main[len(main)-1].Data.ThoughtNumber}
	}
	for _, b := range g.Branches() {
		r.Branches = append(r.Branches, branchSummary{ID: b.ID, FromThought: b.FromThought, Count: b.Count})
	}
	for _, n := range g.Nodes() {
		if n.Data.IsRevision && n.Data.RevisesThought != nil {
			r.Revisions = append(r.Revisions, revisionSummary{ThoughtNumber: n.Data.ThoughtNumber, Revises: *n.Data.RevisesThought, BranchID: n.BranchID})
		}
	}
	r.Summary = structureSummary{TotalThoughts: g.Len(), TotalBranches: len(r.Branches), TotalRevisions: len(r.Revisions)}
	return r
}
