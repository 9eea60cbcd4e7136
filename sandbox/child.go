package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// init turns any binary that links this package into a sandbox child when
// the parent asked for one. Doing it here rather than in main means every
// binary that can start a sandbox (the CLI, each package's test binary)
// can also be one, with no wiring; and a test binary cannot mistake the
// request for an ordinary run and start its whole test suite again, which
// would start more children in turn.
//
// The child is the one place in the library that writes to os.Stderr (here
// and in childMain, limits_rlimit.go): it is its own process, and its
// stderr is a pipe the parent reads to name the cause when the child ends
// (see Session's use of the child's stderr), not the user's terminal.
// Everything else takes a *slog.Logger.
func init() {
	v, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	if v != protocolVersion {
		fmt.Fprintf(os.Stderr, "sandbox: this binary speaks protocol %s, the parent asked for %q\n", protocolVersion, v)
		os.Exit(exitProtocol)
	}
	os.Exit(childMain(os.Stdin, os.Stdout))
}

// testGlobals adds native functions to the child's runtime; only this
// package's tests set it (to look at the child from inside).
var testGlobals map[string]func(goja.FunctionCall, *goja.Runtime) goja.Value

// errBlockTimeout interrupts a block that used up its time;
// errInterrupted one that the parent asked to stop.
var (
	errBlockTimeout = errors.New("block timed out")
	errInterrupted  = errors.New("interrupted by the host")
)

// child is the runtime of a sandbox process: one goja VM whose global
// scope lives as long as the process, so that state persists between runs.
type child struct {
	vm        *goja.Runtime
	stringify goja.Callable
	init      message

	outMu sync.Mutex // one message at a time on stdout
	out   *json.Encoder

	// Per run: set before the VM goroutine starts, used by it and by the
	// main loop (replies is the handoff of host-call answers).
	nextCall atomic.Uint64
	replies  chan message
	clock    *clock
	output   boundedWriter

	modules *moduleSystem // nil unless the session has Modules
}

func childMain(stdin io.Reader, stdout io.Writer) int {
	closeInheritedFiles()
	in := json.NewDecoder(bufio.NewReaderSize(stdin, 64<<10))
	c := &child{out: json.NewEncoder(stdout)}
	if err := in.Decode(&c.init); err != nil || c.init.Type != msgInit {
		fmt.Fprintf(os.Stderr, "sandbox: expected an init message: %v\n", err)
		return exitProtocol
	}
	applyLimits(c.init.MemoryBytes, c.init.CPUSeconds)
	if c.init.MemoryBytes > 0 {
		// The runtime's own limit, at the watchdog's figure, makes the
		// collector run as often as it must to stay under it, so a
		// program is ended for what it keeps, not for garbage it left
		// behind. Under the race detector a program growing against
		// that limit collected for over a minute in the tests before it
		// ended, so a race-enabled child leaves the collector at its
		// pace.
		if !raceEnabled {
			debug.SetMemoryLimit(c.init.MemoryBytes)
		}
		go watchHeap(uint64(c.init.MemoryBytes))
	}
	if err := c.setup(); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox: %v\n", err)
		return exitProtocol
	}
	msgs := make(chan message)
	go func() {
		defer close(msgs)
		for {
			var m message
			if err := in.Decode(&m); err != nil {
				if !errors.Is(err, io.EOF) {
					fmt.Fprintf(os.Stderr, "sandbox: reading from the parent: %v\n", err)
				}
				return
			}
			msgs <- m
		}
	}()
	c.send(message{Type: msgReady})
	for m := range msgs {
		switch m.Type {
		case msgRun:
			if !c.run(m, msgs) {
				return 0
			}
		case msgModules:
			if c.modules == nil || m.Modules == nil {
				fmt.Fprintf(os.Stderr, "sandbox: modules for a session without them\n")
				return exitProtocol
			}
			if err := c.modules.configure(m.Modules); err != nil {
				fmt.Fprintf(os.Stderr, "sandbox: %v\n", err)
				return exitProtocol
			}
		case msgReply, msgInterrupt:
			// Late: the run they were for has ended.
		default:
			fmt.Fprintf(os.Stderr, "sandbox: unexpected message %q\n", m.Type)
			return exitProtocol
		}
	}
	return 0 // the parent closed stdin: done
}

