// Package rlm runs a recursive language model (RLM): a root model answers
// a query by working in a JavaScript REPL instead of reading everything at
// once. The material it works on is a variable, context, that it explores
// with code; it can hand pieces to sub-models with llm_query(prompt), and it
// ends with FINAL(value) or FINAL_VAR(name).
//
// The package knows nothing of MCP: models are reached through a Sampler,
// which the gateway implements with sampling/createMessage.
//
//	res, err := rlm.Run(ctx, sampler, "Which assumption recurs?", sessionJSON, rlm.Options{})
//
// Each of the root model's turns is one iteration. Every ```repl block in
// a turn runs in one goja runtime whose globals persist for the whole run,
// with a time limit per block, a cap on what a block may print, and nothing
// beyond ECMAScript itself: no require, filesystem, network, timers or
// process. The runtime lives in a child process (package sandbox) under
// memory and CPU limits, so a block cannot harm the server. What each
// block printed goes back to the root model as the next user message.
package rlm

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/sandbox"
)

// Role is who wrote a message of a conversation with a model.
type Role string

// The roles of a conversation.
const (
	User      Role = "user"
	Assistant Role = "assistant"
)

// Message is one message of a conversation with a model.
type Message struct {
	Role Role
	Text string
}

// Request asks a model for one reply.
type Request struct {
	System    string
	Messages  []Message
	MaxTokens int
	// Sub is set for llm_query, which the sampler may send to a cheaper or
	// faster model than the root's.
	Sub bool
}

// Reply is a model's answer.
type Reply struct {
	Text string
	// Model is the model that wrote it, as the client reported it.
	Model string
}

// Sampler asks a model for a reply. Errors are returned to Run's caller
// as they are (wrapped), so that it can tell a client without sampling
// from other failures.
type Sampler func(ctx context.Context, req Request) (Reply, error)

// Defaults for Options.
const (
	DefaultMaxIterations = 12
	DefaultBlockTimeout  = 5 * time.Second
	DefaultMaxOutput     = 8 << 10
	DefaultMaxSubQueries = 32
	DefaultRootMaxTokens = 2000
	DefaultSubMaxTokens  = 1000
	DefaultMaxText       = 16 << 10
)

// Options are the limits of a run. Zero values take the defaults.
type Options struct {
	// MaxIterations is how many turns the root model gets (12).
	MaxIterations int
	// BlockTimeout is the computing time a ```repl block gets before the
	// VM is interrupted (5s). Time spent waiting for llm_query does not
	// count.
	BlockTimeout time.Duration
	// MaxOutput caps what one block may print, in bytes (8 KiB); the rest
	// is dropped and the model told so.
	MaxOutput int
	// MaxSubQueries caps llm_query calls over the whole run (32); further
	// calls throw in the block.
	MaxSubQueries int
	// RootMaxTokens and SubMaxTokens are the maxTokens of the root's and
	// the sub-queries' sampling requests (2000, 1000).
	RootMaxTokens, SubMaxTokens int
	// MaxText caps each text kept in the transcript, and the answer, in
	// bytes (16 KiB), so that a run cannot bloat the ledger.
	MaxText int
	// OnStep, if set, is called with every step as it completes (the
	// gateway logs sub-queries with it). It runs on the run's goroutine.
	OnStep func(ledger.RLMStep)
	// Sandbox bounds the REPL's process (zero values: the sandbox
	// package's defaults, but a CPU limit of twice BlockTimeout per
	// iteration, so that raising those raises it too).
	Sandbox sandbox.Limits
}

// WithDefaults returns o with every zero limit set to its default.
func (o Options) WithDefaults() Options {
	set := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&o.MaxIterations, DefaultMaxIterations)
	set(&o.MaxOutput, DefaultMaxOutput)
	set(&o.MaxSubQueries, DefaultMaxSubQueries)
	set(&o.RootMaxTokens, DefaultRootMaxTokens)
	set(&o.SubMaxTokens, DefaultSubMaxTokens)
	set(&o.MaxText, DefaultMaxText)
	if o.BlockTimeout <= 0 {
		o.BlockTimeout = DefaultBlockTimeout
	}
	if o.Sandbox.CPU <= 0 {
		o.Sandbox.CPU = 2 * o.BlockTimeout * time.Duration(o.MaxIterations)
	}
	return o
}

// ErrSubQueryLimit is thrown into a block that calls llm_query after
// Options.MaxSubQueries calls.
var ErrSubQueryLimit = errors.New("llm_query limit reached")

// RootError is returned by Run when the root model could not be sampled.
type RootError struct {
	Iteration int
	Err       error
}

func (e *RootError) Error() string {
	return fmt.Sprintf("sampling the root model (iteration %d): %v", e.Iteration, e.Err)
}

func (e *RootError) Unwrap() error { return e.Err }

