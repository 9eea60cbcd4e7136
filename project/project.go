// Package project opens one Thoughtbox project for use: its store (the
// bare Git repository, or memory), the ledger over it, the knowledge zone,
// its notebooks, and the sharing with Git remotes — push, pull, and the
// background auto-push and auto-pull that THOUGHTBOX_AUTO_PUSH and
// THOUGHTBOX_AUTO_PULL ask for.
//
// Every command of the CLI and `serve` (for its own project and for each
// project navigate or bind_root reaches) open projects here, so the wiring
// of store, ledger and sharing is written once. It is also the only road
// from the CLI to package gitstore: what the CLI shows of Git (remotes,
// push and pull results, diverged chains, what is on disk) comes through
// the names this package gives it.
//
//	cfg, err := config.Resolve(config.Flags{}, os.LookupEnv)
//	if err != nil { … }
//	p, err := project.Open(cfg, project.Options{Logger: logger})
//	if err != nil { … }
//	defer p.Close()
//	l := p.Ledger()
//
// Nothing here writes to the process's standard streams: what happens in
// the background (a failed auto-push, a pull that kept a chain aside, a
// flush the store retries) goes to the Options.Logger.
package project

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/notebook"
)

// Options are what a caller adds to the configuration when it opens a
// project.
type Options struct {
	// Events receives the ledger's events (the JSONL stream, an
	// Observatory); nil drops them. With THOUGHTBOX_AUTO_PUSH the project's
	// auto-pusher is put in front of it.
	Events ledger.EventSink
	// NewID makes session ids; nil means random UUIDs.
	NewID func() string
	// Logger receives what happens in the background: auto-push and
	// auto-pull failures and recoveries, chains a pull kept aside, a flush
	// the store retries. nil discards it.
	Logger *slog.Logger
	// Now is the ledger's clock (session and thought timestamps); nil
	// means time.Now. Tests set it to get the same ledger every run.
	Now func() time.Time
	// FlushInterval is how long an acknowledged thought may stay in the
	// write-ahead log before the store publishes it to plain Git; 0 keeps
	// the store's default. A long one leaves the repository as a killed
	// writer would (what the recovery tests need).
	FlushInterval time.Duration
}

// Project is an open project. Its methods are safe for concurrent use;
// Close it when done, which stops the background sharing and flushes the
// store.
type Project struct {
	cfg       *config.Config
	store     *gitstore.Store
	ledger    *ledger.Ledger
	knowledge *ledger.Knowledge
	events    ledger.EventSink
	log       *slog.Logger
	pusher    *autoPusher

	mu     sync.Mutex
	puller *autoPuller
	closed bool
}

// Open opens the project cfg names: its repository at cfg.RepoPath()
// (created if needed) or, with memory storage, an empty in-memory store;
// the ledger over it with the configuration's limits; and, when
// THOUGHTBOX_AUTO_PUSH is set, the auto-pusher. A bad sharing setting
// (THOUGHTBOX_FILE_TRANSPORT) is a *config.SettingError and leaves nothing
// open.
func Open(cfg *config.Config, opts Options) (*Project, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	store, err := openStore(cfg, opts.FlushInterval, log)
	if err != nil {
		return nil, err
	}
	events := opts.Events
	if cfg.Code != nil {
		events = &activeSession{repo: &coderepo.Repo{Worktree: cfg.Code.Worktree, GitDir: cfg.Code.GitDir, CommonDir: cfg.Code.CommonDir}, next: events, log: log}
	}
	sink, pusher, err := withAutoPush(cfg, store, events, log)
	if err != nil {
		store.Close()
		return nil, err
	}
	p := &Project{cfg: cfg, store: store, events: sink, log: log, pusher: pusher}
	p.ledger = newLedger(cfg, store, ledger.Options{NewID: opts.NewID, Events: sink, Now: opts.Now})
	p.knowledge = ledger.NewKnowledge(store, ledger.KnowledgeOptions{})
	return p, nil
}

