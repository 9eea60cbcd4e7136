package gateway

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/thoughtbox/thoughtbox/gateway/content"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// thoughtParams are the thought operation's arguments: ThoughtData as an
// agent gives it (seed 002 ThoughtInput) and the reply options.
type thoughtParams struct {
	Thought           *string          `json:"thought" jsonschema:"The reasoning step; may be written in cipher notation."`
	NextThoughtNeeded *bool            `json:"nextThoughtNeeded" jsonschema:"Whether more reasoning follows."`
	ThoughtNumber     *int             `json:"thoughtNumber,omitempty" jsonschema:"Position in its chain; omit to take the next number." schema:"minimum=1"`
	TotalThoughts     *int             `json:"totalThoughts,omitempty" jsonschema:"Current estimate of the total; defaults to thoughtNumber." schema:"minimum=1"`
	IsRevision        *bool            `json:"isRevision,omitempty" jsonschema:"This thought corrects revisesThought."`
	RevisesThought    *int             `json:"revisesThought,omitempty" jsonschema:"The thought being revised." schema:"minimum=1"`
	BranchFromThought *int             `json:"branchFromThought,omitempty" jsonschema:"Main-chain thought the branch forks from; needed to start a branch, optional to continue one." schema:"minimum=1"`
	BranchID          string           `json:"branchId,omitempty" jsonschema:"The branch's name." schema:"pattern=^[a-z0-9-]+$"`
	NeedsMoreThoughts bool             `json:"needsMoreThoughts,omitempty" jsonschema:"The estimate was too low; more thoughts are needed."`
	IncludeGuide      bool             `json:"includeGuide,omitempty" jsonschema:"Append the patterns cookbook to the reply."`
	Code              []ledger.CodeRef `json:"code,omitempty" jsonschema:"The code this thought is about: commits, files relative to the repository's root, line ranges."`
	SessionTitle      string           `json:"sessionTitle,omitempty" jsonschema:"Title of the session this thought creates, if none is active." schema:"maxLength=200"`
	SessionTags       []string         `json:"sessionTags,omitempty" jsonschema:"Tags of the session this thought creates."`
	// SessionID (or its seed alias reasoningSessionId) records the thought
	// in that session, which becomes the connection's active one.
	SessionID          string `json:"sessionId,omitempty" jsonschema:"Record the thought in this session (a unique prefix will do); it becomes the active one."`
	ReasoningSessionID string `json:"reasoningSessionId,omitempty" jsonschema:"Alias of sessionId." schema:"alias"`
	Verbose            bool   `json:"verbose,omitempty" jsonschema:"Reply with the full node and session metadata."`
	// Critique and RLM ask for work by a model through sampling (see
	// critique.go and rlm.go).
	Critique bool   `json:"critique,omitempty" jsonschema:"After recording, ask a model (through MCP sampling) to critique the thought; the critique is recorded and returned."`
	RLM      bool   `json:"rlm,omitempty" jsonschema:"Before recording, have a model answer rlmQuery by working over the session in a JavaScript REPL (MCP sampling); the result is recorded with the thought."`
	RLMQuery string `json:"rlmQuery,omitempty" jsonschema:"The question for the RLM run; required with rlm."`
}

func (p *thoughtParams) check() error {
	if p.Thought == nil {
		return ledger.InvalidField("thought", "is required (string): the reasoning step")
	}
	if p.NextThoughtNeeded == nil {
		return ledger.InvalidField("nextThoughtNeeded", "is required (boolean): false when this thought ends the reasoning")
	}
	return p.checkRLM()
}

func (p *thoughtParams) input() ledger.ThoughtInput {
	return ledger.ThoughtInput{
		Thought:           *p.Thought,
		ThoughtNumber:     p.ThoughtNumber,
		TotalThoughts:     p.TotalThoughts,
		NextThoughtNeeded: *p.NextThoughtNeeded,
		IsRevision:        p.IsRevision != nil && *p.IsRevision,
		NotRevision:       p.IsRevision != nil && !*p.IsRevision,
		RevisesThought:    p.RevisesThought,
		BranchFromThought: p.BranchFromThought,
		BranchID:          p.BranchID,
		NeedsMoreThoughts: p.NeedsMoreThoughts,
		IncludeGuide:      p.IncludeGuide,
		Code:              p.Code,
	}
}

// thoughtReply is kept small: agents pay for every byte of it.
type thoughtReply struct {
	SessionID         string `json:"sessionId"`
	ThoughtNumber     int    `json:"thoughtNumber"`
	TotalThoughts     int    `json:"totalThoughts"`
	NextThoughtNeeded bool   `json:"nextThoughtNeeded"`
	BranchID          string `json:"branchId,omitempty"`
	SessionCreated    bool   `json:"sessionCreated,omitempty"`
	// Reopened: the session had been completed, and this thought opened it
	// again.
	Reopened bool                `json:"reopened,omitempty"`
	Hint     string              `json:"hint"`
	Node     *ledger.ThoughtNode `json:"node,omitempty"`
	Session  *ledger.Session     `json:"session,omitempty"`
	// Critique is the critique a model made; CritiqueError says why none
	// was made, the thought being recorded all the same.
	Critique      *critiqueReply    `json:"critique,omitempty"`
	CritiqueError *ledger.Error     `json:"critiqueError,omitempty"`
	RLM           *ledger.RLMResult `json:"rlm,omitempty"`
	RLMError      *ledger.Error     `json:"rlmError,omitempty"`
	// SessionClosed is set by a thought that needed no further thought:
	// the session was exported (to ExportPath, or ExportError says why
	// not) and this connection has no active session any more.
	SessionClosed bool          `json:"sessionClosed,omitempty"`
	ExportPath    string        `json:"exportPath,omitempty"`
	ExportError   *ledger.Error `json:"exportError,omitempty"`
}

