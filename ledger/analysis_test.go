package ledger_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// The expected numbers below are worked out by hand from
// testdata/sessions/1-api-latency.json: 12 thoughts, 8 on the main chain
// (two of them revisions), branch cache (3 thoughts, from 2) and branch
// index (1 thought, from 7), the main chain going on after both; a thought
// every 30 seconds.
func TestAnalyzeFixtures(t *testing.T) {
	f := loadFixtures(t)
	tests := []struct {
		name      string
		structure ledger.StructureMetrics
		quality   ledger.QualityMetrics
		revisions int
		duration  int64
	}{
		{"1-api-latency",
			// linearity 6/12; revisions 2/12; 12 thoughts in 5.5 minutes.
			ledger.StructureMetrics{LinearityScore: 0.5, RevisionRate: 0.1667, MaxDepth: 2, ThoughtDensity: 2.1818},
			ledger.QualityMetrics{HasConvergence: true, IsComplete: true}, 2, 330_000},
		{"2-message-queue",
			// 2 of 5 on the main chain; both branches left open.
			ledger.StructureMetrics{LinearityScore: 0.4, MaxDepth: 2, ThoughtDensity: 2.5},
			ledger.QualityMetrics{}, 0, 120_000},
		{"3-empty", ledger.StructureMetrics{LinearityScore: 1}, ledger.QualityMetrics{}, 0, 0},
	}
	for _, tt := range tests {
		a := ledger.Analyze(f.view(t, tt.name))
		if diff := cmp.Diff(tt.structure, a.Structure); diff != "" {
			t.Errorf("%s: structure (-want +got):\n%s", tt.name, diff)
		}
		if diff := cmp.Diff(tt.quality, a.Quality); diff != "" {
			t.Errorf("%s: quality (-want +got):\n%s", tt.name, diff)
		}
		if a.Metadata.RevisionCount != tt.revisions || a.Metadata.Duration != tt.duration {
			t.Errorf("%s: metadata = %+v", tt.name, a.Metadata)
		}
	}
}

// storedView builds a view straight from stored thoughts, as a load does.
func storedView(id string, main []ledger.ThoughtData) *ledger.SessionView {
	s := &ledger.StoredSession{Meta: ledger.SessionMeta{ID: id, Title: id}}
	for i, d := range main {
		s.Main = append(s.Main, ledger.StoredThought{Data: d, Commit: ledger.CommitID(string(rune('a' + i)))})
	}
	g := ledger.BuildGraph(s)
	return &ledger.SessionView{Session: ledger.Session{ID: id, Title: id}, Graph: g,
		Integrity: ledger.IntegrityValidationResult{Valid: len(g.Problems()) == 0, Errors: g.Problems()}}
}

func TestAnalyzeCritiquesAndInstantSessions(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := storedView("crit", []ledger.ThoughtData{
		{Thought: "one", ThoughtNumber: 1, TotalThoughts: 2, NextThoughtNeeded: true, Timestamp: at,
			Critique: &ledger.Critique{Text: "too hasty", Model: "m", Timestamp: at}},
		{Thought: "two", ThoughtNumber: 2, TotalThoughts: 2, NextThoughtNeeded: false, Timestamp: at},
	})
	a := ledger.Analyze(v)
	if a.Quality.CritiqueRequests != 1 || !a.Quality.IsComplete {
		t.Errorf("quality = %+v", a.Quality)
	}
	// Both thoughts at one instant: no rate.
	if a.Structure.ThoughtDensity != 0 || a.Metadata.Duration != 0 {
		t.Errorf("density %v, duration %v; want 0 for a zero time span", a.Structure.ThoughtDensity, a.Metadata.Duration)
	}
}

