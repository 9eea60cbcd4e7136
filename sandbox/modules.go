package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja_nodejs/require"
)

// Modules gives a session CommonJS modules, for notebooks: modules kept
// in memory (a notebook's compiled cells) and the packages installed in
// one folder's node_modules, and nothing else. A session with Modules
// also has setTimeout and setInterval, whose callbacks all run before the
// run that scheduled them ends (on a virtual clock: nothing waits), so no
// timer outlives its run.
type Modules struct {
	// Root is an absolute folder without symbolic links in its path.
	// require() reads files only under Root/node_modules, and refuses a
	// file whose real path (links resolved) is elsewhere.
	Root string `json:"root"`
	// Sources are the in-memory modules, CommonJS code by slash path
	// relative to Root ("cells/helpers.ts"). They are never read from
	// disk.
	Sources map[string]string `json:"sources,omitempty"`
	// Aliases are other paths of in-memory modules, relative to Root
	// ("cells/helpers" → "cells/helpers.ts"): a module required under
	// either name is loaded, and run, once.
	Aliases map[string]string `json:"aliases,omitempty"`
}

// maxModuleFile bounds one file read from node_modules.
const maxModuleFile = 32 << 20

// coreModules are Node's own modules. None exists in a notebook; naming
// them gets a clear refusal instead of a search of node_modules that a
// package named like one (say, an "fs" on npm) could answer.
var coreModules = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(`assert async_hooks buffer child_process cluster console constants crypto
		dgram diagnostics_channel dns domain events fs fs/promises http http2 https inspector module net os path
		path/posix path/win32 perf_hooks process punycode querystring readline repl stream stream/promises
		string_decoder sys timers timers/promises tls trace_events tty url util v8 vm wasi worker_threads zlib test`) {
		m[n] = true
	}
	return m
}()

// moduleSystem is the child's side of Modules.
type moduleSystem struct {
	c    *child
	cfg  Modules
	req  *require.RequireModule
	errT goja.Value // the Error constructor

	timers    timerQueue
	rejected  []*goja.Promise // rejected with no handler yet, in order
	nodeRoot  string          // Root/node_modules, with a trailing separator
	rootSlash string          // Root with a trailing separator
}

func (c *child) setupModules(cfg *Modules) error {
	m := &moduleSystem{c: c, errT: c.vm.Get("Error")}
	if err := m.configure(cfg); err != nil {
		return err
	}
	reg := require.NewRegistry(require.WithLoader(m.load), require.WithPathResolver(m.resolve))
	m.req = reg.Enable(c.vm)
	// The global require is what every module gets as its own require:
	// this one checks the name before the registry searches for it.
	if err := c.vm.Set("require", m.require); err != nil {
		return err
	}
	for name, f := range map[string]func(goja.FunctionCall) goja.Value{
		"setTimeout":    m.timers.set(c.vm, false),
		"setInterval":   m.timers.set(c.vm, true),
		"clearTimeout":  m.timers.clear,
		"clearInterval": m.timers.clear,
		"queueMicrotask": func(call goja.FunctionCall) goja.Value {
			f, ok := goja.AssertFunction(call.Argument(0))
			if !ok {
				panic(c.vm.NewTypeError("queueMicrotask: expected a function"))
			}
			p, resolve, _ := c.vm.NewPromise()
			_ = resolve(goja.Undefined())
			then, _ := goja.AssertFunction(c.vm.ToValue(p).ToObject(c.vm).Get("then"))
			_, _ = then(c.vm.ToValue(p), c.vm.ToValue(func(goja.FunctionCall) goja.Value {
				_, err := f(goja.Undefined())
				if err != nil {
					panic(err)
				}
				return goja.Undefined()
			}))
			return goja.Undefined()
		},
	} {
		if err := c.vm.Set(name, f); err != nil {
			return err
		}
	}
	c.vm.SetPromiseRejectionTracker(func(p *goja.Promise, op goja.PromiseRejectionOperation) {
		if op == goja.PromiseRejectionReject {
			m.rejected = append(m.rejected, p)
			return
		}
		for i, q := range m.rejected {
			if q == p {
				m.rejected = append(m.rejected[:i], m.rejected[i+1:]...)
				break
			}
		}
	})
	c.modules = m
	return nil
}

// configure sets the modules; an empty Root (a spare session, given its
// modules by SetModules later) finds nothing.
func (m *moduleSystem) configure(cfg *Modules) error {
	if cfg.Root != "" && !filepath.IsAbs(cfg.Root) {
		return fmt.Errorf("modules: the root %q is not an absolute path", cfg.Root)
	}
	m.cfg = *cfg
	m.rootSlash, m.nodeRoot = "", ""
	if cfg.Root != "" {
		m.rootSlash = filepath.Clean(cfg.Root) + string(filepath.Separator)
		m.nodeRoot = m.rootSlash + "node_modules" + string(filepath.Separator)
	}
	return nil
}