func recordThought(ctx context.Context, c *call, p *thoughtParams) (any, error) {
	in := p.input()
	if err := c.ledger.CheckThought(in); err != nil {
		return nil, err
	}
	if arg := cmp.Or(p.SessionID, p.ReasoningSessionID); arg != "" {
		if p.SessionID != "" && p.ReasoningSessionID != "" && p.SessionID != p.ReasoningSessionID {
			return nil, ledger.InvalidField("reasoningSessionId", "is an alias of sessionId and names another session (%q, %q); give one", p.ReasoningSessionID, p.SessionID)
		}
		id, err := c.ledger.Resolve(ctx, arg)
		if err != nil {
			return nil, err
		}
		if id != c.sessionID {
			c.setSession(id)
		}
	}
	// The RLM run comes first, so that its result is committed with the
	// thought, and before a session is created for it, so that a run the
	// client cancels leaves nothing behind.
	var rlmProblem error
	if p.RLM {
		var err error
		if in.RLM, rlmProblem, err = c.runRLM(ctx, p, in); err != nil {
			return nil, err
		}
	}
	created := false
	if c.sessionID == "" && c.deletedActive != "" && strings.TrimSpace(p.SessionTitle) == "" {
		e := ledger.Errorf(ledger.CodeSessionNotFound,
			"this connection's active session %s was deleted, so no session is active; a thought does not start a new one silently: call start_new, load_context or session restore, or send sessionTitle with the thought to start a new session", c.deletedActive)
		e.Details = map[string]any{"field": "sessionId", "deletedSessionId": c.deletedActive, "next": "start_new {sessionTitle}, load_context {sessionId}, or session restore {sessionId: " + c.deletedActive + "}"}
		return nil, e
	}
	if c.sessionID == "" && c.g.opts.NoAutoCreateSession {
		e := ledger.Errorf(ledger.CodeSessionNotFound,
			"no session is active and this server does not create one for a thought (autoCreateSession is off): call start_new with a sessionTitle, or load_context, or pass sessionId")
		e.Details = map[string]any{"field": "sessionId", "next": "start_new {sessionTitle}"}
		return nil, e
	}
	if c.sessionID == "" {
		if err := c.createSession(ctx, p, in); err != nil {
			return nil, err
		}
		created = true
	}
	res, err := c.ledger.AddThought(ctx, c.sessionID, in, c.author())
	if err != nil {
		return nil, withRLM(err, in.RLM)
	}
	c.g.logThought(res)

	r := &thoughtReply{
		SessionID:         res.Session.ID,
		ThoughtNumber:     res.Thought.ThoughtNumber,
		TotalThoughts:     res.Thought.TotalThoughts,
		NextThoughtNeeded: res.Thought.NextThoughtNeeded,
		BranchID:          res.Thought.BranchID,
		SessionCreated:    created,
		Reopened:          res.Reopened,
		Hint:              hint(res),
	}
	if p.Verbose {
		r.Node, r.Session = &res.Node, &res.Session
	}
	r.RLM = res.Thought.RLM
	if rlmProblem != nil {
		r.RLMError = samplingProblem("an RLM run", r.ThoughtNumber, rlmProblem)
	}
	if p.Critique {
		// After the commit: the thought is kept whatever the critic does.
		r.Critique, r.CritiqueError = c.critique(ctx, res)
	}
	if res.Completed {
		// Last, so that a critique above still found the session active.
		r.SessionClosed = true
		r.ExportPath, r.ExportError = c.closeSession(ctx, res.Session.ID)
	}
	if !p.IncludeGuide {
		return r, nil
	}
	cookbook, ok := content.Resource("patterns-cookbook")
	if !ok {
		return nil, ledger.Errorf(ledger.CodeInternal, "thought %d was recorded, but the patterns cookbook is missing from this build", r.ThoughtNumber)
	}
	return &text{header: r, body: []string{cookbook}}, nil
}

