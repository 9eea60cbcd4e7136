package project

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// autoPusher pushes a session to a remote when it closes (a thought with
// nextThoughtNeeded false), as THOUGHTBOX_AUTO_PUSH asks; with
// THOUGHTBOX_AUTO_PUSH_INTERVAL it also pushes sessions that are still
// open and gained thoughts, at most once an interval, so that a team's
// other servers see work in progress too. Pushing happens in the
// background and never fails the thought: a failed push is logged, and its
// sessions are pushed again with the next one.
type autoPusher struct {
	store  *gitstore.Store
	remote string
	// pendingFile keeps the sessions whose push failed, so that a later
	// process (the next CLI command) retries them too; "" keeps them in
	// memory only.
	pendingFile string
	opts        remote.TransferOptions
	log         *slog.Logger
	next        ledger.EventSink // the sink this one wraps (may be nil)
	// every is THOUGHTBOX_AUTO_PUSH_INTERVAL: 0 pushes closed sessions
	// only.
	every time.Duration

	mu      sync.Mutex
	pending map[string]bool // sessions closed (or grown) and not yet pushed
	closed  bool            // a session closed since the last push
	grown   bool            // an open session gained a thought since the last push
	// marked counts the events that put each session in pending: a
	// session that gains a thought while a push of it is under way stays
	// pending, since the push may have left that thought behind.
	marked map[string]int
	wake   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	// pushes counts finished push attempts, for tests.
	pushes int
	// lastErr is the last failure logged: with an interval, a remote that
	// is down would otherwise fill the log with one line per interval.
	lastErr string
}

func newAutoPusher(store *gitstore.Store, remote, pendingFile string, every time.Duration, opts remote.TransferOptions, log *slog.Logger, next ledger.EventSink) *autoPusher {
	p := &autoPusher{store: store, remote: remote, pendingFile: pendingFile, every: every, opts: opts, log: log, next: next,
		pending: map[string]bool{}, marked: map[string]int{}, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	p.loadPending()
	go p.run()
	return p
}

// withAutoPush wraps a project's event sink with an auto-pusher when
// THOUGHTBOX_AUTO_PUSH asks for one; pusher is nil otherwise, and must be
// closed before the store.
func withAutoPush(cfg *config.Config, store *gitstore.Store, sink ledger.EventSink, log *slog.Logger) (ledger.EventSink, *autoPusher, error) {
	remote := cfg.Getenv(config.EnvAutoPush)
	if remote == "" {
		return sink, nil, nil
	}
	if cfg.Code != nil {
		log.Warn(config.EnvAutoPush+" is ignored: the ledger is kept in a code repository, whose remotes are the code's", "remote", remote)
		return sink, nil, nil
	}
	if cfg.Storage != config.StorageFS {
		log.Warn(config.EnvAutoPush+" is ignored: THOUGHTBOX_STORAGE=memory keeps no repository to push", "remote", remote)
		return sink, nil, nil
	}
	o, err := transferOptions(cfg, nil)
	if err != nil {
		return nil, nil, err
	}
	pending := filepath.Join(cfg.RepoPath(), "thoughtbox", "autopush-pending")
	p := newAutoPusher(store, remote, pending, cfg.AutoPushInterval, o, log, sink)
	return p, p, nil
}

// Publish implements ledger.EventSink; it must not block.
func (p *autoPusher) Publish(e ledger.Event) {
	if p.next != nil {
		p.next.Publish(e)
	}
	switch e.Type {
	case ledger.EventThoughtAdded, ledger.EventThoughtRevised, ledger.EventBranchCreated:
	default:
		return
	}
	more, ok := e.Data["nextThoughtNeeded"].(bool)
	if !ok || more && p.every == 0 {
		return
	}
	p.mu.Lock()
	p.pending[e.SessionID] = true
	p.marked[e.SessionID]++
	if more {
		// Goes with the next tick, not at once: a busy session is pushed
		// once an interval, not once a thought.
		p.grown = true
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *autoPusher) run() {
	defer close(p.done)
	var tick <-chan time.Time
	if p.every > 0 {
		t := time.NewTicker(p.every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-p.wake:
			p.pushPending()
		case <-tick:
			p.pushPending()
		case <-p.stop:
			p.pushPending() // a session closed (or grown) just before the end still goes
			return
		}
	}
}

func (p *autoPusher) pushPending() {
	p.mu.Lock()
	ids := make([]string, 0, len(p.pending))
	marks := make(map[string]int, len(p.pending))
	for id := range p.pending {
		ids = append(ids, id)
		marks[id] = p.marked[id]
	}
	fresh := p.closed || p.grown
	p.closed, p.grown = false, false
	p.mu.Unlock()
	// Sessions left over from an earlier failure wait for the next
	// session that closes (or, with an interval, grows).
	if len(ids) == 0 || !fresh {
		return
	}
	sort.Strings(ids)
	o := p.opts
	o.Sessions = ids
	o.Progress = nil
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	res, err := remote.Push(ctx, p.store, p.remote, o)
	cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.savePending()
	p.pushes++
	if err != nil {
		if msg := err.Error(); msg != p.lastErr || p.every == 0 {
			p.lastErr = msg
			when := "with the next closed session"
			if p.every > 0 {
				when = "at the next push (failures are logged again when the cause changes)"
			}
			p.log.Warn("auto-push failed; its sessions will be pushed again "+when, "remote", p.remote, "sessions", len(ids), "err", err)
		}
		return
	}
	if p.lastErr != "" && p.every > 0 {
		p.log.Info("auto-push works again", "remote", p.remote)
	}
	p.lastErr = ""
	rejected := map[string]bool{}
	for _, r := range res.Rejected {
		rejected[r.Session] = true
		p.log.Warn("auto-push rejected a ref", "remote", p.remote, "ref", r.Ref, "reason", r.Reason, "message", r.Message)
	}
	for _, id := range ids {
		if !rejected[id] && p.marked[id] == marks[id] {
			delete(p.pending, id)
			delete(p.marked, id)
		}
	}
}

func (p *autoPusher) loadPending() {
	if p.pendingFile == "" {
		return
	}
	data, err := os.ReadFile(p.pendingFile)
	if err != nil {
		return
	}
	for _, id := range strings.Fields(string(data)) {
		p.pending[id] = true
	}
}

// savePending records the sessions still to push; the caller holds p.mu.
func (p *autoPusher) savePending() {
	if p.pendingFile == "" {
		return
	}
	if len(p.pending) == 0 {
		os.Remove(p.pendingFile)
		return
	}
	ids := make([]string, 0, len(p.pending))
	for id := range p.pending {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	tmp := p.pendingFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(ids, "\n")+"\n"), 0o644); err == nil {
		os.Rename(tmp, p.pendingFile)
	}
}

// close pushes what is pending and stops; a nil pusher does nothing.
func (p *autoPusher) close() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
}
