package ledger

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DeepAnalysisType selects the report deep_analysis produces.
type DeepAnalysisType string

// The deep analysis types.
const (
	DeepPatterns       DeepAnalysisType = "patterns"
	DeepCognitiveLoad  DeepAnalysisType = "cognitive_load"
	DeepDecisionPoints DeepAnalysisType = "decision_points"
	DeepFull           DeepAnalysisType = "full"
)

// ParseDeepAnalysisType accepts patterns, cognitive_load, decision_points or
// full; "" means full.
func ParseDeepAnalysisType(s string) (DeepAnalysisType, error) {
	switch t := DeepAnalysisType(s); t {
	case DeepPatterns, DeepCognitiveLoad, DeepDecisionPoints, DeepFull:
		return t, nil
	case "":
		return DeepFull, nil
	}
	return "", InvalidField("analysisType", "must be patterns, cognitive_load, decision_points or full, got %q", s)
}

// ReasoningPattern is a shape of reasoning (seed 002, SessionPatternAnalysis).
type ReasoningPattern string

// The reasoning patterns, in the order ties are broken.
const (
	PatternLinear      ReasoningPattern = "linear"
	PatternExploratory ReasoningPattern = "exploratory"
	PatternIterative   ReasoningPattern = "iterative"
	PatternConvergent  ReasoningPattern = "convergent"
	PatternDivergent   ReasoningPattern = "divergent"
)

var reasoningPatterns = []ReasoningPattern{PatternLinear, PatternExploratory, PatternIterative, PatternConvergent, PatternDivergent}

// InsightType classifies an Insight (seed 002).
type InsightType string

// The insight types.
const (
	InsightPatternDetected InsightType = "pattern_detected"
	InsightAnomaly         InsightType = "anomaly"
	InsightOptimization    InsightType = "optimization_suggestion"
	InsightQuality         InsightType = "quality_observation"
)

// DeepAnalysisResult is seed 002's DeepAnalysisResult. Patterns and Metrics
// are always present (the schema requires them, and they are cheap); the
// analysis type selects the insights, and DecisionPoints is filled for
// decision_points and full.
type DeepAnalysisResult struct {
	SessionID         string                 `json:"sessionId"`
	AnalysisType      DeepAnalysisType       `json:"analysisType"`
	Patterns          SessionPatternAnalysis `json:"patterns"`
	Metrics           DeepMetrics            `json:"metrics"`
	Insights          []Insight              `json:"insights"`
	DecisionPoints    []DecisionPoint        `json:"decisionPoints,omitempty"`
	AnalysisTimestamp time.Time              `json:"analysisTimestamp"`
}

// SessionPatternAnalysis is seed 002's SessionPatternAnalysis.
type SessionPatternAnalysis struct {
	DominantPattern ReasoningPattern    `json:"dominantPattern"`
	AllPatterns     []PatternFrequency  `json:"allPatterns"`
	Transitions     []PatternTransition `json:"transitions"`
}

// PatternFrequency is the share of a session's thoughts in one pattern.
type PatternFrequency struct {
	Pattern   ReasoningPattern `json:"pattern"`
	Frequency float64          `json:"frequency"`
	Count     int              `json:"count"`
}

// PatternTransition is a change of pattern between two consecutive
// thoughts in creation order.
type PatternTransition struct {
	From      ReasoningPattern `json:"from"`
	To        ReasoningPattern `json:"to"`
	AtThought int              `json:"atThought"`
	AtNode    string           `json:"atNode"`
}

// DeepMetrics are the metrics of a deep analysis; see DeepAnalysis.
type DeepMetrics struct {
	CognitiveLoad    float64 `json:"cognitiveLoad"`
	LinearityScore   float64 `json:"linearityScore"`
	ExplorationDepth int     `json:"explorationDepth"`
	ConvergenceRate  float64 `json:"convergenceRate"`
}

// Insight is an observation about a session, with how much the heuristic
// that made it trusts it and the thoughts it concerns.
type Insight struct {
	Type            InsightType `json:"type"`
	Description     string      `json:"description"`
	Confidence      float64     `json:"confidence"`
	RelatedThoughts []int       `json:"relatedThoughts"`
	// RelatedNodes names the same thoughts by node id.
	RelatedNodes []string `json:"relatedNodes"`
}

// DecisionPoint is a place where the reasoning chose: a fork into
// branches, a revision, or the conclusion.
type DecisionPoint struct {
	Kind          string   `json:"kind"` // fork, revision or conclusion
	ThoughtNumber int      `json:"thoughtNumber"`
	NodeID        string   `json:"nodeId"`
	BranchID      BranchID `json:"branchId,omitempty"`
	// Options lists, for a fork, the main chain ("main", if it went on)
	// and the branches forked there.
	Options     []string `json:"options,omitempty"`
	Description string   `json:"description"`
}