// Run answers query with a root model working over contextJSON (a JSON
// document that becomes the REPL's context variable).
//
// It always returns a result holding the transcript so far. The run ends:
//   - with Status final when the root gives FINAL(value) or FINAL_VAR(name);
//   - with Status iteration_limit after MaxIterations turns without one;
//   - with Status failed and an error when the root model cannot be
//     sampled (*RootError);
//   - with ctx's error when ctx is done (the client cancelled): the block
//     running is interrupted and no further model call is made.
func Run(ctx context.Context, sample Sampler, query, contextJSON string, opts Options) (*ledger.RLMResult, error) {
	opts = opts.WithDefaults()
	r := &runner{ctx: ctx, sample: sample, opts: opts, res: &ledger.RLMResult{Query: query, Transcript: []ledger.RLMStep{}}}
	sb, err := newREPL(contextJSON, opts, r.subQuery)
	if err != nil {
		return r.fail(fmt.Errorf("starting the REPL: %w", err))
	}
	r.sb = sb
	defer sb.close()
	res, err := r.loop(query, contextJSON)
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	return res, err
}

type runner struct {
	ctx       context.Context
	sample    Sampler
	opts      Options
	sb        *replEnv
	res       *ledger.RLMResult
	iteration int

	// mu guards res's transcript and sub-query count, and closed: a
	// sub-query must not change a result the caller already holds.
	mu     sync.Mutex
	closed bool
}

func (r *runner) loop(query, contextJSON string) (*ledger.RLMResult, error) {
	msgs := []Message{{Role: User, Text: firstMessage(query, contextJSON, r.opts)}}
	for r.iteration = 1; r.iteration <= r.opts.MaxIterations; r.iteration++ {
		if err := r.ctx.Err(); err != nil {
			return r.fail(err)
		}
		start := time.Now()
		reply, err := r.sample(r.ctx, Request{System: RootSystemPrompt, Messages: msgs, MaxTokens: r.opts.RootMaxTokens})
		if err != nil {
			if r.ctx.Err() != nil {
				return r.fail(r.ctx.Err())
			}
			return r.fail(&RootError{Iteration: r.iteration, Err: err})
		}
		r.res.Iterations = r.iteration
		if r.res.Model == "" {
			r.res.Model = reply.Model
		}
		r.step(ledger.RLMStep{Kind: ledger.RLMStepRoot, Text: reply.Text, Model: reply.Model, DurationMS: since(start)})
		msgs = append(msgs, Message{Role: Assistant, Text: reply.Text})

		feedback, done, err := r.turn(reply.Text)
		if err != nil {
			return r.fail(err)
		}
		if done {
			r.res.Status = ledger.RLMFinal
			return r.res, nil
		}
		msgs = append(msgs, Message{Role: User, Text: feedback + r.nudge()})
	}
	r.res.Status = ledger.RLMIterationLimit
	return r.res, nil
}

// turn runs the blocks of one root reply and looks for its answer. It
// returns the feedback for the root model, or done when the answer is in.
func (r *runner) turn(text string) (feedback string, done bool, err error) {
	var fb strings.Builder
	blocks := replBlocks(text)
	for i, code := range blocks {
		r.sb.final, r.sb.finalVar = nil, ""
		start := time.Now()
		out := r.sb.run(r.ctx, code, true, 0)
		st := ledger.RLMStep{Kind: ledger.RLMStepRepl, Code: code, Output: out.output, DurationMS: since(start)}
		if out.err != nil {
			st.Error = out.err.Error()
		}
		r.step(st)
		if err := r.ctx.Err(); err != nil {
			return "", false, err
		}
		fmt.Fprintf(&fb, "[block %d of %d]\n", i+1, len(blocks))
		if out.output != "" {
			fb.WriteString(out.output)
			if !strings.HasSuffix(out.output, "\n") {
				fb.WriteString("\n")
			}
		} else if out.err == nil {
			fb.WriteString("(no output; print() what you want to see)\n")
		}
		if out.err != nil {
			fmt.Fprintf(&fb, "Error: %v\n", out.err)
		}
		if out.lost {
			// The later blocks were written for the state just lost.
			if i+1 < len(blocks) {
				fmt.Fprintf(&fb, "The %d later block(s) of this reply were not run.\n", len(blocks)-i-1)
			}
			break
		}
		// FINAL or FINAL_VAR called in code ends the turn: later blocks
		// were written before this one's result was known.
		if r.sb.final != nil {
			return "", r.answer(*r.sb.final), nil
		}
		if r.sb.finalVar != "" {
			v, err := r.sb.lookup(r.ctx, r.sb.finalVar)
			if err == nil {
				return "", r.answer(v), nil
			}
			fmt.Fprintf(&fb, "Error: %v\n", err)
			break
		}
	}
	// An answer written as text, on a line of its own, after the blocks
	// ran (so that FINAL_VAR can name what they computed).
	if name, ok := finalVarIn(text); ok {
		v, err := r.sb.lookup(r.ctx, name)
		if err == nil {
			return "", r.answer(v), nil
		}
		fmt.Fprintf(&fb, "Error: %v\n", err)
	} else if answer, ok := finalIn(text); ok {
		return "", r.answer(answer), nil
	}
	if len(blocks) == 0 && fb.Len() == 0 {
		fb.WriteString("Your reply had no ```repl block and no FINAL(...) line, so nothing ran.\n")
	}
	return fb.String(), false, nil
}

