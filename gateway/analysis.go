package gateway

// Analysis: session analyze and extract_learnings, and the deep_analysis
// operation. The heuristics are the ledger's (ledger/analysis.go,
// learnings.go, deepanalysis.go); these are adapters.

import (
	"context"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

func sessionAnalyze(ctx context.Context, c *call, p *sessionIDParams) (any, error) {
	v, err := c.viewOf(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	a := ledger.Analyze(v)
	return &a, nil
}

type learningsParams struct {
	SessionID string `json:"sessionId,omitempty"`
	// Types keeps only these kinds: pattern, anti-pattern, signal.
	Types []string `json:"types,omitempty" schema:"note=of pattern, anti-pattern, signal"`
}

func (p *learningsParams) check() error {
	for _, t := range p.Types {
		if _, ok := ledger.ParseLearningType(t); !ok {
			return ledger.InvalidField("types", "each must be pattern, anti-pattern or signal, got %q", t)
		}
	}
	return nil
}

type learningsReply struct {
	SessionID string                     `json:"sessionId"`
	Learnings []ledger.ExtractedLearning `json:"learnings"`
	Count     int                        `json:"count"`
	Note      string                     `json:"note"`
}

func sessionLearnings(ctx context.Context, c *call, p *learningsParams) (any, error) {
	v, err := c.viewOf(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	r := &learningsReply{SessionID: v.Session.ID, Learnings: []ledger.ExtractedLearning{},
		Note: "Suggestions only: nothing is stored. Keep the good ones with the knowledge operation, at their targetPath."}
	for _, l := range ledger.ExtractLearnings(v, time.Now().UTC()) {
		if len(p.Types) == 0 || hasTag(p.Types, string(l.Type)) {
			r.Learnings = append(r.Learnings, l)
		}
	}
	r.Count = len(r.Learnings)
	return r, nil
}

type deepAnalysisParams struct {
	SessionID    string `json:"sessionId,omitempty"`
	AnalysisType string `json:"analysisType,omitempty" schema:"enum=patterns|cognitive_load|decision_points|full;note=default full"`
}

func (p *deepAnalysisParams) check() error {
	_, err := ledger.ParseDeepAnalysisType(p.AnalysisType)
	return err
}

func deepAnalysis(ctx context.Context, c *call, p *deepAnalysisParams) (any, error) {
	typ, _ := ledger.ParseDeepAnalysisType(p.AnalysisType)
	v, err := c.viewOf(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	r := ledger.DeepAnalysis(v, typ, time.Now().UTC())
	return &r, nil
}