func openStore(cfg *config.Config, flush time.Duration, log *slog.Logger) (*gitstore.Store, error) {
	opts := gitstore.Options{Partition: cfg.Partition, LockTimeout: cfg.LockTimeout, FlushInterval: flush, Logger: log}
	if cfg.Code != nil {
		opts.Layout = gitstore.InCode
	}
	if cfg.Storage == config.StorageMemory {
		return gitstore.OpenMemory(opts)
	}
	s, err := gitstore.Open(cfg.RepoPath(), opts)
	if err != nil {
		return nil, fmt.Errorf("open ledger repository %s: %w", cfg.RepoPath(), err)
	}
	return s, nil
}

// newLedger is ledger.New with the settings cfg carries (the thought size
// limit) filled into opts where opts leaves them unset.
func newLedger(cfg *config.Config, store ledger.Store, opts ledger.Options) *ledger.Ledger {
	if opts.MaxThoughtBytes == 0 {
		opts.MaxThoughtBytes = cfg.MaxThoughtBytes
	}
	return ledger.New(store, opts)
}

// Config is the configuration the project was opened with.
func (p *Project) Config() *config.Config { return p.cfg }

// Name is the project's name.
func (p *Project) Name() string { return p.cfg.Project }

// Ledger is the project's reasoning ledger.
func (p *Project) Ledger() *ledger.Ledger { return p.ledger }

// Knowledge is the project's knowledge zone (refs/heads/knowledge).
func (p *Project) Knowledge() *ledger.Knowledge { return p.knowledge }

// Events is the sink the ledger publishes to: Options.Events behind the
// auto-pusher, if there is one. Other publishers of the project's events
// (the MCP gateway's own) use it too, so that they reach the same places.
func (p *Project) Events() ledger.EventSink { return p.events }

// Notebooks makes a notebook service over the project's store, with the
// configuration's work folder and run timeout. The caller closes it.
func (p *Project) Notebooks() *notebook.Service { return NewNotebooks(p.cfg, p.store) }

// NewNotebooks makes the notebook service of store for the project cfg
// names: its work folder (<data dir>/notebooks/<project>, none with
// memory storage) and the run timeout.
func NewNotebooks(cfg *config.Config, store ledger.NotebookStore) *notebook.Service {
	return notebook.NewService(store, notebook.Options{WorkDir: cfg.NotebookWorkDir(), Timeout: cfg.NotebookTimeout})
}

// NotebooksFor is NewNotebooks for whichever project of cfg's data
// directory the caller names, in the form the MCP gateway asks for
// (gateway.Options.Notebooks). A name that is not a valid project keeps
// cfg's own settings; the gateway never passes one.
func NotebooksFor(cfg *config.Config) func(project string, store ledger.NotebookStore) *notebook.Service {
	return func(project string, store ledger.NotebookStore) *notebook.Service {
		c := cfg
		if project != cfg.Project {
			if other, err := cfg.ForProject(project); err == nil {
				c = other
			}
		}
		return NewNotebooks(c, store)
	}
}

// CommitAuthor reads who recorded a commit, and when (the Observatory
// shows it).
func (p *Project) CommitAuthor(ctx context.Context, id ledger.CommitID) (ledger.Author, time.Time, error) {
	return p.store.CommitAuthor(ctx, id)
}

// ChangeStamp is a cheap fingerprint of what other processes may have
// written; it changes when they write (see gitstore.Store.ChangeStamp).
func (p *Project) ChangeStamp() (string, error) { return p.store.ChangeStamp() }

// DamagedRefs names the sessions whose ref files hold no object id, which
// listing skips, with the damaged refs of each.
func (p *Project) DamagedRefs() (map[string][]string, error) { return p.store.DamagedRefs() }

// StartAutoPull starts pulling the project from THOUGHTBOX_AUTO_PULL in
// the background, when it is set (a server asks for this; a command does
// not). Close stops it. Calling it again does nothing.
func (p *Project) StartAutoPull() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.puller != nil || p.closed {
		return nil
	}
	puller, err := startAutoPull(p, p.log)
	if err != nil {
		return err
	}
	p.puller = puller
	return nil
}

// Close stops the auto-pull (cutting short a pull under way), lets the
// auto-pusher push what is pending, and closes the store, which flushes.
func (p *Project) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	puller := p.puller
	p.mu.Unlock()
	puller.close()
	p.pusher.close()
	return p.store.Close()
}
