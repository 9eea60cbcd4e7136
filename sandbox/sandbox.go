// Package sandbox runs untrusted JavaScript in a child process of the
// running binary, so that nothing a script does — allocate without end,
// spin in a regular expression, crash the runtime — reaches the server's
// own address space. The child is goja behind a small JSON protocol on
// its stdin and stdout; it lives under an address-space and a CPU limit,
// inherits no descriptor but its three pipes and no environment, and is
// killed when a run overstays its deadline.
//
// One Session is one child and one JavaScript global scope, so state
// persists from run to run (the blocks of an RLM run, the cells of a
// notebook run):
//
//	s, err := sandbox.Start(ctx, sandbox.Config{
//		Globals:   map[string]json.RawMessage{"context": doc},
//		HostFuncs: map[string]sandbox.HostFunc{"llm_query": ask},
//	})
//	defer s.Close()
//	res, err := s.Run(ctx, "context.thoughts.length", sandbox.RunOptions{Echo: true})
//
// A script's own failure (an exception, its time limit) is in
// Result.Error and the session goes on. An error from Run means the child
// is gone (out of memory, out of CPU, killed at its deadline, crashed);
// the session is then closed, and the error says which, for the caller to
// pass on. Starting a new session starts a new child.
//
// Any binary that links this package becomes a child when started by
// Start (see init in child.go); nothing else is needed in main.
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Defaults for Limits and RunOptions.
const (
	DefaultMemory       = 256 << 20
	DefaultCPU          = 2 * time.Minute
	DefaultMaxCallDepth = 4096
	DefaultMaxHostArg   = 1 << 20
	DefaultGrace        = time.Second
	DefaultTimeout      = 5 * time.Second
	DefaultMaxOutput    = 64 << 10
)

// Limits bound one session's child. Zero values take the defaults.
type Limits struct {
	// Memory is how much the scripts may allocate, in bytes (256 MiB):
	// the child's address space is limited to what it maps at start plus
	// this, and it ends itself when its runtime holds more.
	Memory int64
	// CPU is the processor time the child may use over its whole life
	// (2 minutes), whatever each run's timeout.
	CPU time.Duration
	// MaxCallDepth bounds JavaScript recursion (4096 frames).
	MaxCallDepth int
	// MaxHostArg caps the argument of a host function, in bytes (1 MiB).
	MaxHostArg int
	// Grace is how long past a run's timeout, or its context's end, the
	// child gets to stop the script itself before it is killed (1s).
	// goja cannot interrupt a native built-in such as a backtracking
	// regular expression; killing the child is what stops those.
	Grace time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.Memory <= 0 {
		l.Memory = DefaultMemory
	}
	if l.CPU <= 0 {
		l.CPU = DefaultCPU
	}
	if l.MaxCallDepth <= 0 {
		l.MaxCallDepth = DefaultMaxCallDepth
	}
	if l.MaxHostArg <= 0 {
		l.MaxHostArg = DefaultMaxHostArg
	}
	if l.Grace <= 0 {
		l.Grace = DefaultGrace
	}
	return l
}

// HostArg is the argument a script passed to a host function, rendered as
// print renders values (strings as they are, other values as JSON).
type HostArg struct {
	Text string
	// Nullish is set when the argument was undefined or null (or none
	// was given); Text is then "undefined" or "null".
	Nullish bool
}

// HostFunc is a function the script can call that runs in the parent,
// like llm_query. Its result is handed to the script as JSON (a string
// stays a string; nil is undefined); an error is thrown into the script
// with the error's text. It runs on the goroutine that called Run, with
// Run's context, and the run's clock stands still while it does.
type HostFunc func(ctx context.Context, arg HostArg) (any, error)

// Config is what a session starts with.
type Config struct {
	Limits Limits
	// Globals are JSON documents, each parsed inside the runtime into the
	// global variable of its name.
	Globals map[string]json.RawMessage
	// HostFuncs are the host functions, as global functions of their name.
	HostFuncs map[string]HostFunc
	// Modules, when set, gives the session require() and timers (see
	// Modules), and RunModule.
	Modules *Modules
}