// maxListed bounds the thought numbers an insight lists.
const maxListed = 5

// Confidences of the insights. They rank how directly an insight follows
// from the structure: a fact read off the graph scores high, a judgement
// about what the structure means scores lower.
const (
	confFact      = 0.95 // read directly off the graph
	confLikely    = 0.8  // a structural fact with one interpretive step
	confPlausible = 0.6  // a judgement that usually holds
	confHunch     = 0.4  // worth a look, often wrong
)

// DeepAnalysis derives patterns, metrics and insights from a session.
//
// Each thought, in creation order, is given one pattern:
//   - iterative: a revision;
//   - exploratory: a thought of a branch the main chain later went on from
//     (see Analyze, hasConvergence); divergent: of a branch it never did;
//   - convergent: a main-chain thought created right after a branch
//     thought — the point where reasoning came back;
//   - linear: any other main-chain thought.
//
// allPatterns gives each pattern's share of the thoughts (patterns with
// none are left out); dominantPattern is the most frequent, ties going to
// the earlier of linear, exploratory, iterative, convergent, divergent
// (linear for an empty session); transitions lists each change of pattern
// between consecutive thoughts.
//
// Metrics, with T thoughts, B branches, R revisions:
//   - cognitiveLoad = the mean of four terms, each capped at 1:
//     B/4 (branches to keep in mind), 4R/T (one revision in four thoughts
//     saturates), refs/(2T) (resolved cipher references per thought, two
//     saturating), and T/50 (length);
//   - linearityScore as in Analyze;
//   - explorationDepth = the most thoughts any one branch holds: how far an
//     alternative was pursued (branches fork from the main chain only);
//   - convergenceRate = the share of branches the main chain went on from
//     (0 without branches).
//
// The insights of each type, in this order:
//   - every type: an anomaly if the session failed its integrity check;
//   - patterns: the dominant pattern; an anomaly if the pattern changed at
//     more than half the steps (six thoughts or more); a suggestion if more
//     than 30% of thoughts are revisions; a note if ten or more thoughts
//     have no revision at all;
//   - cognitive_load: the load level; a suggestion above 0.7; an anomaly
//     for each revision of a revision; a suggestion to use the cipher when
//     five or more thoughts have none;
//   - decision_points: each fork with its options; each branch left open;
//     the conclusion, or its absence; an anomaly for each forward jump in
//     main-chain numbering.
func DeepAnalysis(v *SessionView, typ DeepAnalysisType, at time.Time) DeepAnalysisResult {
	s := shapeOf(v.Graph)
	r := DeepAnalysisResult{
		SessionID:         v.Session.ID,
		AnalysisType:      typ,
		Patterns:          s.patterns(),
		Metrics:           s.deepMetrics(),
		Insights:          []Insight{},
		AnalysisTimestamp: at,
	}
	d := &deep{s: s, r: &r}
	if !v.Integrity.Valid {
		d.insight(InsightAnomaly, 1, fmt.Sprintf("the session failed its integrity check (%s); the analysis covers what could be read",
			strings.Join(v.Integrity.Errors, "; ")))
	}
	if typ == DeepPatterns || typ == DeepFull {
		d.patternInsights()
	}
	if typ == DeepCognitiveLoad || typ == DeepFull {
		d.loadInsights()
	}
	if typ == DeepDecisionPoints || typ == DeepFull {
		d.decisionPoints()
	}
	return r
}

// patternOf gives each thought its pattern (see DeepAnalysis).
func (s *shape) patternOf() []ReasoningPattern {
	out := make([]ReasoningPattern, len(s.nodes))
	for i, n := range s.nodes {
		switch {
		case n.Data.IsRevision:
			out[i] = PatternIterative
		case n.BranchID != "" && s.converged(n.BranchID):
			out[i] = PatternExploratory
		case n.BranchID != "":
			out[i] = PatternDivergent
		case i > 0 && s.nodes[i-1].BranchID != "":
			out[i] = PatternConvergent
		default:
			out[i] = PatternLinear
		}
	}
	return out
}

func (s *shape) patterns() SessionPatternAnalysis {
	labels := s.patternOf()
	r := SessionPatternAnalysis{DominantPattern: PatternLinear, AllPatterns: []PatternFrequency{}, Transitions: []PatternTransition{}}
	counts := map[ReasoningPattern]int{}
	for i, p := range labels {
		counts[p]++
		if i > 0 && labels[i-1] != p {
			n := s.nodes[i]
			r.Transitions = append(r.Transitions, PatternTransition{From: labels[i-1], To: p, AtThought: n.Data.ThoughtNumber, AtNode: n.ID})
		}
	}
	best := 0
	for _, p := range reasoningPatterns {
		if c := counts[p]; c > 0 {
			r.AllPatterns = append(r.AllPatterns, PatternFrequency{Pattern: p, Frequency: ratio(c, len(labels)), Count: c})
			if c > best {
				best, r.DominantPattern = c, p
			}
		}
	}
	// Most frequent first; reasoningPatterns breaks ties (the sort is stable).
	slices.SortStableFunc(r.AllPatterns, func(a, b PatternFrequency) int { return b.Count - a.Count })
	return r
}