func (r *runner) answer(v string) bool {
	r.res.Answer = cut(v, r.opts.MaxText)
	return true
}

// nudge tells the root model how many turns it has left.
func (r *runner) nudge() string {
	left := r.opts.MaxIterations - r.iteration
	switch {
	case left == 1:
		return "\nOne turn left: give your answer now, as FINAL(answer) or FINAL_VAR(variable) on a line of its own."
	case left > 1:
		return fmt.Sprintf("\n%d turns left. Continue with ```repl blocks, or answer with FINAL(answer) or FINAL_VAR(variable).", left)
	}
	return ""
}

// subQuery answers llm_query. It is counted whether or not it succeeds.
func (r *runner) subQuery(ctx context.Context, prompt string) (string, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return "", errors.New("the run is over")
	}
	if r.res.SubQueries >= r.opts.MaxSubQueries {
		r.mu.Unlock()
		return "", fmt.Errorf("%w (%d per run)", ErrSubQueryLimit, r.opts.MaxSubQueries)
	}
	r.res.SubQueries++
	iteration := r.iteration
	r.mu.Unlock()
	start := time.Now()
	reply, err := r.sample(ctx, Request{
		System:    SubSystemPrompt,
		Messages:  []Message{{Role: User, Text: prompt}},
		MaxTokens: r.opts.SubMaxTokens,
		Sub:       true,
	})
	st := ledger.RLMStep{Kind: ledger.RLMStepSubQuery, Iteration: iteration, Prompt: prompt, Text: reply.Text, Model: reply.Model, DurationMS: since(start)}
	if err != nil {
		st.Error = err.Error()
	}
	r.step(st)
	return reply.Text, err
}

func (r *runner) step(st ledger.RLMStep) {
	if st.Iteration == 0 {
		st.Iteration = r.iteration
	}
	for _, s := range []*string{&st.Text, &st.Code, &st.Output, &st.Prompt, &st.Error} {
		*s = cut(*s, r.opts.MaxText)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.res.Transcript = append(r.res.Transcript, st)
	if r.opts.OnStep != nil {
		r.opts.OnStep(st)
	}
}

// fail ends the run as failed, keeping what it did.
func (r *runner) fail(err error) (*ledger.RLMResult, error) {
	r.res.Status = ledger.RLMFailed
	r.res.Error = err.Error()
	return r.res, err
}

var (
	replBlock = regexp.MustCompile("(?s)```repl[ \\t]*\\r?\\n(.*?)```")
	// An answer line: FINAL(...) at the start of a line, up to the last
	// closing parenthesis of the reply, so that the answer may span
	// lines and hold parentheses of its own.
	finalLine    = regexp.MustCompile(`(?m)^[ \t]*FINAL\(`)
	finalVarLine = regexp.MustCompile(`(?m)^[ \t]*FINAL_VAR\(\s*["'` + "`" + `]?([A-Za-z_$][A-Za-z0-9_$]*)["'` + "`" + `]?\s*\)`)
	// codeFence is any fenced block, closed or running to the end.
	codeFence = regexp.MustCompile("(?s)```.*?(```|$)")
)

// replBlocks returns the code of every ```repl block, in order.
func replBlocks(text string) []string {
	var out []string
	for _, m := range replBlock.FindAllStringSubmatch(text, -1) {
		if code := strings.TrimSpace(m[1]); code != "" {
			out = append(out, code)
		}
	}
	return out
}

// outsideCode is text with its fenced code blocks removed, so that FINAL
// inside code is not mistaken for an answer line.
func outsideCode(text string) string {
	return codeFence.ReplaceAllString(text, "")
}

func finalIn(text string) (string, bool) {
	text = outsideCode(text)
	loc := finalLine.FindStringIndex(text)
	if loc == nil {
		return "", false
	}
	rest := text[loc[1]:]
	end := strings.LastIndex(rest, ")")
	if end < 0 {
		return "", false
	}
	return strings.TrimSpace(rest[:end]), true
}

func finalVarIn(text string) (string, bool) {
	m := finalVarLine.FindStringSubmatch(outsideCode(text))
	if m == nil {
		return "", false
	}
	return m[1], true
}

// firstMessage opens the conversation: the query and what context holds.
func firstMessage(query, contextJSON string, o Options) string {
	return fmt.Sprintf("Query: %s\n\n"+
		"The REPL is ready. context holds the reasoning session as a JavaScript object (%d characters of JSON); look at its shape before reading it all.\n"+
		"You have %d turns; each ```repl block gets %v of computing time and %d bytes of output.",
		query, utf8.RuneCountInString(contextJSON), o.MaxIterations, o.BlockTimeout, o.MaxOutput)
}

// cut shortens s to at most n bytes (on a rune boundary), saying so.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("… [cut: %d more bytes]", len(s)-i)
}

func since(t time.Time) int64 { return time.Since(t).Milliseconds() }
