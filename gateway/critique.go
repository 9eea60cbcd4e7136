package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// critiqueSystemPrompt is the critic's brief (seed 001, "Critique Focus
// Areas"). It asks for specific, ranked findings, because the reasoner
// reads the critique in the middle of its own work.
const critiqueSystemPrompt = `You review one step of someone else's reasoning. The step was recorded in a reasoning ledger, and your critique goes back to the reasoner, who decides what to do with it.

Read the step marked for review in the light of the steps before it, and report what matters among:
- Logical gaps: conclusions that do not follow, skipped steps, circular or self-contradicting arguments.
- Unstated assumptions: what must be true for the step to hold, and which of those are doubtful.
- Alternatives: other explanations, approaches or framings that have not been weighed.
- Edge cases: inputs, conditions or scales under which the step would fail.
- Improvements: the most useful concrete change, or the check that would settle the question.

Be specific: name or quote the part of the step you mean. Put the most important problem first and leave out headings with nothing worth saying. Do not restate or praise the step. If it is sound, say so in one sentence and name the one check that would make it more certain. Stay under 250 words.`

// critiqueMaxTokens is the maxTokens of seed 000's sampling config.
const critiqueMaxTokens = 1000

// Limits on the text sent for critique, so that one very long thought
// does not crowd out the rest or exceed what the client accepts.
const (
	critiquedThoughtChars = 8000
	earlierThoughtChars   = 1500
)

// critiqueReply is the critique as the thought's reply carries it.
type critiqueReply struct {
	Text      string    `json:"text"`
	Model     string    `json:"model"`
	Timestamp time.Time `json:"timestamp"`
}

// critique asks the client's model to critique a thought that has been
// committed, and commits the critique as a second commit authored by the
// model. On failure the thought stays as it was and the problem says why.
func (c *call) critique(ctx context.Context, res *ledger.AddResult) (*critiqueReply, *ledger.Error) {
	d := res.Thought
	prompt, err := c.critiquePrompt(ctx, res)
	if err != nil {
		return nil, samplingProblem("a critique", d.ThoughtNumber, err)
	}
	s, err := c.sample(ctx, &mcp.CreateMessageParams{
		SystemPrompt:     critiqueSystemPrompt,
		Messages:         []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: prompt}}},
		ModelPreferences: modelPreferences(),
		// Deprecated in 2025-11-25 but what seed 000 asks for: a client
		// that honours it adds what it knows of this server.
		IncludeContext: "thisServer",
		MaxTokens:      critiqueMaxTokens,
	})
	if err != nil {
		return nil, samplingProblem("a critique", d.ThoughtNumber, err)
	}
	cr, err := c.ledger.AddCritique(ctx, res.Session.ID, ledger.BranchID(d.BranchID), d.ThoughtNumber,
		ledger.Critique{Text: strings.TrimSpace(s.text), Model: s.model}, modelAuthor(s.model))
	if err != nil {
		return nil, samplingProblem("a critique", d.ThoughtNumber, fmt.Errorf("recording the critique by %s: %w", s.model, err))
	}
	res.Node = cr.Node // so that a verbose reply shows the critique too
	crit := cr.Node.Data.Critique
	c.g.logCritique(res, crit)
	return &critiqueReply{Text: crit.Text, Model: crit.Model, Timestamp: crit.Timestamp}, nil
}

// critiquePrompt shows the critic the thought and the thoughts that led to
// it on its chain (for a branch thought, back through its fork point).
func (c *call) critiquePrompt(ctx context.Context, res *ledger.AddResult) (string, error) {
	v, err := c.ledger.View(ctx, res.Session.ID)
	if err != nil {
		return "", err
	}
	n := c.g.opts.Sampling.CritiqueContext
	if n <= 0 {
		n = DefaultCritiqueContext
	}
	var earlier []ledger.ThoughtNode
	for id := res.Node.Prev; id != "" && len(earlier) < n; {
		node, ok := v.Graph.Node(id)
		if !ok {
			break
		}
		earlier = append(earlier, node)
		id = node.Prev
	}
	slices.Reverse(earlier)

	var b strings.Builder
	fmt.Fprintf(&b, "Session: %q\n\n", res.Session.Title)
	if len(earlier) > 0 {
		b.WriteString("Earlier thoughts, oldest first:\n\n")
		for _, t := range earlier {
			writeThought(&b, t.Data, earlierThoughtChars)
		}
	}
	b.WriteString("Thought to critique:\n\n")
	writeThought(&b, res.Thought, critiquedThoughtChars)
	return b.String(), nil
}

func writeThought(b *strings.Builder, d ledger.ThoughtData, limit int) {
	fmt.Fprintf(b, "[Thought %d of %d", d.ThoughtNumber, d.TotalThoughts)
	if d.BranchID != "" {
		fmt.Fprintf(b, ", branch %q from thought %d", d.BranchID, *d.BranchFromThought)
	}
	if d.IsRevision {
		fmt.Fprintf(b, ", revises thought %d", *d.RevisesThought)
	}
	b.WriteString("]\n")
	b.WriteString(cutRunes(strings.TrimSpace(d.Thought), limit))
	b.WriteString("\n")
	if r := d.RLM; r != nil && r.Answer != "" {
		// The step may rest on what its RLM run found.
		fmt.Fprintf(b, "(An RLM run asked %q and answered: %s)\n", r.Query, cutRunes(r.Answer, limit))
	}
	b.WriteString("\n")
}

func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + " … [cut]"
}

// logCritique adds the critique to Options.ThoughtLog.
func (g *Gateway) logCritique(res *ledger.AddResult, crit *ledger.Critique) {
	w := g.opts.ThoughtLog
	if w == nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "critique of thought %d  session %s  by %s  ┊ %s\n", res.Thought.ThoughtNumber, short(res.Session.ID), logLine(crit.Model, 40), logLine(crit.Text, logLineMax))
	g.logMu.Lock()
	defer g.logMu.Unlock()
	_, _ = fmt.Fprint(w, b.String())
}