func (s *shape) deepMetrics() DeepMetrics {
	m := DeepMetrics{LinearityScore: s.linearity(), ConvergenceRate: s.convergenceRate()}
	for _, b := range s.branches {
		m.ExplorationDepth = max(m.ExplorationDepth, len(s.branchNodes[b.ID]))
	}
	m.CognitiveLoad = s.cognitiveLoad()
	return m
}

func (s *shape) cognitiveLoad() float64 {
	t := float64(len(s.nodes))
	if t == 0 {
		return 0
	}
	refs := 0
	for _, n := range s.nodes {
		if n.Cipher != nil {
			for _, r := range n.Cipher.Refs {
				if r.Node != "" {
					refs++
				}
			}
		}
	}
	terms := []float64{
		float64(len(s.branches)) / 4,
		4 * float64(len(s.revisions)) / t,
		float64(refs) / (2 * t),
		t / 50,
	}
	sum := 0.0
	for _, x := range terms {
		sum += clamp01(x)
	}
	return round4(sum / float64(len(terms)))
}

// deep collects the insights of one analysis.
type deep struct {
	s *shape
	r *DeepAnalysisResult
}

func (d *deep) insight(t InsightType, conf float64, desc string, related ...ThoughtNode) {
	in := Insight{Type: t, Description: desc, Confidence: conf, RelatedThoughts: []int{}, RelatedNodes: []string{}}
	seen := map[string]bool{}
	for _, n := range related {
		if n.ID != "" && !seen[n.ID] {
			seen[n.ID] = true
			in.RelatedThoughts = append(in.RelatedThoughts, n.Data.ThoughtNumber)
			in.RelatedNodes = append(in.RelatedNodes, n.ID)
		}
	}
	d.r.Insights = append(d.r.Insights, in)
}

func (d *deep) patternInsights() {
	s, p := d.s, d.r.Patterns
	t := len(s.nodes)
	if t == 0 {
		d.insight(InsightQuality, confFact, "the session has no thoughts yet")
		return
	}
	share := 0.0
	for _, f := range p.AllPatterns {
		if f.Pattern == p.DominantPattern {
			share = f.Frequency
		}
	}
	d.insight(InsightPatternDetected, share, fmt.Sprintf("dominant pattern: %s (%.0f%% of thoughts)", p.DominantPattern, share*100))
	if t >= 6 && 2*len(p.Transitions) > t {
		var at []ThoughtNode
		for _, tr := range p.Transitions {
			n, _ := s.g.Node(tr.AtNode)
			at = append(at, n)
		}
		d.insight(InsightAnomaly, confPlausible, fmt.Sprintf("the reasoning changed shape %d times in %d thoughts: it may have lacked a plan", len(p.Transitions), t), at...)
	}
	if rate := ratio(len(s.revisions), t); rate > 0.3 {
		d.insight(InsightOptimization, confPlausible, fmt.Sprintf("%.0f%% of thoughts are revisions: checking a step before recording it would save corrections", rate*100), s.revisions...)
	}
	if t >= 10 && len(s.revisions) == 0 {
		d.insight(InsightQuality, confHunch, fmt.Sprintf("%d thoughts without a single revision: either the reasoning was sound throughout, or mistakes went unacknowledged", t))
	}
}

func (d *deep) loadInsights() {
	s, load := d.s, d.r.Metrics.CognitiveLoad
	level := "low"
	switch {
	case load >= 0.7:
		level = "high"
	case load >= 0.35:
		level = "moderate"
	}
	d.insight(InsightQuality, confLikely, fmt.Sprintf("cognitive load %.2f (%s): %s, %s, %d thoughts",
		load, level, countOf(len(s.branches), "branch"), countOf(len(s.revisions), "revision"), len(s.nodes)))
	if load >= 0.7 {
		d.insight(InsightOptimization, load, "high load: close or summarise open branches, and conclude sub-questions before opening new ones")
	}
	for _, n := range s.revisions {
		if rev, _ := s.g.Revision(n.ID); rev.RevisionDepth >= 2 {
			target, _ := s.g.Node(n.RevisesNode)
			d.insight(InsightAnomaly, confLikely, fmt.Sprintf("thought %s revises thought %s, itself a revision: the same point was corrected %s",
				thoughtLabel(n), thoughtLabel(target), timesOf(rev.RevisionDepth)), target, n)
		}
	}
	plain := 0
	for _, n := range s.nodes {
		if n.Cipher == nil {
			plain++
		}
	}
	if plain >= 5 && plain == len(s.nodes) {
		d.insight(InsightOptimization, confHunch, "no thought is written in cipher notation: typed steps and S{n} references would make the structure explicit and the analysis sharper")
	}
}

