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

	"github.com/dop251/goja"
)

// errBlockTimeout interrupts a block that used up its time.
var errBlockTimeout = errors.New("block timed out")

// errAbandoned is returned when a block did not stop after it was
// interrupted: goja cannot interrupt a native built-in (a huge
// String.prototype.repeat, a pathological regular expression), so the
// block's goroutine is left to finish on its own and the VM is not used
// again.
var errAbandoned = errors.New("block did not stop when interrupted (stuck in a built-in function); the REPL was abandoned")

// abandonGrace is how long a block may take to stop after its interrupt
// (a variable so that a test can shorten it).
var abandonGrace = time.Second

// maxCallDepth bounds JavaScript recursion. goja's default is unbounded,
// so a runaway recursion would grow memory until the time limit.
const maxCallDepth = 4096

// identifier is a JavaScript variable name, as FINAL_VAR takes one.
var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// sandbox is the REPL of one run: a goja runtime whose global scope lives
// as long as the run, so that variables persist from block to block.
//
// It has what ECMAScript itself provides and nothing more, plus context,
// print (console.log writes there too), llm_query, FINAL and FINAL_VAR.
// goja brings no require, no filesystem, network, timers or process
// object, and none are added: fetch, XMLHttpRequest, require, process and
// setTimeout are simply undefined.
type sandbox struct {
	vm        *goja.Runtime
	stringify goja.Callable // JSON.stringify as it was at start
	opts      Options
	// subQuery answers llm_query; it runs on the VM's goroutine.
	subQuery func(ctx context.Context, prompt string) (string, error)

	// The fields below are per block: set before it runs, read after it
	// finished (the channel handoff orders the accesses).
	ctx      context.Context
	out      boundedWriter
	clock    *blockClock
	final    *string // set by FINAL
	finalVar string  // set by FINAL_VAR
	dead     bool    // abandoned: never run again
	quiet    bool    // do not echo the completion value (FINAL_VAR's lookup)
}

func newSandbox(contextJSON string, opts Options, subQuery func(context.Context, string) (string, error)) (*sandbox, error) {
	s := &sandbox{vm: goja.New(), opts: opts, subQuery: subQuery}
	s.vm.SetMaxCallStackSize(maxCallDepth)
	stringify, ok := goja.AssertFunction(s.vm.Get("JSON").ToObject(s.vm).Get("stringify"))
	if !ok {
		return nil, errors.New("JSON.stringify is missing from the JavaScript runtime")
	}
	s.stringify = stringify
	parse, _ := goja.AssertFunction(s.vm.Get("JSON").ToObject(s.vm).Get("parse"))
	// The context is parsed inside the VM, so that it is made of plain
	// JavaScript objects and arrays (with map, filter, …) rather than
	// wrapped Go values.
	ctxValue, err := parse(goja.Undefined(), s.vm.ToValue(contextJSON))
	if err != nil {
		return nil, fmt.Errorf("context: %w", err)
	}
	print := func(call goja.FunctionCall) goja.Value {
		parts := make([]string, len(call.Arguments))
		for i, a := range call.Arguments {
			parts[i] = s.show(a)
		}
		s.out.WriteString(strings.Join(parts, " ") + "\n")
		return goja.Undefined()
	}
	console := s.vm.NewObject()
	for _, name := range []string{"log", "info", "warn", "error", "debug"} {
		_ = console.Set(name, print)
	}
	for name, v := range map[string]any{
		"context":   ctxValue,
		"print":     print,
		"console":   console,
		"llm_query": s.llmQuery,
		"FINAL": func(call goja.FunctionCall) goja.Value {
			answer := s.show(call.Argument(0))
			s.final = &answer
			return goja.Undefined()
		},
		"FINAL_VAR": func(call goja.FunctionCall) goja.Value {
			s.finalVar = call.Argument(0).String()
			return goja.Undefined()
		},
	} {
		if err := s.vm.Set(name, v); err != nil {
			return nil, fmt.Errorf("sandbox global %s: %w", name, err)
		}
	}
	return s, nil
}