// throw raises a JavaScript Error with msg in the running script.
func (m *moduleSystem) throw(msg string) {
	ctor, _ := goja.AssertConstructor(m.errT)
	o, err := ctor(nil, m.c.vm.ToValue(msg))
	if err != nil {
		panic(m.c.vm.NewGoError(errors.New(msg)))
	}
	panic(o)
}

// require is the require() of scripts and modules: core modules and paths
// that leave the root are refused by name; the rest is the registry's
// search (relative to the calling module, as in Node).
func (m *moduleSystem) require(call goja.FunctionCall) goja.Value {
	name := call.Argument(0).String()
	if base := strings.TrimPrefix(name, "node:"); coreModules[base] || coreModules[strings.SplitN(base, "/", 2)[0]] || strings.HasPrefix(name, "node:") {
		m.throw(fmt.Sprintf("module '%s' is not available in notebooks: they have no filesystem, network or process access", name))
	}
	if strings.HasPrefix(name, "/") || strings.HasPrefix(name, "./") || strings.HasPrefix(name, "../") || name == "." || name == ".." {
		from := m.rootSlash + "cells"
		var frames [2]goja.StackFrame
		if fs := m.c.vm.CaptureCallStack(2, frames[:0]); len(fs) == 2 && fs[1].SrcName() != "" {
			from = filepath.Dir(fs[1].SrcName())
		}
		p := m.resolve(from, name)
		if !strings.HasPrefix(p, m.rootSlash) {
			m.throw(fmt.Sprintf("module '%s' is outside the notebook's folder: a notebook reads only its own cells and node_modules", name))
		}
	}
	v, err := m.req.Require(name)
	if err != nil {
		var ex *goja.Exception
		var ie *goja.InterruptedError
		var so *goja.StackOverflowError
		switch {
		case errors.As(err, &ie):
			panic(ie) // stays uncatchable: the run is being stopped
		case errors.As(err, &so):
			panic(so)
		case errors.As(err, &ex):
			panic(ex)
		}
		if errors.Is(err, require.InvalidModuleError) {
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "/") {
				m.throw(fmt.Sprintf("cannot find module '%s': no cell or file of that name", name))
			}
			m.throw(fmt.Sprintf("cannot find module '%s': it is not installed in this notebook's node_modules (install it with install_deps)", name))
		}
		m.throw(fmt.Sprintf("module '%s': %v", name, err))
	}
	return v
}

// resolve joins a module name to the folder it is required from, and maps
// an alias of an in-memory module to its path. Links are resolved by
// load, which alone touches the disk.
func (m *moduleSystem) resolve(base, name string) string {
	p := filepath.FromSlash(name)
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	p = filepath.Clean(p)
	if rel, ok := strings.CutPrefix(p, m.rootSlash); ok {
		if to, ok := m.cfg.Aliases[filepath.ToSlash(rel)]; ok {
			return m.rootSlash + filepath.FromSlash(to)
		}
	}
	return p
}