// watchHeap ends the process when the memory the Go runtime holds passes
// limit. The address-space limit stops a runaway allocation as well, but
// only where the system has one; this gives every platform the same clear
// ending.
func watchHeap(limit uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	for {
		metrics.Read(sample)
		if sample[0].Value.Uint64()-sample[1].Value.Uint64() > limit {
			fmt.Fprintf(os.Stderr, "sandbox: out of memory: the runtime holds more than %d bytes\n", limit)
			os.Exit(exitMemory)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *child) send(m message) {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	if err := c.out.Encode(m); err != nil {
		// The parent is gone; nothing is left to do.
		os.Exit(0)
	}
}

func (c *child) setup() error {
	c.vm = goja.New()
	if c.init.MaxCallDepth > 0 {
		c.vm.SetMaxCallStackSize(c.init.MaxCallDepth)
	}
	json := c.vm.Get("JSON").ToObject(c.vm)
	stringify, ok := goja.AssertFunction(json.Get("stringify"))
	parse, ok2 := goja.AssertFunction(json.Get("parse"))
	if !ok || !ok2 {
		return errors.New("JSON is missing from the JavaScript runtime")
	}
	c.stringify = stringify
	// Globals are parsed inside the VM, so that they are plain JavaScript
	// objects and arrays (with map, filter, …) rather than wrapped Go
	// values.
	for name, doc := range c.init.Globals {
		v, err := parse(goja.Undefined(), c.vm.ToValue(string(doc)))
		if err != nil {
			return fmt.Errorf("global %s: %w", name, err)
		}
		if err := c.vm.Set(name, v); err != nil {
			return fmt.Errorf("global %s: %w", name, err)
		}
	}
	print := func(call goja.FunctionCall) goja.Value {
		parts := make([]string, len(call.Arguments))
		for i, a := range call.Arguments {
			parts[i] = c.show(a)
		}
		c.output.WriteString(strings.Join(parts, " ") + "\n")
		return goja.Undefined()
	}
	console := c.vm.NewObject()
	for _, name := range []string{"log", "info", "warn", "error", "debug"} {
		_ = console.Set(name, print)
	}
	if err := c.vm.Set("print", print); err != nil {
		return err
	}
	if err := c.vm.Set("console", console); err != nil {
		return err
	}
	for _, name := range c.init.HostFuncs {
		if err := c.vm.Set(name, c.hostFunc(name)); err != nil {
			return fmt.Errorf("host function %s: %w", name, err)
		}
	}
	if c.init.Modules != nil {
		if err := c.setupModules(c.init.Modules); err != nil {
			return err
		}
	}
	for name, f := range testGlobals {
		_ = c.vm.Set(name, func(call goja.FunctionCall) goja.Value { return f(call, c.vm) })
	}
	return nil
}

// hostFunc is the JavaScript side of a host function: it sends its
// argument to the parent and waits for the answer. The block's clock stands
// still meanwhile: the time limit is for the block's own computation.
func (c *child) hostFunc(name string) func(goja.FunctionCall) goja.Value {
	return func(call goja.FunctionCall) goja.Value {
		a := call.Argument(0)
		m := message{Type: msgCall, Func: name, Nullish: goja.IsUndefined(a) || goja.IsNull(a)}
		m.Arg = c.show(a)
		if max := c.init.MaxHostArg; max > 0 && len(m.Arg) > max {
			panic(c.vm.NewTypeError(fmt.Sprintf("%s: the argument is %d bytes; the limit is %d", name, len(m.Arg), max)))
		}
		m.ID = c.nextCall.Add(1)
		c.clock.pause()
		select {
		case <-c.clock.stopped:
			// Already interrupted: do not make the host do work whose
			// answer nobody will read.
			return goja.Undefined()
		default:
		}
		c.send(m)
		var r message
		select {
		case r = <-c.replies:
		case <-c.clock.stopped:
			// Interrupted while waiting; the pending interrupt ends the
			// block as soon as this returns.
			return goja.Undefined()
		}
		if !c.clock.resume() {
			return goja.Undefined()
		}
		if r.Error != "" {
			panic(c.vm.NewGoError(errors.New(r.Error)))
		}
		if len(r.Result) == 0 {
			return goja.Undefined()
		}
		var s string
		if json.Unmarshal(r.Result, &s) == nil {
			return c.vm.ToValue(s)
		}
		parse, _ := goja.AssertFunction(c.vm.Get("JSON").ToObject(c.vm).Get("parse"))
		v, err := parse(goja.Undefined(), c.vm.ToValue(string(r.Result)))
		if err != nil {
			panic(err)
		}
		return v
	}
}

// show renders a value as print does: strings as they are, anything else
// as JSON when it has a JSON form, else as String() would.
func (c *child) show(v goja.Value) string {
	if v == nil || goja.IsUndefined(v) {
		return "undefined"
	}
	if str, ok := v.Export().(string); ok {
		return str
	}
	if _, isFunc := goja.AssertFunction(v); !isFunc {
		if j, err := c.stringify(goja.Undefined(), v); err == nil && !goja.IsUndefined(j) {
			return j.String()
		}
	}
	return v.String()
}

// run executes one block and answers it; false if the parent went away.
// The VM runs on its own goroutine so that this one can keep reading the
// parent's messages: host-call replies and interrupts.
func (c *child) run(m message, msgs <-chan message) bool {
	timeout := time.Duration(m.TimeoutMS) * time.Millisecond
	c.output = boundedWriter{limit: m.MaxOutput}
	c.clock = newClock(c.vm, timeout)
	c.replies = make(chan message, 1)
	done := make(chan message, 1)
	go func() {
		r := message{Type: msgDone, ID: m.ID}
		defer func() {
			if p := recover(); p != nil {
				r.Error = fmt.Sprintf("the runtime failed: %v", p)
				if e, ok := p.(error); ok {
					r.Error = c.explain(e, timeout).Error()
				}
			}
			done <- r
		}()
		if m.Module != "" {
			if c.modules == nil {
				r.Error = "this session has no modules"
				return
			}
			err := c.modules.runModule(m.Module)
			if err != nil {
				var ie *goja.InterruptedError
				r.Interrupted = errors.As(err, &ie)
				if r.Interrupted {
					r.Error = c.explain(err, timeout).Error()
				} else {
					r.Error = c.modules.explainModuleError(err, c.init.MaxCallDepth)
				}
			}
			return
		}
		v, err := c.vm.RunString(m.Code)
		if err == nil && v != nil && !goja.IsUndefined(v) {
			// Rendering may run the block's own toJSON or toString, so
			// it happens here, on the clock.
			r.Value, r.HasValue = c.show(v), true
		}
		if err != nil {
			r.Error = c.explain(err, timeout).Error()
			var ie *goja.InterruptedError
			r.Interrupted = errors.As(err, &ie)
		}
	}()
	for {
		select {
		case r := <-done:
			c.clock.stop()
			c.vm.ClearInterrupt()
			if r.HasValue && m.Echo {
				// Like any REPL, show the value of the last expression.
				c.output.WriteString("=> " + r.Value + "\n")
			}
			r.Output = c.output.String()
			if m.MaxValue > 0 && len(r.Value) > m.MaxValue {
				r.Value = cutString(r.Value, m.MaxValue)
			}
			c.send(r)
			return true
		case in, ok := <-msgs:
			if !ok {
				return false
			}
			switch in.Type {
			case msgReply:
				if in.ID == c.nextCall.Load() {
					select {
					case c.replies <- in:
					default:
					}
				}
			case msgInterrupt:
				c.clock.interrupt(errInterrupted)
			}
		}
	}
}

// explain turns the errors goja returns into what a reader can act on.
func (c *child) explain(err error, timeout time.Duration) error {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		if cause, ok := ie.Value().(error); ok {
			switch {
			case errors.Is(cause, errBlockTimeout):
				return fmt.Errorf("interrupted: the block ran longer than %v", timeout)
			case errors.Is(cause, errInterrupted):
				return errors.New("interrupted: the run was stopped")
			}
		}
		return fmt.Errorf("interrupted: %v", ie.Value())
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		return errors.New(stackOverflow(c.init.MaxCallDepth))
	}
	return err
}

// stackOverflow is how a run that recursed past maxDepth frames is
// reported, by RLM blocks and notebook cells alike: JavaScript's own
// RangeError text, and the depth, so the reader knows the limit.
func stackOverflow(maxDepth int) string {
	return fmt.Sprintf("RangeError: Maximum call stack size exceeded (deeper than %d frames)", maxDepth)
}

// clock is a block's time limit. It runs while the block computes and
// stands still while a host function waits for its answer. When it runs
// out, or the parent interrupts, the VM is interrupted and stopped closed.
type clock struct {
	vm      *goja.Runtime
	stopped chan struct{}

	// mu guards the fields below against the timer's goroutine.
	mu      sync.Mutex
	left    time.Duration
	started time.Time
	timer   *time.Timer // nil while paused or ended
	cause   error       // why the block was interrupted; nil while it may run
	ended   bool        // the block returned: interrupt nothing
}

func newClock(vm *goja.Runtime, limit time.Duration) *clock {
	c := &clock{vm: vm, stopped: make(chan struct{}), left: limit}
	c.mu.Lock()
	c.startLocked()
	c.mu.Unlock()
	return c
}

func (c *clock) startLocked() {
	c.started = time.Now()
	if c.left > 0 {
		c.timer = time.AfterFunc(c.left, func() { c.interrupt(errBlockTimeout) })
	}
}

func (c *clock) pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil && c.timer.Stop() {
		c.left -= time.Since(c.started)
	}
	c.timer = nil
}

// resume restarts the clock after a host call; false if the block was
// interrupted meanwhile.
func (c *clock) resume() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cause != nil {
		return false
	}
	c.startLocked()
	return true
}

func (c *clock) interrupt(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cause != nil || c.ended {
		return
	}
	c.cause = cause
	c.vm.Interrupt(cause)
	close(c.stopped)
}

func (c *clock) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	if c.timer != nil {
		c.timer.Stop()
	}
}

// boundedWriter keeps the first limit bytes written to it and counts the
// rest, so that a block printing in a loop cannot flood its reader.
type boundedWriter struct {
	limit   int
	b       strings.Builder
	dropped int
}

func (w *boundedWriter) WriteString(s string) {
	room := w.limit - w.b.Len()
	if w.limit <= 0 {
		room = len(s)
	}
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

// cutString shortens s to at most n bytes (on a rune boundary), saying so.
func cutString(s string, n int) string {
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("… [cut: %d more bytes]", len(s)-i)
}