// RunOptions bound one run. Zero values take the defaults.
type RunOptions struct {
	// Timeout is the computing time the script gets (5s); time spent in
	// host functions does not count. The script is interrupted then, and
	// the child killed if it has not stopped Limits.Grace later.
	Timeout time.Duration
	// MaxOutput caps what the script prints, in bytes (64 KiB); the rest
	// is dropped and the output says how much.
	MaxOutput int
	// MaxValue caps Result.Value, in bytes (MaxOutput).
	MaxValue int
	// Echo adds "=> value" to the output when the script's last
	// expression has a value, as a REPL shows it.
	Echo bool
}

// Result is what a run produced.
type Result struct {
	// Output is what the script printed (print, console.log).
	Output string
	// Value is the script's completion value, rendered as print would,
	// when HasValue.
	Value    string
	HasValue bool
	// Error is the exception the script ended with, or why it was
	// stopped; empty if it ran to its end.
	Error string
	// Interrupted is set when the script was stopped at its time limit or
	// because Run's context ended.
	Interrupted bool
}

// ErrOutOfMemory, ErrCPULimit, ErrTimeLimit, ErrCrashed and ErrClosed say
// why a session's child is gone; Run's errors wrap one of them (test with
// errors.Is).
var (
	// ErrOutOfMemory is returned when the scripts used more memory than
	// Limits.Memory.
	ErrOutOfMemory = errors.New("the sandbox ran out of memory")
	// ErrCPULimit is returned when the child used up Limits.CPU.
	ErrCPULimit = errors.New("the sandbox exceeded its CPU limit")
	// ErrTimeLimit is returned when a script did not stop at its timeout
	// (or its context's end) and the child was killed.
	ErrTimeLimit = errors.New("the sandbox exceeded its time limit")
	// ErrCrashed is returned when the child ended for any other reason.
	ErrCrashed = errors.New("the sandbox crashed")
	// ErrClosed is returned by Run after Close.
	ErrClosed = errors.New("the sandbox is closed")
)

// Error is why a session's child is gone: Kind is one of the ErrX above,
// Detail says more.
type Error struct {
	Kind   error
	Detail string
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return e.Kind.Error()
	}
	return e.Kind.Error() + " " + e.Detail
}

func (e *Error) Unwrap() error { return e.Kind }

// Session is one child process and its JavaScript runtime. Run may be
// called from one goroutine at a time (calls are serialised); Close from
// any.
type Session struct {
	cfg   Config
	cmd   *exec.Cmd
	stdin *os.File

	msgs       chan message  // from the child's stdout; closed at its end
	readDone   chan struct{} // closed when the stdout reader has returned
	exited     chan struct{} // closed once the child has been reaped
	stderr     headBuffer
	stderrDone chan struct{}
	inMu       sync.Mutex // one message at a time to the child

	runMu   sync.Mutex // one run at a time
	nextRun uint64

	mu        sync.Mutex // guards the fields below
	gone      error      // set once the child is gone: every later Run's error
	killedFor error      // why the parent killed the child, if it did
	closeOnce sync.Once
}

// startTimeout bounds how long a child may take to say it is ready.
const startTimeout = 30 * time.Second