// llmQuery is llm_query(prompt): a sub-query, answered synchronously. The
// block's clock stops meanwhile: the time limit is for the block's own
// computation, and a model's answer takes seconds.
func (s *sandbox) llmQuery(call goja.FunctionCall) goja.Value {
	prompt := call.Argument(0)
	if goja.IsUndefined(prompt) || goja.IsNull(prompt) {
		panic(s.vm.NewTypeError("llm_query(prompt): prompt is required"))
	}
	s.clock.pause()
	answer, err := s.subQuery(s.ctx, s.show(prompt))
	if !s.clock.resume() {
		// The time ran out, or the run was cancelled, while the sub-query
		// was out; the pending interrupt stops the block on return.
		return goja.Undefined()
	}
	if err != nil {
		panic(s.vm.NewGoError(fmt.Errorf("llm_query failed: %w", err)))
	}
	return s.vm.ToValue(answer)
}

// show renders a value as print and FINAL do: strings as they are,
// anything else as JSON when it has a JSON form, else as String() would.
func (s *sandbox) show(v goja.Value) string {
	if v == nil || goja.IsUndefined(v) {
		return "undefined"
	}
	if str, ok := v.Export().(string); ok {
		return str
	}
	if _, isFunc := goja.AssertFunction(v); !isFunc {
		if j, err := s.stringify(goja.Undefined(), v); err == nil && !goja.IsUndefined(j) {
			return j.String()
		}
	}
	return v.String()
}

// blockResult is what running one block produced.
type blockResult struct {
	output string
	// value is the block's completion value (its last expression), and
	// shown that value rendered as print would.
	value goja.Value
	shown string
	// err is the exception the block threw, or why it was stopped.
	err error
}

// run executes one block with the time limit, stopping it if ctx is done.
func (s *sandbox) run(ctx context.Context, code string) blockResult {
	if s.dead {
		return blockResult{err: errAbandoned}
	}
	s.ctx = ctx
	s.out = boundedWriter{limit: s.opts.MaxOutput}
	s.clock = newBlockClock(s.vm, s.opts.BlockTimeout)
	stopCancel := context.AfterFunc(ctx, func() { s.clock.interrupt(context.Cause(ctx)) })

	done := make(chan blockResult, 1)
	go func() {
		var r blockResult
		defer func() {
			if p := recover(); p != nil {
				r.err = fmt.Errorf("the REPL failed: %v", p)
				if e, ok := p.(error); ok {
					r.err = e // an interrupt inside show, say
				}
			}
			done <- r
		}()
		r.value, r.err = s.vm.RunString(code)
		if r.err == nil && r.value != nil && !goja.IsUndefined(r.value) {
			// Rendering may run the block's own toJSON or toString, so
			// it happens here, on the clock.
			r.shown = s.show(r.value)
		}
	}()

	var r blockResult
	select {
	case r = <-done:
	case <-s.clock.abandoned:
		s.dead = true
		r.err = errAbandoned
	}
	stopCancel()
	if !s.dead {
		// No interrupt can arrive any more; clear one that came after
		// the block ended, so that the next block starts clean.
		s.clock.stop()
		s.vm.ClearInterrupt()
	}
	if r.err == nil && r.value != nil && !goja.IsUndefined(r.value) && !s.quiet {
		// Like any REPL, show the value of the last expression.
		s.out.WriteString("=> " + r.shown + "\n")
	}
	if !s.dead {
		// An abandoned block may still be writing to s.out.
		r.output = s.out.String()
	}
	r.err = s.explain(r.err)
	return r
}

