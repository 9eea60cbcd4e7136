package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway/rlm"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// Sub-queries favour speed a little more than the root: they are many and
// narrow. The root keeps seed 000's preferences.
const (
	subIntelligencePriority = 0.6
	subSpeedPriority        = 0.6
)

// rlmContext is the session as the REPL's context variable shows it.
type rlmContext struct {
	SessionID string              `json:"sessionId,omitempty"`
	Title     string              `json:"title,omitempty"`
	Tags      []string            `json:"tags"`
	Thoughts  []rlmThought        `json:"thoughts"`
	Branches  []ledger.BranchInfo `json:"branches"`
	// CurrentThought is the thought that asked for the run; it is
	// committed with the result, after the run.
	CurrentThought ledger.ThoughtInput `json:"currentThought"`
	Query          string              `json:"query"`
}

// rlmThought is a recorded thought in the context. Earlier RLM runs are
// shown by their answers only: their transcripts would swamp the rest.
type rlmThought struct {
	ledger.ThoughtData
	NodeID string         `json:"nodeId"`
	RLM    *rlmPastAnswer `json:"rlm,omitempty"` // hides ThoughtData.RLM
}

type rlmPastAnswer struct {
	Query  string           `json:"query"`
	Status ledger.RLMStatus `json:"status"`
	Answer string           `json:"answer,omitempty"`
}

// runRLM runs the RLM loop for a thought about to be recorded (seed 004,
// Phase 3), so that its result is committed with the thought.
//
// It returns the result to commit (nil if the loop never got going) and,
// when the run did not end well, why (for the reply, once the thought has
// its number). The client cancelling the call is the one fatal error: the
// call is abandoned before anything is committed, as the client asked.
func (c *call) runRLM(ctx context.Context, p *thoughtParams, in ledger.ThoughtInput) (res *ledger.RLMResult, problem, fatal error) {
	doc, err := c.rlmContext(ctx, p, in)
	if err != nil {
		return nil, nil, err
	}
	opts := c.g.opts.Sampling.RLM
	opts.OnStep = func(st ledger.RLMStep) { c.g.logRLMStep(c.sessionID, st) }
	res, err = rlm.Run(ctx, c.rlmSampler(), p.RLMQuery, string(doc), opts)
	if ctx.Err() != nil {
		return nil, nil, ledger.Errorf(ledger.CodeInternal, "the RLM run was stopped by the client after %d iteration(s) and %d sub-queries; nothing was recorded: %w",
			res.Iterations, res.SubQueries, context.Cause(ctx))
	}
	var root *rlm.RootError
	if errors.As(err, &root) && root.Iteration == 1 {
		// The root model never answered: there is nothing to record.
		return nil, root.Err, nil
	}
	return res, err, nil
}

// rlmContext is the JSON of the REPL's context: the active session as it
// stands, and the thought being recorded.
func (c *call) rlmContext(ctx context.Context, p *thoughtParams, in ledger.ThoughtInput) ([]byte, error) {
	doc := rlmContext{Tags: []string{}, Thoughts: []rlmThought{}, Branches: []ledger.BranchInfo{}, CurrentThought: in, Query: p.RLMQuery}
	if c.sessionID != "" {
		v, err := c.ledger.View(ctx, c.sessionID)
		if err != nil {
			return nil, err
		}
		doc.SessionID, doc.Title, doc.Tags = v.Session.ID, v.Session.Title, v.Session.Tags
		for _, n := range v.Graph.Nodes() {
			t := rlmThought{ThoughtData: n.Data, NodeID: n.ID}
			if r := n.Data.RLM; r != nil {
				t.RLM = &rlmPastAnswer{Query: r.Query, Status: r.Status, Answer: r.Answer}
			}
			doc.Thoughts = append(doc.Thoughts, t)
		}
		doc.Branches = append(doc.Branches, v.Graph.Branches()...)
	} else if p.SessionTitle != "" {
		doc.Title = p.SessionTitle
	}
	return json.Marshal(doc)
}

// rlmSampler reaches the root model and the sub-queries' models through
// the client.
func (c *call) rlmSampler() rlm.Sampler {
	return func(ctx context.Context, req rlm.Request) (rlm.Reply, error) {
		msgs := make([]*mcp.SamplingMessage, len(req.Messages))
		for i, m := range req.Messages {
			msgs[i] = &mcp.SamplingMessage{Role: mcp.Role(m.Role), Content: &mcp.TextContent{Text: m.Text}}
		}
		prefs := modelPreferences()
		if req.Sub {
			prefs.IntelligencePriority, prefs.SpeedPriority = subIntelligencePriority, subSpeedPriority
		}
		// No includeContext: the REPL's context is the material, and
		// the model is meant to read it through code.
		s, err := c.sample(ctx, &mcp.CreateMessageParams{
			SystemPrompt:     req.System,
			Messages:         msgs,
			ModelPreferences: prefs,
			MaxTokens:        int64(req.MaxTokens),
		})
		return rlm.Reply{Text: s.text, Model: s.model}, err
	}
}

// logRLMStep adds one step of an RLM run to Options.ThoughtLog; this is
// where sub-queries are logged as they happen.
func (g *Gateway) logRLMStep(sessionID string, st ledger.RLMStep) {
	w := g.opts.ThoughtLog
	if w == nil {
		return
	}
	var b strings.Builder
	if sessionID == "" {
		sessionID = "(new)" // the thought will create it
	}
	fmt.Fprintf(&b, "rlm  session %s  iteration %d  ", short(sessionID), st.Iteration)
	took := (time.Duration(st.DurationMS) * time.Millisecond).String()
	switch st.Kind {
	case ledger.RLMStepRoot:
		fmt.Fprintf(&b, "root model %s answered (%s, %d bytes)", st.Model, took, len(st.Text))
	case ledger.RLMStepRepl:
		fmt.Fprintf(&b, "repl block ran (%s, %d bytes of output)", took, len(st.Output))
	case ledger.RLMStepSubQuery:
		fmt.Fprintf(&b, "llm_query to %s (%s): %q", st.Model, took, firstLine(st.Prompt, 80))
	}
	if st.Error != "" {
		fmt.Fprintf(&b, "  error: %s", firstLine(st.Error, 120))
	}
	b.WriteString("\n")
	g.logMu.Lock()
	defer g.logMu.Unlock()
	_, _ = fmt.Fprint(w, b.String())
}

// firstLine is s's first line, cut at n characters.
func firstLine(s string, n int) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(line); len(r) > n {
		line = string(r[:n-1]) + "…"
	}
	return line
}

// checkRLM checks the RLM arguments of a thought.
func (p *thoughtParams) checkRLM() error {
	p.RLMQuery = strings.TrimSpace(p.RLMQuery)
	switch {
	case p.RLM && p.RLMQuery == "":
		return ledger.InvalidField("rlmQuery", "is required when rlm is true: the question the RLM run answers")
	case !p.RLM && p.RLMQuery != "":
		return ledger.InvalidField("rlm", "must be true when rlmQuery is set")
	}
	return nil
}

// withRLM adds an RLM run's result to the error that refused its thought,
// so that the models' work reaches the agent even though nothing was
// recorded.
func withRLM(err error, res *ledger.RLMResult) error {
	if res == nil {
		return err
	}
	e := *ledger.AsError(err)
	e.Details = maps.Clone(e.Details)
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details["rlm"] = res
	return &e
}