// Start starts a child and its runtime. ctx bounds the start only; the
// session lives until Close or its child's end.
func Start(ctx context.Context, cfg Config) (*Session, error) {
	cfg.Limits = cfg.Limits.withDefaults()
	for name, doc := range cfg.Globals {
		if !json.Valid(doc) {
			return nil, fmt.Errorf("starting the sandbox: Config.Globals[%q]: expected a JSON document", name)
		}
	}
	cmd, err := childCommand()
	if err != nil {
		return nil, fmt.Errorf("starting the sandbox: finding this program: %w", err)
	}
	// Nothing of the server's environment: no tokens, no paths. The one
	// other variable keeps glibc, in a binary that links it (cgo), to one
	// malloc arena: each further arena reserves 64 MiB or more of address
	// space, which counts against the child's address-space limit.
	cmd.Env = []string{childEnv + "=" + protocolVersion, "MALLOC_ARENA_MAX=1"}
	cmd.Dir = os.TempDir()

	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("starting the sandbox: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("starting the sandbox: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("starting the sandbox: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	// The child has its ends now (or failed to start); the parent keeps
	// only its own.
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("starting the sandbox: %w", err)
	}
	s := &Session{
		cfg: cfg, cmd: cmd, stdin: inW,
		msgs: make(chan message), readDone: make(chan struct{}), exited: make(chan struct{}), stderrDone: make(chan struct{}),
		stderr: headBuffer{limit: 16 << 10},
	}
	go s.readStdout(outR)
	go func() {
		defer close(s.stderrDone)
		defer errR.Close()
		_, _ = io.Copy(&s.stderr, errR)
	}()
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()

	names := make([]string, 0, len(cfg.HostFuncs))
	for name := range cfg.HostFuncs {
		names = append(names, name)
	}
	init := message{
		Type: msgInit, Globals: cfg.Globals, HostFuncs: names,
		MemoryBytes: cfg.Limits.Memory, CPUSeconds: int64((cfg.Limits.CPU + time.Second - 1) / time.Second),
		MaxCallDepth: cfg.Limits.MaxCallDepth, MaxHostArg: cfg.Limits.MaxHostArg, Modules: cfg.Modules,
	}
	if err := s.send(init); err != nil {
		return nil, s.failStart(err)
	}
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case m, ok := <-s.msgs:
		if !ok {
			return nil, s.failStart(nil)
		}
		if m.Type != msgReady {
			return nil, s.failStart(fmt.Errorf("expected ready, got %q", m.Type))
		}
	case <-timer.C:
		return nil, s.failStart(fmt.Errorf("not ready after %v", startTimeout))
	case <-ctx.Done():
		return nil, s.failStart(context.Cause(ctx))
	}
	return s, nil
}

// failStart kills a child that did not get ready and says why.
func (s *Session) failStart(why error) error {
	err := s.kill(nil)
	if why != nil {
		return fmt.Errorf("starting the sandbox: %w (%v)", why, err)
	}
	return fmt.Errorf("starting the sandbox: %w", err)
}

// Pid is the child's process id.
func (s *Session) Pid() int { return s.cmd.Process.Pid }

// readStdout turns the child's stdout into messages until it ends.
func (s *Session) readStdout(r *os.File) {
	defer close(s.readDone)
	defer close(s.msgs)
	defer r.Close()
	dec := json.NewDecoder(r)
	for {
		var m message
		if err := dec.Decode(&m); err != nil {
			return
		}
		select {
		case s.msgs <- m:
		case <-s.exited:
			return
		}
	}
}

func (s *Session) send(m message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	s.inMu.Lock()
	defer s.inMu.Unlock()
	_, err = s.stdin.Write(append(b, '\n'))
	return err
}

// Run runs code in the session's runtime: its globals are those the
// earlier runs left.
func (s *Session) Run(ctx context.Context, code string, opts RunOptions) (Result, error) {
	return s.run(ctx, message{Type: msgRun, Code: code}, opts)
}

// RunModule runs the in-memory module name (a key of Config.Modules'
// Sources) and the timers it sets, as a run of its own: its output is
// what it printed, and a module that required it before, or requires it
// later, shares its one instance. A module that threw is not kept, so a
// later run may try it again. Result.Error names the cell file and line
// where the exception was thrown.
func (s *Session) RunModule(ctx context.Context, name string, opts RunOptions) (Result, error) {
	s.runMu.Lock()
	mods := s.cfg.Modules
	s.runMu.Unlock()
	if mods == nil {
		return Result{}, errors.New("sandbox: RunModule on a session started without Modules")
	}
	if _, ok := mods.Sources[name]; !ok {
		return Result{}, fmt.Errorf("sandbox: RunModule: no in-memory module %q", name)
	}
	return s.run(ctx, message{Type: msgRun, Module: name}, opts)
}

