package project

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/sharing"
)

// autoPuller pulls from a remote in the background, as
// THOUGHTBOX_AUTO_PULL asks of a server, so that what the other servers
// of a team pushed (auto-push) shows here too. It is auto-push's other
// half: one goroutine, so pulls never overlap; a failure is logged and
// tried again at the next interval; writers are never waited for (a pull
// moves refs by compare-and-swap, exactly as `thoughtbox pull` does).
type autoPuller struct {
	// project pulls and has its ledger forget the sessions a pull moved.
	project  *Project
	remote   string
	interval time.Duration
	opts     remote.TransferOptions
	// target, if set, turns remote into what to pull from at each pull
	// (a code repository's bound URL), or says why not.
	target func(context.Context) (string, error)
	log    *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	cond *sync.Cond
	// pulls counts finished pull attempts, for tests.
	pulls int
	// lastErr is the last failure logged: the same failure again is not
	// logged again at every interval.
	lastErr string
	// reported holds the divergences and quarantined chains already
	// logged (by ref and tips), which every later pull finds again.
	reported map[string]bool
}

// autoPullStart is how long after the start a server first pulls: soon,
// but not in the way of its first calls.
const autoPullStart = time.Second

// startAutoPull starts pulling the project from THOUGHTBOX_AUTO_PULL when
// it is set; the puller is nil otherwise, and must be closed before the
// store.
func startAutoPull(proj *Project, log *slog.Logger) (*autoPuller, error) {
	cfg := proj.cfg
	remote := cfg.Getenv(config.EnvAutoPull)
	if remote == "" {
		return nil, nil
	}
	if cfg.Storage != config.StorageFS {
		log.Warn(config.EnvAutoPull+" is ignored: THOUGHTBOX_STORAGE=memory keeps no repository to pull into", "remote", remote)
		return nil, nil
	}
	o, err := transferOptions(cfg, nil)
	if err != nil {
		return nil, err
	}
	var target func(context.Context) (string, error)
	if r := codeRepo(proj); r != nil {
		// In a code repository the remote must be the one its reasoning
		// is bound to, as for thoughtbox pull; checked at every pull, so
		// that a bind made while the server runs takes effect.
		target = func(ctx context.Context) (string, error) { return boundTarget(ctx, r, remote, "pull") }
	}
	return startPuller(proj, remote, target, cfg.AutoPullInterval, autoPullStart, o, log), nil
}

func newAutoPuller(proj *Project, remote string, interval, first time.Duration, opts remote.TransferOptions, log *slog.Logger) *autoPuller {
	return startPuller(proj, remote, nil, interval, first, opts, log)
}

func startPuller(proj *Project, remote string, target func(context.Context) (string, error), interval, first time.Duration, opts remote.TransferOptions, log *slog.Logger) *autoPuller {
	ctx, cancel := context.WithCancel(context.Background())
	p := &autoPuller{project: proj, remote: remote, target: target, interval: interval, opts: opts, log: log,
		ctx: ctx, cancel: cancel, done: make(chan struct{}), reported: map[string]bool{}}
	p.cond = sync.NewCond(&p.mu)
	go p.run(first)
	return p
}

func (p *autoPuller) run(first time.Duration) {
	defer close(p.done)
	// The next pull is timed from the end of the last one, so that a slow
	// remote never has pulls queue up behind each other.
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		p.pull()
		t.Reset(p.interval)
	}
}

// pull runs one pull and makes the ledger see the sessions it moved.
func (p *autoPuller) pull() {
	// Bounded, so that a remote that stops answering cannot stall the
	// puller for good; shutdown cancels it at once.
	ctx, cancel := context.WithTimeout(p.ctx, max(2*time.Minute, 2*p.interval))
	from, err := p.remote, error(nil)
	if p.target != nil {
		from, err = p.target(ctx)
	}
	var res *sharing.PullResult
	if err == nil {
		res, err = p.project.pull(ctx, from, p.opts)
	}
	cancel()
	p.mu.Lock()
	defer func() {
		p.pulls++
		p.cond.Broadcast()
		p.mu.Unlock()
	}()
	if err != nil {
		if p.ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return // stopping
		}
		if msg := err.Error(); msg != p.lastErr {
			p.lastErr = msg
			p.log.Warn("auto-pull failed; trying again at each interval", "remote", p.remote, "interval", p.interval, "err", err)
		}
		return
	}
	if p.lastErr != "" {
		p.lastErr = ""
		p.log.Info("auto-pull works again", "remote", p.remote)
	}
	p.logKeptAside(res)
}

// logKeptAside warns, once each, of the remote's chains a pull kept aside
// rather than taking in: diverged ones (extended differently here) and
// ones that failed the checks of what a pull brings in. As with
// `thoughtbox pull`, nothing here was changed by them. The caller holds
// p.mu.
func (p *autoPuller) logKeptAside(res *sharing.PullResult) {
	for _, b := range res.Branched {
		p.log.Info("auto-pull found a chain extended differently here and there; this side's thoughts after the last shared one are now a branch of the session, and the chain follows the remote's (a push shares the branch)",
			"remote", p.remote, "session", b.Session, "chain", strings.TrimPrefix(b.Ref, "refs/heads/"), "branch", b.Branch, "fromThought", b.FromThought, "thoughts", b.Thoughts)
	}
	for _, d := range res.Diverged {
		key := "d " + d.Ref + " " + d.Local + " " + d.Remote
		if p.reported[key] {
			continue
		}
		p.reported[key] = true
		p.log.Warn("auto-pull found a chain extended differently here and there (diverged) that cannot be made a branch; nothing here was changed, the remote's chain is kept aside ('thoughtbox show <session>' shows both)",
			"remote", p.remote, "chain", strings.TrimPrefix(d.Ref, "refs/heads/"), "keptAs", d.KeptAs, "session", d.Session, "why", d.Why)
	}
	for _, q := range res.Quarantined {
		key := "q " + q.Ref + " " + q.Tip
		if p.reported[key] {
			continue
		}
		p.reported[key] = true
		what := "the knowledge zone"
		switch {
		case q.Session != "":
			what = "session " + q.Session
		case q.Notebook != "":
			what = "notebook " + q.Notebook
		}
		// The text handler quotes values, so the problems (text from the
		// remote) cannot forge log lines.
		p.log.Warn("auto-pull kept aside what failed the checks; it was not taken in",
			"remote", p.remote, "what", what, "chain", strings.TrimPrefix(q.Ref, "refs/heads/"), "keptAs", q.KeptAs, "repository", q.Repository, "problems", strings.Join(q.Problems, "; "))
	}
}

// waitPulls waits until n pulls have finished, for tests.
func (p *autoPuller) waitPulls(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.pulls < n {
		p.cond.Wait()
	}
}

// finished is the number of pulls finished so far.
func (p *autoPuller) finished() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pulls
}

// close stops the puller, cutting short a pull under way (what it
// fetched is kept; refs it had not moved yet are moved by the next one);
// a nil puller does nothing.
func (p *autoPuller) close() {
	if p == nil {
		return
	}
	p.cancel()
	<-p.done
}