func TestDeepAnalysis(t *testing.T) {
	f := loadFixtures(t)
	v := f.view(t, "1-api-latency")

	full := ledger.DeepAnalysis(v, ledger.DeepFull, exportTime)
	wantMetrics := ledger.DeepMetrics{
		// (min(1,2/4) + min(1,4·2/12) + min(1,12 refs/24) + 12/50) / 4
		CognitiveLoad:    0.4767,
		LinearityScore:   0.5,
		ExplorationDepth: 3, // branch cache
		ConvergenceRate:  1,
	}
	if diff := cmp.Diff(wantMetrics, full.Metrics); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	// Linear 1 2 7 12, exploratory cache 3-5 and index 8, iterative 8 11,
	// convergent 6 10: linear wins the tie with exploratory.
	if full.Patterns.DominantPattern != ledger.PatternLinear || len(full.Patterns.Transitions) != 8 {
		t.Errorf("patterns = %+v", full.Patterns)
	}
	var gaps, forks int
	for _, in := range full.Insights {
		if in.Confidence < 0 || in.Confidence > 1 {
			t.Errorf("confidence out of range: %+v", in)
		}
		if strings.Contains(in.Description, "numbering jumps") {
			gaps++
			// 2→6 is covered by the cache branch (3-5); 8→10 is not.
			if !cmp.Equal(in.RelatedThoughts, []int{8, 10}) {
				t.Errorf("gap insight = %+v", in)
			}
		}
		if strings.HasPrefix(in.Description, "decision point") {
			forks++
		}
	}
	if gaps != 1 || forks != 2 {
		t.Errorf("%d gap insights and %d forks, want 1 and 2: %+v", gaps, forks, full.Insights)
	}
	var kinds []string
	for _, d := range full.DecisionPoints {
		kinds = append(kinds, d.Kind)
	}
	if diff := cmp.Diff([]string{"fork", "fork", "revision", "revision", "conclusion"}, kinds); diff != "" {
		t.Errorf("decision points (-want +got):\n%s", diff)
	}

	// Each narrower type is a subset of full, and only decision_points
	// lists decision points.
	n := 0
	for _, typ := range []ledger.DeepAnalysisType{ledger.DeepPatterns, ledger.DeepCognitiveLoad, ledger.DeepDecisionPoints} {
		r := ledger.DeepAnalysis(v, typ, exportTime)
		n += len(r.Insights)
		if (r.DecisionPoints != nil) != (typ == ledger.DeepDecisionPoints) {
			t.Errorf("%s: decision points %v", typ, r.DecisionPoints)
		}
		if r.AnalysisType != typ || !cmp.Equal(r.Metrics, full.Metrics) {
			t.Errorf("%s: type %s, metrics %+v", typ, r.AnalysisType, r.Metrics)
		}
	}
	if n != len(full.Insights) {
		t.Errorf("the types give %d insights together, full gives %d", n, len(full.Insights))
	}

	mq := ledger.DeepAnalysis(f.view(t, "2-message-queue"), ledger.DeepDecisionPoints, exportTime)
	if mq.Patterns.DominantPattern != ledger.PatternDivergent || mq.Metrics.ConvergenceRate != 0 {
		t.Errorf("message queue: %+v %+v", mq.Patterns, mq.Metrics)
	}
	open := 0
	for _, in := range mq.Insights {
		if strings.Contains(in.Description, "left open") {
			open++
		}
	}
	if open != 2 {
		t.Errorf("%d open-branch insights, want 2: %+v", open, mq.Insights)
	}

	if _, err := ledger.ParseDeepAnalysisType("vibes"); ledger.AsError(err).Details["field"] != "analysisType" {
		t.Errorf("ParseDeepAnalysisType(vibes) = %v", err)
	}
	if typ, err := ledger.ParseDeepAnalysisType(""); typ != ledger.DeepFull || err != nil {
		t.Errorf(`ParseDeepAnalysisType("") = %v, %v`, typ, err)
	}
}

func TestExtractLearnings(t *testing.T) {
	f := loadFixtures(t)
	type row struct {
		Type    ledger.LearningType
		Rule    string
		Sources []int
	}
	rows := func(ls []ledger.ExtractedLearning) []row {
		var out []row
		for _, l := range ls {
			out = append(out, row{l.Type, l.Metadata.Rule, l.Metadata.SourceThoughts})
			if !strings.HasSuffix(l.TargetPath, ".md") || l.Metadata.SourceSession == "" || !l.Metadata.ExtractedAt.Equal(exportTime) {
				t.Errorf("learning %+v", l)
			}
			if len(l.Metadata.SourceNodes) != len(l.Metadata.SourceThoughts) {
				t.Errorf("nodes %v and thoughts %v differ in length", l.Metadata.SourceNodes, l.Metadata.SourceThoughts)
			}
		}
		return out
	}
	want := []row{
		{ledger.LearningPattern, "converged-branch", []int{2, 3, 4, 5, 6}},
		{ledger.LearningPattern, "converged-branch", []int{7, 8, 10}},
		{ledger.LearningPattern, "self-correction", []int{6, 8, 11}},
		{ledger.LearningAntiPattern, "rejected-approach", []int{5, 3, 4}},
		{ledger.LearningPattern, "conclusion", []int{8, 11, 12}},
		{ledger.LearningSignal, "contradicting-evidence", []int{4, 3}},
		{ledger.LearningSignal, "revision-trigger", []int{7, 8, 6}},
		{ledger.LearningSignal, "revision-trigger", []int{10, 11, 8}},
	}
	got := ledger.ExtractLearnings(f.view(t, "1-api-latency"), exportTime)
	if diff := cmp.Diff(want, rows(got)); diff != "" {
		t.Errorf("learnings (-want +got):\n%s", diff)
	}
	if p := got[0].TargetPath; p != "patterns/perf/converged-branch-why-is-the-api-slow-cache.md" {
		t.Errorf("targetPath = %q", p)
	}
	want = []row{
		{ledger.LearningAntiPattern, "open-branch", []int{2, 3, 4}},
		{ledger.LearningAntiPattern, "open-branch", []int{2, 3}},
	}
	if diff := cmp.Diff(want, rows(ledger.ExtractLearnings(f.view(t, "2-message-queue"), exportTime))); diff != "" {
		t.Errorf("message queue learnings (-want +got):\n%s", diff)
	}
	if got := ledger.ExtractLearnings(f.view(t, "3-empty"), exportTime); len(got) != 0 {
		t.Errorf("an empty session taught %v", got)
	}
}

