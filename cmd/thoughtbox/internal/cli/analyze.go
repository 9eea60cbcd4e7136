package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

type analyzeCmd struct {
	ID        string `arg:"" name:"id" help:"Session id or unique prefix."`
	Deep      bool   `help:"Deep analysis: reasoning patterns, cognitive load, decision points and insights."`
	Type      string `name:"type" enum:"patterns,cognitive_load,decision_points,full" default:"full" placeholder:"TYPE" help:"With --deep: patterns, cognitive_load, decision_points or full."`
	Learnings bool   `help:"Also extract learnings: patterns, anti-patterns and signals, with the thoughts they come from."`
}

// analyzeOutput is the JSON form of analyze.
type analyzeOutput struct {
	Analysis  *ledger.SessionAnalysis    `json:"analysis,omitempty"`
	Deep      *ledger.DeepAnalysisResult `json:"deepAnalysis,omitempty"`
	Learnings []ledger.ExtractedLearning `json:"learnings,omitempty"`
}

func (c *analyzeCmd) Validate() error {
	if c.Type != "full" && !c.Deep {
		return fmt.Errorf("--type needs --deep: it chooses the deep analysis")
	}
	return nil
}

func (c *analyzeCmd) Run(a *app) error {
	id, err := a.resolve(c.ID)
	if err != nil {
		return err
	}
	v, err := a.ledger.Load(a.ctx, id)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	var out analyzeOutput
	// The basic metrics always come; --deep adds to them.
	s := ledger.Analyze(v)
	out.Analysis = &s
	if c.Deep {
		typ, err := ledger.ParseDeepAnalysisType(c.Type)
		if err != nil {
			return err
		}
		d := ledger.DeepAnalysis(v, typ, now)
		out.Deep = &d
	}
	if c.Learnings {
		out.Learnings = ledger.ExtractLearnings(v, now)
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, out)
	}
	w := a.env.Stdout
	fmt.Fprintf(w, "%s  %s\n\n", v.Session.ID, v.Session.Title)
	if out.Analysis != nil {
		writeAnalysis(w, out.Analysis)
	}
	if out.Deep != nil {
		writeDeep(w, out.Deep)
	}
	if c.Learnings {
		writeLearnings(w, out.Learnings)
	}
	return nil
}

func writeAnalysis(w io.Writer, s *ledger.SessionAnalysis) {
	m, st, q := s.Metadata, s.Structure, s.Quality
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "thoughts\t%d (%s, %s)\n", m.ThoughtCount, plural(m.BranchCount, "branch", "branches"), plural(m.RevisionCount, "revision", "revisions"))
	fmt.Fprintf(tw, "duration\t%s\n", time.Duration(m.Duration)*time.Millisecond)
	fmt.Fprintf(tw, "linearity\t%.2f\n", st.LinearityScore)
	fmt.Fprintf(tw, "revision rate\t%.2f\n", st.RevisionRate)
	fmt.Fprintf(tw, "max depth\t%d\n", st.MaxDepth)
	fmt.Fprintf(tw, "density\t%.2f thoughts/min\n", st.ThoughtDensity)
	fmt.Fprintf(tw, "critiques\t%d\n", q.CritiqueRequests)
	fmt.Fprintf(tw, "convergence\t%s\n", yesNo(q.HasConvergence))
	fmt.Fprintf(tw, "complete\t%s\n", yesNo(q.IsComplete))
	tw.Flush()
}

func writeDeep(w io.Writer, d *ledger.DeepAnalysisResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var pats []string
	for _, p := range d.Patterns.AllPatterns {
		pats = append(pats, fmt.Sprintf("%s %.0f%%", p.Pattern, p.Frequency*100))
	}
	fmt.Fprintf(tw, "dominant pattern\t%s\n", d.Patterns.DominantPattern)
	fmt.Fprintf(tw, "patterns\t%s\n", strings.Join(pats, ", "))
	fmt.Fprintf(tw, "transitions\t%d\n", len(d.Patterns.Transitions))
	fmt.Fprintf(tw, "cognitive load\t%.2f\n", d.Metrics.CognitiveLoad)
	fmt.Fprintf(tw, "linearity\t%.2f\n", d.Metrics.LinearityScore)
	fmt.Fprintf(tw, "exploration depth\t%d\n", d.Metrics.ExplorationDepth)
	fmt.Fprintf(tw, "convergence rate\t%.2f\n", d.Metrics.ConvergenceRate)
	tw.Flush()
	if len(d.Insights) > 0 {
		fmt.Fprintln(w, "\ninsights:")
	}
	for _, in := range d.Insights {
		line := fmt.Sprintf("  [%s %.2f] %s", in.Type, in.Confidence, in.Description)
		if len(in.RelatedThoughts) > 0 {
			nums := make([]string, len(in.RelatedThoughts))
			for i, n := range in.RelatedThoughts {
				nums[i] = strconv.Itoa(n)
			}
			line += " (thoughts " + strings.Join(nums, ", ") + ")"
		}
		fmt.Fprintln(w, line)
	}
}

func writeLearnings(w io.Writer, ls []ledger.ExtractedLearning) {
	fmt.Fprintf(w, "\nlearnings: %d\n", len(ls))
	for _, l := range ls {
		fmt.Fprintf(w, "  %-12s %s\n", l.Type, l.TargetPath)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