// SetModules gives a session started with an empty Modules (no Root) its
// modules, before its first run. It lets a caller start a spare child
// ahead of time, when it does not yet know which folder and modules the
// next run needs: the start, tens of milliseconds, is then off that
// run's path.
func (s *Session) SetModules(m *Modules) error {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	switch {
	case s.cfg.Modules == nil || s.cfg.Modules.Root != "":
		return errors.New("sandbox: SetModules on a session that was not started with an empty Modules")
	case s.nextRun > 0:
		return errors.New("sandbox: SetModules after a run")
	case m == nil || !filepath.IsAbs(m.Root):
		return errors.New("sandbox: SetModules: Root must be an absolute path")
	}
	s.mu.Lock()
	gone := s.gone
	s.mu.Unlock()
	if gone != nil {
		return gone
	}
	if err := s.send(message{Type: msgModules, Modules: m}); err != nil {
		return s.died()
	}
	s.cfg.Modules = m
	return nil
}

func (s *Session) run(ctx context.Context, req message, opts RunOptions) (Result, error) {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	s.mu.Lock()
	gone := s.gone
	s.mu.Unlock()
	if gone != nil {
		return Result{}, gone
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = DefaultMaxOutput
	}
	if opts.MaxValue <= 0 {
		opts.MaxValue = opts.MaxOutput
	}
	s.nextRun++
	id := s.nextRun
	req.ID, req.TimeoutMS = id, max(opts.Timeout.Milliseconds(), 1)
	req.MaxOutput, req.MaxValue, req.Echo = opts.MaxOutput, opts.MaxValue, opts.Echo
	err := s.send(req)
	if err != nil {
		return Result{}, s.died()
	}

	// The parent's own clock: the child's timeout plus the grace, paused
	// while a host function runs. It is what catches a script the child
	// cannot interrupt.
	left := opts.Timeout + s.cfg.Limits.Grace
	started := time.Now()
	deadline := time.NewTimer(left)
	defer deadline.Stop()
	done := ctx.Done()
	cancelled := false
	for {
		select {
		case m, ok := <-s.msgs:
			if !ok {
				return Result{}, s.died()
			}
			switch {
			case m.Type == msgCall:
				if deadline.Stop() {
					left -= time.Since(started)
				}
				reply := s.call(ctx, m)
				if done != nil && ctx.Err() != nil {
					// The context ended during the call: the interrupt must
					// reach the child before the reply, or the script sees
					// the host function's error instead of being stopped.
					done, cancelled = nil, true
					if err := s.send(message{Type: msgInterrupt}); err != nil {
						return Result{}, s.died()
					}
					left = min(left, s.cfg.Limits.Grace)
				}
				if err := s.send(reply); err != nil {
					return Result{}, s.died()
				}
				started = time.Now()
				deadline.Reset(left)
			case m.Type == msgDone && m.ID == id:
				res := Result{Output: m.Output, Value: m.Value, HasValue: m.HasValue, Error: m.Error, Interrupted: m.Interrupted}
				if cancelled && res.Interrupted {
					res.Error = context.Cause(ctx).Error()
				}
				return res, nil
			}
		case <-done:
			done, cancelled = nil, true
			if err := s.send(message{Type: msgInterrupt}); err != nil {
				return Result{}, s.died()
			}
			if deadline.Stop() {
				left -= time.Since(started)
			}
			started = time.Now()
			left = min(left, s.cfg.Limits.Grace)
			deadline.Reset(left)
		case <-deadline.C:
			why := &Error{Kind: ErrTimeLimit, Detail: fmt.Sprintf("(the script ran %v past its %v timeout and could not be interrupted; it was killed)", s.cfg.Limits.Grace, opts.Timeout)}
			if cancelled {
				why.Detail = fmt.Sprintf("(the script did not stop within %v of being cancelled; it was killed)", s.cfg.Limits.Grace)
			}
			return Result{}, s.kill(why)
		}
	}
}

