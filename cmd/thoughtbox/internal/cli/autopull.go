package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// autoPuller pulls from a remote in the background, as
// THOUGHTBOX_AUTO_PULL asks of a server, so that what the other servers
// of a team pushed (auto-push) shows here too. It is auto-push's other
// half: one goroutine, so pulls never overlap; a failure is logged and
// tried again at the next interval; writers are never waited for (a pull
// moves refs by compare-and-swap, exactly as `thoughtbox pull` does).
type autoPuller struct {
	store    *gitstore.Store
	ledger   *ledger.Ledger
	remote   string
	interval time.Duration
	opts     gitstore.TransferOptions
	log      io.Writer

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

// startAutoPull starts pulling the project's ledger from THOUGHTBOX_AUTO_PULL
// when it is set; the puller is nil otherwise, and must be closed before
// the store.
func startAutoPull(cfg *config.Config, store *gitstore.Store, l *ledger.Ledger, log io.Writer) (*autoPuller, error) {
	remote := cfg.Getenv(config.EnvAutoPull)
	if remote == "" {
		return nil, nil
	}
	if cfg.Storage != config.StorageFS {
		fmt.Fprintf(log, "thoughtbox: warning: %s=%s is ignored: THOUGHTBOX_STORAGE=memory keeps no repository to pull into\n", config.EnvAutoPull, remote)
		return nil, nil
	}
	o, err := transferOptions(cfg, nil)
	if err != nil {
		return nil, err
	}
	return newAutoPuller(store, l, remote, cfg.AutoPullInterval, autoPullStart, o, log), nil
}

func newAutoPuller(store *gitstore.Store, l *ledger.Ledger, remote string, interval, first time.Duration, opts gitstore.TransferOptions, log io.Writer) *autoPuller {
	ctx, cancel := context.WithCancel(context.Background())
	p := &autoPuller{store: store, ledger: l, remote: remote, interval: interval, opts: opts, log: log,
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
	res, err := p.store.Pull(ctx, p.remote, p.opts)
	if err == nil {
		// The ledger reloads the sessions it holds and announces what
		// they gained; a failed reload only drops that view (the next
		// read loads it), so it is logged, not retried.
		if rerr := p.ledger.Pulled(ctx, pulledSessions(res)); rerr != nil && p.ctx.Err() == nil {
			fmt.Fprintf(p.log, "thoughtbox: auto-pull from %s: reading pulled sessions again: %v\n", p.remote, rerr)
		}
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
			fmt.Fprintf(p.log, "thoughtbox: auto-pull from %s failed (%v); trying again every %s\n", p.remote, err, p.interval)
		}
		return
	}
	if p.lastErr != "" {
		p.lastErr = ""
		fmt.Fprintf(p.log, "thoughtbox: auto-pull from %s works again\n", p.remote)
	}
	p.logKeptAside(res)
}

// pulledSessions sorts the sessions whose refs a pull created or moved
// into those new here (their main chain was created) and the others.
func pulledSessions(res *gitstore.PullResult) ledger.PulledSessions {
	var p ledger.PulledSessions
	seen := map[string]bool{}
	for _, c := range res.Created {
		if c.Session != "" && !seen[c.Session] && strings.HasSuffix(c.Ref, "/main") {
			seen[c.Session] = true
			p.New = append(p.New, c.Session)
		}
	}
	for _, list := range [][]gitstore.RefChange{res.Created, res.Updated} {
		for _, c := range list {
			if c.Session != "" && !seen[c.Session] {
				seen[c.Session] = true
				p.Moved = append(p.Moved, c.Session)
			}
		}
	}
	return p
}

// logKeptAside warns, once each, of the remote's chains a pull kept aside
// rather than taking in: diverged ones (extended differently here) and
// ones that failed the checks of what a pull brings in. As with
// `thoughtbox pull`, nothing here was changed by them. The caller holds
// p.mu.
func (p *autoPuller) logKeptAside(res *gitstore.PullResult) {
	for _, d := range res.Diverged {
		key := "d " + d.Ref + " " + d.Local + " " + d.Remote
		if p.reported[key] {
			continue
		}
		p.reported[key] = true
		fmt.Fprintf(p.log, "thoughtbox: warning: auto-pull from %s: %s diverged (extended differently here and there); nothing here was changed, the remote's chain is kept as %s ('thoughtbox show %s' shows both)\n",
			p.remote, strings.TrimPrefix(d.Ref, "refs/heads/"), d.KeptAs, d.Session)
	}
	for _, q := range res.Quarantined {
		key := "q " + q.Ref + " " + q.Tip
		if p.reported[key] {
			continue
		}
		p.reported[key] = true
		what := "the knowledge zone"
		if q.Session != "" {
			what = "session " + q.Session
		}
		problems := strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f {
				return '?'
			}
			return r
		}, strings.Join(q.Problems, "; "))
		fmt.Fprintf(p.log, "thoughtbox: warning: auto-pull from %s: %s (%s) failed the checks and was kept aside as %s, not taken in: %s\n",
			p.remote, what, strings.TrimPrefix(q.Ref, "refs/heads/"), q.KeptAs, problems)
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