// createSession starts the session a thought arrives without (seed 000,
// autoCreateSession): titled by sessionTitle, else by start_new's pending
// request, else by the thought itself.
func (c *call) createSession(ctx context.Context, p *thoughtParams, in ledger.ThoughtInput) error {
	switch {
	case in.BranchFromThought != nil:
		return ledger.InvalidField("branchFromThought", "no session is active, and a new session has no thought %d to branch from; call load_context first", *in.BranchFromThought)
	case in.RevisesThought != nil:
		return ledger.InvalidField("revisesThought", "no session is active, and a new session has no thought %d to revise; call load_context first", *in.RevisesThought)
	case in.BranchID != "":
		return ledger.InvalidField("branchId", "no session is active, and a new session has no branch %q to continue; call load_context first", in.BranchID)
	}
	params := c.pending
	params.Tags = append(append([]string(nil), params.Tags...), p.SessionTags...)
	params.Title = p.SessionTitle
	if strings.TrimSpace(params.Title) == "" {
		params.Title = titleOf(in.Thought)
	}
	s, err := c.ledger.StartSession(ctx, params, c.author())
	if err != nil {
		return renameField(err, "title", "sessionTitle")
	}
	c.setSession(s.ID)
	return nil
}

// maxDerivedTitle is the length of a title taken from a thought.
const maxDerivedTitle = 80

// titleOf makes a session title from a thought's first line.
func titleOf(thought string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(thought), "\n")
	if info, ok := ledger.ParseCipher(line); ok {
		line, _, _ = strings.Cut(info.Content, "\n")
	}
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) > maxDerivedTitle {
		line = strings.TrimSpace(string([]rune(line)[:maxDerivedTitle-1])) + "…"
	}
	if line == "" {
		return "Untitled session"
	}
	return line
}

// hint is the short advice in a thought's reply.
func hint(res *ledger.AddResult) string {
	d := res.Thought
	switch {
	case !d.NextThoughtNeeded:
		return "reasoning complete: session closed; your next thought starts a new session (load_context reopens this one)"
	case d.BranchID != "":
		return fmt.Sprintf("next: #%d (keep branchId)", d.ThoughtNumber+1)
	}
	return fmt.Sprintf("next: #%d", d.ThoughtNumber+1)
}

// logThought writes a human-readable entry for a recorded thought to
// Options.ThoughtLog.
func (g *Gateway) logThought(res *ledger.AddResult) {
	w := g.opts.ThoughtLog
	if w == nil {
		return
	}
	d := res.Thought
	var b strings.Builder
	fmt.Fprintf(&b, "thought %d/%d  session %s %q", d.ThoughtNumber, d.TotalThoughts, short(res.Session.ID), res.Session.Title)
	if d.BranchID != "" {
		fmt.Fprintf(&b, "  branch %s (from %d)", d.BranchID, *d.BranchFromThought)
	}
	if d.IsRevision {
		fmt.Fprintf(&b, "  revises %d", *d.RevisesThought)
	}
	if res.Node.Cipher != nil {
		fmt.Fprintf(&b, "  [%s]", res.Node.Cipher.Type.Name())
	}
	if !d.NextThoughtNeeded {
		b.WriteString("  (complete)")
	}
	b.WriteString("  │ ")
	b.WriteString(logLine(d.Thought, logLineMax))
	b.WriteString("\n")
	g.logMu.Lock()
	defer g.logMu.Unlock()
	_, _ = fmt.Fprint(w, b.String())
}

// logLineMax is how much of a thought's text its log line shows.
const logLineMax = 160

// logLine renders text on one line for the thought log, which a person
// reads as it scrolls: line breaks become " ⏎ ", runs of blanks one space,
// other control characters (an agent's text may hold terminal escapes) are
// shown escaped, and the whole is cut at n characters with "…".
func logLine(text string, n int) string {
	var b strings.Builder
	count := 0
	space := false
	for _, r := range strings.TrimSpace(text) {
		var piece string
		switch {
		case r == '\n':
			piece, space = " ⏎ ", false
		case r == '\r':
			continue
		case r == ' ' || r == '\t':
			if space {
				continue
			}
			piece, space = " ", true
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			piece, space = fmt.Sprintf("\\x%02x", r), false
		default:
			piece, space = string(r), false
		}
		if count >= n {
			b.WriteString("…")
			break
		}
		b.WriteString(piece)
		count += utf8.RuneCountInString(piece)
	}
	return b.String()
}

// short is the first eight characters of a session id, as in git.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

const thoughtToolDescription = `Record one reasoning step in the active Thoughtbox session (a session is created if none is active).
Required: thought (text; cipher lines like "S3|H|S1,S2|content" are parsed into typed, linked nodes) and nextThoughtNeeded (false ends the reasoning).
Optional: thoughtNumber and totalThoughts (numbered for you when omitted); isRevision + revisesThought to correct an earlier thought (a cipher line with one ^S{n} ref, as S3|R|^S1|…, revises thought n by itself; isRevision: false beside it is refused); branchFromThought + branchId (^[a-z0-9-]+$) to start a branch, branchId alone to continue it; needsMoreThoughts; includeGuide (adds the patterns cookbook); sessionTitle / sessionTags for a session created by this thought; sessionId (or reasoningSessionId) to record in that session, which also lets a client that reconnects for every call skip the stage flow; verbose (adds the full node and session).
critique: true has a model critique the thought through your client (MCP sampling); rlm: true with rlmQuery has a model answer the query by working over the session in a JavaScript REPL first. Both are recorded in the ledger and returned.`