// The JSON export holds every node with prev and next that agree with
// each other.
func TestExportLinks(t *testing.T) {
	f := loadFixtures(t)
	for _, name := range f.names {
		v := f.view(t, name)
		out, err := ledger.Export(v, ledger.ExportOptions{Format: ledger.ExportJSON, At: exportTime})
		if err != nil {
			t.Fatal(err)
		}
		var x struct {
			Version string `json:"version"`
			Session struct {
				ThoughtCount int `json:"thoughtCount"`
			} `json:"session"`
			Nodes []struct {
				ID   string   `json:"id"`
				Prev *string  `json:"prev"`
				Next []string `json:"next"`
			} `json:"nodes"`
			ExportedAt time.Time `json:"exportedAt"`
		}
		if err := json.Unmarshal(out, &x); err != nil {
			t.Fatal(err)
		}
		if x.Version != "1.0" || len(x.Nodes) != v.Graph.Len() || x.Session.ThoughtCount != len(x.Nodes) || !x.ExportedAt.Equal(exportTime) {
			t.Errorf("%s: version %q, %d nodes of %d, exportedAt %v", name, x.Version, len(x.Nodes), v.Graph.Len(), x.ExportedAt)
		}
		byID := map[string]int{}
		for i, n := range x.Nodes {
			byID[n.ID] = i
		}
		for _, n := range x.Nodes {
			if n.Prev != nil {
				p, ok := byID[*n.Prev]
				if !ok || !strings.Contains(strings.Join(x.Nodes[p].Next, " "), n.ID) {
					t.Errorf("%s: %s has prev %s, which does not list it as next", name, n.ID, *n.Prev)
				}
			}
			for _, next := range n.Next {
				m, ok := byID[next]
				if !ok || x.Nodes[m].Prev == nil || *x.Nodes[m].Prev != n.ID {
					t.Errorf("%s: %s lists next %s, whose prev is not it", name, n.ID, next)
				}
			}
		}
	}
}

func TestExportFormats(t *testing.T) {
	f := loadFixtures(t)
	v := f.view(t, "1-api-latency")
	md, _ := ledger.Export(v, ledger.ExportOptions{Format: ledger.ExportMarkdown, At: exportTime})
	for _, want := range []string{
		"- **Thoughts:** 12: 8 on the main chain, 4 on 2 branches; 2 revisions\n",
		"## Branch `cache`, from thought 2, 3 thoughts\n",
		"### 8 (revision) · revises 6; revised by 11\n",
		"| 11 | 8 | 2 |\n",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	c, _ := ledger.Export(v, ledger.ExportOptions{Format: ledger.ExportCipher})
	var lines int
	for line := range strings.SplitSeq(strings.TrimSuffix(string(c), "\n"), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		lines++
		// Typed lines read back as cipher; a plain thought's line has an
		// empty type and must not.
		_, ok := ledger.ParseCipher(line)
		step, rest, _ := strings.Cut(line, "|")
		if plain := strings.HasPrefix(rest, "|"); ok == plain || !strings.HasPrefix(step, "S") {
			t.Errorf("cipher line %q: parses as typed cipher = %v", line, ok)
		}
	}
	if lines != v.Graph.Len() {
		t.Errorf("%d cipher lines for %d thoughts", lines, v.Graph.Len())
	}
	// A plain thought gets no invented type or reference.
	if !strings.Contains(string(c), "\nS10|||Plan: rewrite the ORM query,\\nand keep the index as a guard.\n") {
		t.Errorf("plain thought's line missing or embellished:\n%s", c)
	}
	if _, err := ledger.ParseExportFormat("pdf"); ledger.AsError(err).Details["field"] != "format" {
		t.Errorf("ParseExportFormat(pdf) = %v", err)
	}
}
