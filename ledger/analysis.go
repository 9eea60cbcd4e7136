package ledger

// Session analysis: the objective metrics of seed 002 (SessionAnalysis) and
// the shape facts that analyze, deep_analysis and extract_learnings share.
// Everything here is a deterministic function of a SessionView: the same
// session always yields the same numbers.

import (
	"math"
	"time"
)

// SessionAnalysis is seed 002's SessionAnalysis: objective metrics of one
// session's structure. See Analyze for the formulas.
type SessionAnalysis struct {
	SessionID string           `json:"sessionId"`
	Metadata  AnalysisMetadata `json:"metadata"`
	Structure StructureMetrics `json:"structure"`
	Quality   QualityMetrics   `json:"quality"`
}

// AnalysisMetadata describes the analysed session.
type AnalysisMetadata struct {
	Title         string   `json:"title"`
	Tags          []string `json:"tags"`
	ThoughtCount  int      `json:"thoughtCount"`
	BranchCount   int      `json:"branchCount"`
	RevisionCount int      `json:"revisionCount"`
	// Duration is the time from the earliest thought to the latest, in
	// milliseconds.
	Duration      int64     `json:"duration"`
	CreatedAt     time.Time `json:"createdAt"`
	LastUpdatedAt time.Time `json:"lastUpdatedAt"`
}

// StructureMetrics are the shape metrics of a session.
type StructureMetrics struct {
	LinearityScore float64 `json:"linearityScore"`
	RevisionRate   float64 `json:"revisionRate"`
	MaxDepth       int     `json:"maxDepth"`
	ThoughtDensity float64 `json:"thoughtDensity"`
}

// QualityMetrics are the completion metrics of a session.
type QualityMetrics struct {
	CritiqueRequests int  `json:"critiqueRequests"`
	HasConvergence   bool `json:"hasConvergence"`
	IsComplete       bool `json:"isComplete"`
}

// Analyze computes a session's SessionAnalysis. With T the number of
// thoughts (branch thoughts included), R the number of revisions, and B the
// number of branches:
//
//   - linearityScore = (main-chain thoughts that are not revisions) / T:
//     the share of thoughts that simply carried the main line forward. 1
//     for a single chain without revisions (and for an empty session); it
//     falls as branches and revisions are added.
//   - revisionRate = R / T (0 for an empty session).
//   - maxDepth = B, the number of distinct branch ids (seed 002). Branches
//     fork from the main chain only, so their count is how deep the
//     exploration went.
//   - thoughtDensity = T / minutes from the earliest thought's timestamp to
//     the latest; 0 when that span is zero (one thought, or all at once),
//     where a rate means nothing.
//   - critiqueRequests = thoughts that carry a critique. A critique the
//     client could not provide leaves no trace in the ledger, so requests
//     are counted by their answers.
//   - hasConvergence: the session has branches, and every branch with
//     thoughts is followed by a main-chain thought created after the
//     branch's last thought — the explorations were brought back. False
//     without branches: there was nothing to converge.
//   - isComplete: the most recent thought said nextThoughtNeeded=false.
//
// Ratios are rounded to four decimal places.
func Analyze(v *SessionView) SessionAnalysis {
	s := shapeOf(v.Graph)
	t := len(s.nodes)
	a := SessionAnalysis{
		SessionID: v.Session.ID,
		Metadata: AnalysisMetadata{
			Title:         v.Session.Title,
			Tags:          orEmpty(v.Session.Tags),
			ThoughtCount:  t,
			BranchCount:   len(s.branches),
			RevisionCount: len(s.revisions),
			Duration:      s.duration().Milliseconds(),
			CreatedAt:     v.Session.CreatedAt,
			LastUpdatedAt: v.Session.UpdatedAt,
		},
		Structure: StructureMetrics{
			LinearityScore: s.linearity(),
			RevisionRate:   ratio(len(s.revisions), t),
			MaxDepth:       len(s.branches),
		},
		Quality: QualityMetrics{
			HasConvergence: len(s.branches) > 0 && s.convergenceRate() == 1,
			IsComplete:     v.Graph.Completed(),
		},
	}
	if d := s.duration(); d > 0 {
		a.Structure.ThoughtDensity = round4(float64(t) / d.Minutes())
	}
	for _, n := range s.nodes {
		if n.Data.Critique != nil {
			a.Quality.CritiqueRequests++
		}
	}
	return a
}

// shape holds the structural facts of a session that the analyses share.
type shape struct {
	g     *Graph
	nodes []ThoughtNode  // every thought, in creation order
	pos   map[string]int // node id → index in nodes
	main  []ThoughtNode
	// branches are in creation order; branchNodes holds each one's thoughts.
	branches    []BranchInfo
	branchNodes map[BranchID][]ThoughtNode
	revisions   []ThoughtNode
	// lastMain is the creation index of the latest main-chain thought, -1
	// if there is none.
	lastMain    int
	first, last time.Time
}

func shapeOf(g *Graph) *shape {
	s := &shape{
		g:           g,
		nodes:       g.Nodes(),
		main:        g.MainChain(),
		branches:    g.Branches(),
		branchNodes: map[BranchID][]ThoughtNode{},
		lastMain:    -1,
	}
	s.pos = make(map[string]int, len(s.nodes))
	for i, n := range s.nodes {
		s.pos[n.ID] = i
		if n.Data.IsRevision {
			s.revisions = append(s.revisions, n)
		}
		if n.BranchID == "" {
			s.lastMain = i
		}
		ts := n.Data.Timestamp
		if s.first.IsZero() || ts.Before(s.first) {
			s.first = ts
		}
		if ts.After(s.last) {
			s.last = ts
		}
	}
	for _, b := range s.branches {
		s.branchNodes[b.ID], _ = g.Branch(b.ID)
	}
	return s
}

func (s *shape) duration() time.Duration {
	if s.first.IsZero() {
		return 0
	}
	return s.last.Sub(s.first)
}

// linearity is the share of thoughts that are main-chain non-revisions.
func (s *shape) linearity() float64 {
	if len(s.nodes) == 0 {
		return 1
	}
	straight := 0
	for _, n := range s.main {
		if !n.Data.IsRevision {
			straight++
		}
	}
	return ratio(straight, len(s.nodes))
}

// converged reports whether a main-chain thought was created after the
// last thought of branch b. A branch without thoughts has not converged.
func (s *shape) converged(b BranchID) bool {
	nodes := s.branchNodes[b]
	if len(nodes) == 0 {
		return false
	}
	return s.lastMain > s.pos[nodes[len(nodes)-1].ID]
}

// convergenceRate is the share of branches that converged; 0 without
// branches.
func (s *shape) convergenceRate() float64 {
	n := 0
	for _, b := range s.branches {
		if s.converged(b.ID) {
			n++
		}
	}
	return ratio(n, len(s.branches))
}

// mainAfter returns the first main-chain thought created after creation
// index i.
func (s *shape) mainAfter(i int) (ThoughtNode, bool) {
	for j := i + 1; j < len(s.nodes); j++ {
		if s.nodes[j].BranchID == "" {
			return s.nodes[j], true
		}
	}
	return ThoughtNode{}, false
}

// ratio is n/d rounded to four decimals, 0 when d is 0.
func ratio(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return round4(float64(n) / float64(d))
}

// round4 rounds to four decimal places, so that reports and golden files
// carry stable, readable numbers.
func round4(f float64) float64 {
	return math.Round(f*10000) / 10000
}

func clamp01(f float64) float64 {
	return math.Max(0, math.Min(1, f))
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