// load returns a module's source: an in-memory module, or a file of
// node_modules whose real path stays there. Everything else "does not
// exist", so that the registry's search goes on and ends in "cannot
// find".
func (m *moduleSystem) load(p string) ([]byte, error) {
	if m.rootSlash == "" {
		return nil, require.ModuleFileDoesNotExistError
	}
	p = filepath.Clean(p)
	rel, ok := strings.CutPrefix(p, m.rootSlash)
	if !ok {
		return nil, require.ModuleFileDoesNotExistError
	}
	if src, ok := m.cfg.Sources[filepath.ToSlash(rel)]; ok {
		return []byte(src), nil
	}
	if !strings.HasPrefix(p, m.nodeRoot) {
		return nil, require.ModuleFileDoesNotExistError
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil || !strings.HasPrefix(real, m.nodeRoot) {
		// Missing, or a link out of node_modules.
		return nil, require.ModuleFileDoesNotExistError
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, require.ModuleFileDoesNotExistError
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, require.ModuleFileDoesNotExistError
	}
	if fi.Size() > maxModuleFile {
		return nil, fmt.Errorf("%s is larger than %d MiB", filepath.ToSlash(rel), maxModuleFile>>20)
	}
	return io.ReadAll(f)
}

// runModule runs an in-memory module (and what it requires), then the
// timers it set, then reports a promise it left rejected.
func (m *moduleSystem) runModule(name string) error {
	m.timers.reset()
	m.rejected = nil
	_, err := m.req.Require(m.rootSlash + filepath.FromSlash(name))
	if errors.Is(err, require.InvalidModuleError) {
		return fmt.Errorf("no module %q", name)
	}
	if err == nil {
		err = m.timers.drain()
	}
	if err == nil && len(m.rejected) > 0 {
		err = fmt.Errorf("Uncaught (in promise) %s", m.describe(m.rejected[0].Result()))
	}
	m.timers.reset()
	return err
}

// describe renders a thrown value: an Error as "Name: message", anything
// else as print would.
func (m *moduleSystem) describe(v goja.Value) string {
	if o, ok := v.(*goja.Object); ok {
		if msg := o.Get("message"); msg != nil && !goja.IsUndefined(msg) {
			name := "Error"
			if n := o.Get("name"); n != nil && !goja.IsUndefined(n) {
				name = n.String()
			}
			return name + ": " + msg.String()
		}
	}
	return m.c.show(v)
}

// explainModuleError renders an exception of a module run as
// "Error: message at cells/check.ts:12:5": the first stack frame in an
// in-memory module, positions mapped back to the cell's own source, paths
// relative to the root.
func (m *moduleSystem) explainModuleError(err error, maxDepth int) string {
	var ex *goja.Exception
	var so *goja.StackOverflowError
	var msg string
	var stack []goja.StackFrame
	switch {
	case errors.As(err, &so):
		msg, stack = stackOverflow(maxDepth), so.Stack()
	case errors.As(err, &ex):
		msg, stack = "undefined", ex.Stack()
		if v := ex.Value(); v != nil {
			msg = m.describe(v)
		}
	default:
		return strings.ReplaceAll(err.Error(), m.rootSlash, "")
	}
	pick := -1
	for i, f := range stack {
		if rel, ok := strings.CutPrefix(f.SrcName(), m.rootSlash); ok {
			if _, mem := m.cfg.Sources[filepath.ToSlash(rel)]; mem {
				pick = i
				break
			}
		}
	}
	if pick < 0 && len(stack) > 0 && stack[0].SrcName() != "" {
		pick = 0
	}
	if pick >= 0 {
		pos := stack[pick].Position()
		msg += fmt.Sprintf(" at %s:%d:%d", m.relName(stack[pick].SrcName(), pos.Filename), pos.Line, pos.Column)
	}
	return msg
}

// relName is a frame's file for a reader: the source-mapped name when
// there is one, relative to the root.
func (m *moduleSystem) relName(src, mapped string) string {
	name := src
	if mapped != "" {
		name = mapped
	}
	if !filepath.IsAbs(name) && mapped != "" && mapped != src {
		name = filepath.Join(filepath.Dir(src), name)
	}
	return filepath.ToSlash(strings.TrimPrefix(name, m.rootSlash))
}

// timerQueue is setTimeout and setInterval on a virtual clock: callbacks
// run in the order of their due time when the run's code has returned.
type timerQueue struct {
	now     int64
	nextID  int64
	pending []*timer
}

type timer struct {
	id, due, every, seq int64
	fn                  goja.Callable
	args                []goja.Value
}

// maxTimerFires bounds the callbacks of one run: an interval nobody
// clears would otherwise spin until the time limit.
const maxTimerFires = 100000

func (q *timerQueue) reset() { q.now, q.pending = 0, nil }

func (q *timerQueue) set(vm *goja.Runtime, repeat bool) func(goja.FunctionCall) goja.Value {
	return func(call goja.FunctionCall) goja.Value {
		fn, ok := goja.AssertFunction(call.Argument(0))
		if !ok {
			panic(vm.NewTypeError("expected a function as the first argument"))
		}
		delay := max(call.Argument(1).ToInteger(), 0)
		if repeat {
			delay = max(delay, 1)
		}
		q.nextID++
		t := &timer{id: q.nextID, due: q.now + delay, seq: q.nextID, fn: fn}
		if repeat {
			t.every = delay
		}
		if len(call.Arguments) > 2 {
			t.args = append([]goja.Value(nil), call.Arguments[2:]...)
		}
		q.pending = append(q.pending, t)
		return vm.ToValue(t.id)
	}
}

func (q *timerQueue) clear(call goja.FunctionCall) goja.Value {
	id := call.Argument(0).ToInteger()
	for i, t := range q.pending {
		if t.id == id {
			q.pending = append(q.pending[:i], q.pending[i+1:]...)
			break
		}
	}
	return goja.Undefined()
}

func (q *timerQueue) drain() error {
	for fires := 0; len(q.pending) > 0; fires++ {
		if fires == maxTimerFires {
			return fmt.Errorf("timers fired %d times in one cell; an interval that is never cleared?", maxTimerFires)
		}
		sort.SliceStable(q.pending, func(i, j int) bool {
			a, b := q.pending[i], q.pending[j]
			if a.due != b.due {
				return a.due < b.due
			}
			return a.seq < b.seq
		})
		t := q.pending[0]
		q.pending = q.pending[1:]
		q.now = t.due
		if t.every > 0 {
			q.nextID++
			t.due, t.seq = q.now+t.every, q.nextID
			q.pending = append(q.pending, t)
		}
		if _, err := t.fn(goja.Undefined(), t.args...); err != nil {
			return err
		}
	}
	return nil
}