func (d *deep) decisionPoints() {
	s := d.s
	d.r.DecisionPoints = []DecisionPoint{}
	forks := map[string][]BranchInfo{}
	var forkOrder []string
	for _, b := range s.branches {
		if b.Origin == "" {
			continue
		}
		if _, ok := forks[b.Origin]; !ok {
			forkOrder = append(forkOrder, b.Origin)
		}
		forks[b.Origin] = append(forks[b.Origin], b)
	}
	slices.SortFunc(forkOrder, func(a, b string) int { return s.pos[a] - s.pos[b] })
	for _, id := range forkOrder {
		origin, _ := s.g.Node(id)
		var options []string
		related := []ThoughtNode{origin}
		for _, id := range origin.Next {
			if next, ok := s.g.Node(id); ok && next.BranchID == "" {
				options = append(options, "main")
				related = append(related, next)
			}
		}
		for _, b := range forks[id] {
			options = append(options, string(b.ID))
			if nodes := s.branchNodes[b.ID]; len(nodes) > 0 {
				related = append(related, nodes[0])
			}
		}
		desc := fmt.Sprintf("decision point at thought %d: %s explored (%s)", origin.Data.ThoughtNumber,
			countOf(len(options), "alternative"), strings.Join(options, ", "))
		d.r.DecisionPoints = append(d.r.DecisionPoints, DecisionPoint{Kind: "fork", ThoughtNumber: origin.Data.ThoughtNumber, NodeID: id, Options: options, Description: desc})
		d.insight(InsightPatternDetected, confFact, desc, related...)
	}
	for _, b := range s.branches {
		nodes := s.branchNodes[b.ID]
		if len(nodes) == 0 || s.converged(b.ID) {
			continue
		}
		origin, _ := s.g.Node(b.Origin)
		d.insight(InsightQuality, confLikely, fmt.Sprintf("branch %s (from thought %d) was left open: the main chain never went on after it", b.ID, b.FromThought),
			append([]ThoughtNode{origin}, nodes...)...)
	}
	for _, n := range s.revisions {
		target, _ := s.g.Node(n.RevisesNode)
		desc := fmt.Sprintf("thought %s reconsidered thought %s", thoughtLabel(n), thoughtLabel(target))
		d.r.DecisionPoints = append(d.r.DecisionPoints, DecisionPoint{Kind: "revision", ThoughtNumber: n.Data.ThoughtNumber, NodeID: n.ID, BranchID: n.BranchID, Description: desc})
	}
	if last, ok := s.g.Last(); ok {
		if s.g.Completed() {
			desc := fmt.Sprintf("concluded at thought %s", thoughtLabel(last))
			d.r.DecisionPoints = append(d.r.DecisionPoints, DecisionPoint{Kind: "conclusion", ThoughtNumber: last.Data.ThoughtNumber, NodeID: last.ID, BranchID: last.BranchID, Description: desc})
			d.insight(InsightPatternDetected, confFact, desc, last)
		} else {
			d.insight(InsightQuality, confFact, fmt.Sprintf("no conclusion yet: the latest thought (%s) expects more", thoughtLabel(last)), last)
		}
	}
	// Numbers a branch used are a legitimate gap: the cipher guide asks
	// for an explicit number after a branch, so that S{n} stays unique.
	onBranches := map[int]bool{}
	for _, n := range s.nodes {
		if n.BranchID != "" {
			onBranches[n.Data.ThoughtNumber] = true
		}
	}
	for i := 1; i < len(s.main); i++ {
		a, b := s.main[i-1], s.main[i]
		if b.Data.ThoughtNumber-a.Data.ThoughtNumber <= 1 {
			continue
		}
		var unused []string
		for k := a.Data.ThoughtNumber + 1; k < b.Data.ThoughtNumber && len(unused) <= maxListed; k++ {
			if !onBranches[k] {
				unused = append(unused, strconv.Itoa(k))
			}
		}
		if len(unused) == 0 {
			continue
		}
		what := strings.Join(unused, ", ")
		if len(unused) > maxListed {
			what = strings.Join(unused[:maxListed], ", ") + " …"
		}
		d.insight(InsightAnomaly, confPlausible, fmt.Sprintf("main-chain numbering jumps from %d to %d; %s used nowhere",
			a.Data.ThoughtNumber, b.Data.ThoughtNumber, what), a, b)
	}
}