// explain turns the errors goja returns into what a model can act on.
func (s *sandbox) explain(err error) error {
	var ie *goja.InterruptedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ie):
		if cause, ok := ie.Value().(error); ok {
			if errors.Is(cause, errBlockTimeout) {
				return fmt.Errorf("interrupted: the block ran longer than %v", s.opts.BlockTimeout)
			}
			return cause // the run's context: cancelled or out of time
		}
		return fmt.Errorf("interrupted: %v", ie.Value())
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		return fmt.Errorf("RangeError: call stack deeper than %d frames", maxCallDepth)
	}
	return err
}

// lookup reads a variable by name, for FINAL_VAR: global let and const
// bindings are not properties of the global object, so the name is
// evaluated, once it is known to be a bare identifier.
func (s *sandbox) lookup(name string) (string, error) {
	name = strings.Trim(strings.TrimSpace(name), `"'`+"`")
	if !identifier.MatchString(name) {
		return "", fmt.Errorf("FINAL_VAR(%s): expected a variable name", name)
	}
	if s.dead {
		return "", errAbandoned
	}
	s.quiet = true
	defer func() { s.quiet = false }()
	r := s.run(context.Background(), "typeof "+name+` === "undefined" ? undefined : `+name)
	switch {
	case r.err != nil:
		return "", fmt.Errorf("FINAL_VAR(%s): %v", name, r.err)
	case r.value == nil || goja.IsUndefined(r.value):
		return "", fmt.Errorf("FINAL_VAR(%s): no variable %s is defined", name, name)
	}
	return r.shown, nil
}

// blockClock is a block's time limit. It runs while the block computes and
// stands still while llm_query waits for a model. When it runs out, or the
// run is cancelled, the VM is interrupted; if the block does not stop
// within abandonGrace, abandoned is closed.
type blockClock struct {
	vm        *goja.Runtime
	abandoned chan struct{}

	// mu guards the fields below against the timers' goroutines.
	mu      sync.Mutex
	left    time.Duration
	started time.Time
	timer   *time.Timer // nil while paused or stopped
	grace   *time.Timer
	cause   error // why the block was interrupted; nil while it may run
	ended   bool  // the block returned: interrupt nothing
}

func newBlockClock(vm *goja.Runtime, limit time.Duration) *blockClock {
	c := &blockClock{vm: vm, abandoned: make(chan struct{}), left: limit}
	c.mu.Lock()
	c.startLocked()
	c.mu.Unlock()
	return c
}

func (c *blockClock) startLocked() {
	c.started = time.Now()
	c.timer = time.AfterFunc(c.left, func() { c.interrupt(errBlockTimeout) })
}

// pause stops the clock for a sub-query.
func (c *blockClock) pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil && c.timer.Stop() {
		c.left -= time.Since(c.started)
	}
	c.timer = nil
}

// resume restarts the clock after a sub-query; false if the block has been
// interrupted meanwhile.
func (c *blockClock) resume() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cause != nil {
		return false
	}
	c.startLocked()
	return true
}

// interrupt stops the block for cause, once.
func (c *blockClock) interrupt(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cause != nil || c.ended {
		return
	}
	c.cause = cause
	c.vm.Interrupt(cause)
	c.grace = time.AfterFunc(abandonGrace, func() { close(c.abandoned) })
}

// stop ends the clock once the block has returned.
func (c *blockClock) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.grace != nil {
		c.grace.Stop()
	}
}

// boundedWriter keeps the first limit bytes written to it and counts the
// rest, so that a block printing in a loop cannot flood the model or the
// ledger.
type boundedWriter struct {
	limit   int
	b       strings.Builder
	dropped int
}

func (w *boundedWriter) WriteString(s string) {
	room := w.limit - w.b.Len()
	if room >= len(s) {
		w.b.WriteString(s)
		return
	}
	if room > 0 {
		cut := room
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		w.b.WriteString(s[:cut])
		s = s[cut:]
	}
	w.dropped += len(s)
}

func (w *boundedWriter) String() string {
	if w.dropped == 0 {
		return w.b.String()
	}
	return fmt.Sprintf("%s\n… [output cut at %d bytes; %d more bytes were dropped]\n", w.b.String(), w.limit, w.dropped)
}
