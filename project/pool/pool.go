// Package pool keeps the projects a server opens besides its own: the
// ones MCP connections reach with navigate and bind_root. Each open
// project holds descriptors and memory, so one client naming project
// after project must not be able to pile them up. At most Options.Max
// are open besides the server's own; one that no call holds is closed
// when it has been unused for Options.Idle (Sweep), or when room is
// needed for another (the least recently used first). A project a call
// holds is never closed under it. With memory storage a closed project
// would lose its sessions, so none is closed before Close.
//
// A pool is safe for concurrent use: one mutex guards the open projects
// and the code repositories bind_root found; opening and closing a
// project happen under it, so two calls never open one project twice.
package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/project"
)

// ErrNoProject is wrapped by the error Ledger returns when asked, without
// create, for a project that does not exist, unless Options.NoProject
// names another sentinel.
var ErrNoProject = errors.New("no such project")

// Options configure a pool.
type Options struct {
	// Config is the server's own project's configuration: other projects
	// are resolved from it (Config.ForProject).
	Config *config.Config
	// Own is the server's own ledger, always open, never closed here.
	Own *ledger.Ledger
	// Events receives every opened project's events (without auto-push:
	// each project gets its own).
	Events ledger.EventSink
	Logger *slog.Logger
	// Max is how many projects may be open besides the server's own
	// (THOUGHTBOX_MAX_OPEN_PROJECTS); Idle closes one unused this long
	// (THOUGHTBOX_PROJECT_IDLE_TIMEOUT).
	Max  int
	Idle time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// NoProject is the sentinel a missing project's error wraps, so that
	// the caller recognises it with errors.Is; nil means ErrNoProject.
	NoProject error
}

// Pool is the set of open projects; see the package comment.
type Pool struct {
	o Options

	mu   sync.Mutex
	open map[string]*entry
	// code holds the configurations of the code repositories bind_root
	// moved connections to, by project name (see CodeRoot).
	code map[string]*config.Config
}

type entry struct {
	l        *ledger.Ledger
	proj     *project.Project // nil for the server's own project (its opener closes it)
	users    int              // calls holding it
	lastUsed time.Time
}

// New returns a pool holding the server's own project.
func New(o Options) *Pool {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.NoProject == nil {
		o.NoProject = ErrNoProject
	}
	p := &Pool{o: o, open: map[string]*entry{}}
	if o.Own != nil {
		p.open[o.Config.Project] = &entry{l: o.Own}
	}
	return p
}

// Ledger opens the project name (creating it when create is set, or
// when it is a code repository CodeRoot found) and holds it until
// release is called; release may be called more than once. It is
// gateway.Options.OpenProject.
func (p *Pool) Ledger(_ context.Context, name string, create bool) (l *ledger.Ledger, release func(), err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.open[name]
	if !ok {
		if e, err = p.openLocked(name, create); err != nil {
			return nil, nil, err
		}
	}
	e.users++
	var once sync.Once
	return e.l, func() {
		once.Do(func() {
			p.mu.Lock()
			e.users--
			e.lastUsed = p.o.Now()
			p.mu.Unlock()
		})
	}, nil
}

func (p *Pool) openLocked(name string, create bool) (*entry, error) {
	cfg, code := p.code[name]
	var err error
	if !code {
		if cfg, err = p.o.Config.ForProject(name); err != nil {
			return nil, err
		}
	}
	if !code && !create && !cfg.Exists() {
		names, _ := p.o.Config.Projects()
		if len(names) == 0 {
			return nil, fmt.Errorf("%w %q (there are none yet)", p.o.NoProject, name)
		}
		return nil, fmt.Errorf("%w %q; existing projects: %s", p.o.NoProject, name, strings.Join(names, ", "))
	}
	if p.countLocked() >= p.o.Max && !p.evictLocked() {
		return nil, fmt.Errorf("%d projects are open and in use, the most this server keeps (%s); try again when a call ends", p.o.Max, config.EnvMaxOpenProjects)
	}
	proj, err := project.Open(cfg, project.Options{Events: p.o.Events, Logger: p.o.Logger})
	if err != nil {
		return nil, err
	}
	e := &entry{l: proj.Ledger(), proj: proj, lastUsed: p.o.Now()}
	p.open[name] = e
	return e, nil
}

// Open is the number of projects open besides the server's own.
func (p *Pool) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.countLocked()
}

func (p *Pool) countLocked() int {
	n := 0
	for _, e := range p.open {
		if e.proj != nil {
			n++
		}
	}
	return n
}

// evictLocked closes the least recently used project no call holds, and
// reports whether there was one.
func (p *Pool) evictLocked() bool {
	if p.o.Config.Storage == config.StorageMemory {
		return false
	}
	var victim string
	for name, e := range p.open {
		if e.proj == nil || e.users > 0 {
			continue
		}
		if victim == "" || e.lastUsed.Before(p.open[victim].lastUsed) {
			victim = name
		}
	}
	if victim == "" {
		return false
	}
	p.closeLocked(victim)
	return true
}

func (p *Pool) closeLocked(name string) {
	e := p.open[name]
	delete(p.open, name)
	if err := e.proj.Close(); err != nil {
		p.o.Logger.Error("closing a project failed", "project", name, "err", err)
	}
}

// CloseIdle closes the projects no call holds that were last used more
// than Idle ago.
func (p *Pool) CloseIdle() {
	if p.o.Config.Storage == config.StorageMemory {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	cutoff := p.o.Now().Add(-p.o.Idle)
	for name, e := range p.open {
		if e.proj != nil && e.users == 0 && e.lastUsed.Before(cutoff) {
			p.closeLocked(name)
		}
	}
}

// Sweep closes idle projects, checking four times per Idle (at most once
// a second), until ctx is done.
func (p *Pool) Sweep(ctx context.Context) {
	t := time.NewTicker(max(p.o.Idle/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.CloseIdle()
		}
	}
}

// Close closes every project the pool opened, held or not: the server is
// stopping.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, e := range p.open {
		if e.proj != nil {
			p.closeLocked(name)
		}
	}
}