// call runs a host function for the child.
func (s *Session) call(ctx context.Context, m message) message {
	reply := message{Type: msgReply, ID: m.ID}
	f, ok := s.cfg.HostFuncs[m.Func]
	if !ok {
		reply.Error = fmt.Sprintf("%s is not a host function", m.Func)
		return reply
	}
	v, err := f(ctx, HostArg{Text: m.Arg, Nullish: m.Nullish})
	if err != nil {
		reply.Error = err.Error()
		return reply
	}
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			reply.Error = fmt.Sprintf("%s: its result has no JSON form: %v", m.Func, err)
			return reply
		}
		reply.Result = b
	}
	return reply
}

// kill ends the child for why (nil: no reason to give beyond its own end)
// and returns the error every later Run gets.
func (s *Session) kill(why error) error {
	s.mu.Lock()
	if s.killedFor == nil && s.gone == nil {
		s.killedFor = why
	}
	s.mu.Unlock()
	_ = s.cmd.Process.Kill()
	return s.died()
}

// died waits for the child to be reaped and says why it ended.
func (s *Session) died() error {
	select {
	case <-s.exited:
	case <-time.After(s.cfg.Limits.Grace):
		// Its stdout ended or broke but it lives on: it is no use.
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	<-s.stderrDone
	<-s.readDone
	s.stdin.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone == nil {
		s.gone = s.explain()
	}
	return s.gone
}

// explain classifies the child's end; s.mu is held.
func (s *Session) explain() error {
	if s.killedFor != nil {
		return s.killedFor
	}
	st := s.cmd.ProcessState
	stderr := s.stderr.String()
	lim := s.cfg.Limits
	switch {
	case st.ExitCode() == exitMemory || runtimeOutOfMemory(stderr):
		return &Error{Kind: ErrOutOfMemory, Detail: fmt.Sprintf("(limit %d MiB)", lim.Memory>>20)}
	case st.ExitCode() == exitCPU || (!st.Exited() && st.UserTime()+st.SystemTime() >= lim.CPU):
		return &Error{Kind: ErrCPULimit, Detail: fmt.Sprintf("(%v of processor time)", lim.CPU)}
	}
	detail := st.String()
	if line := firstLine(stderr); line != "" {
		detail += ": " + line
	}
	return &Error{Kind: ErrCrashed, Detail: "(" + detail + ")"}
}

// runtimeOutOfMemory says whether the Go runtime reported that it could
// not get memory (the address-space limit refused a mapping).
func runtimeOutOfMemory(stderr string) bool {
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "fatal error: out of memory") || strings.HasPrefix(line, "runtime: out of memory") {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

// Close ends the child: it is asked to leave (its stdin closes) and
// killed if it has not within the grace. A Run in progress returns
// ErrClosed. Close waits for the child to be reaped.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		if s.killedFor == nil && s.gone == nil {
			s.killedFor = ErrClosed
		}
		s.mu.Unlock()
		s.inMu.Lock()
		s.stdin.Close()
		s.inMu.Unlock()
		select {
		case <-s.exited:
		case <-time.After(s.cfg.Limits.Grace):
			_ = s.cmd.Process.Kill()
		}
		_ = s.died()
	})
	return nil
}

// headBuffer keeps the first limit bytes of the child's stderr (where the
// Go runtime writes why it died) and drops the rest, so that a flood of
// goroutine traces cannot grow the parent.
type headBuffer struct {
	mu    sync.Mutex
	limit int
	b     []byte
}

func (t *headBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.limit - len(t.b); room > 0 {
		t.b = append(t.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (t *headBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
