package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/project"
	"github.com/thoughtbox/thoughtbox/sharing"
	"github.com/thoughtbox/thoughtbox/why"
)

// hookPrePushCmd is what the pre-push hook runs: it sends the reasoning
// linked to the pushed commits to the bound remote, on its own
// connection, before git sends the code. It never fails the push (but for
// git itself carrying reasoning refs where they may not go, see
// project.CheckGitPushedRefs) and never delays it beyond its budget: the
// sessions are queued before they are sent and leave the queue once the
// remote has them, so whatever is cut off by the budget or fails goes
// with the next push or 'thoughtbox push'.
type hookPrePushCmd struct {
	Remote string `arg:"" help:"The remote git pushes to: its name, or the URL given to git push."`
	URL    string `arg:"" name:"url" help:"The URL git pushes to."`
}

func (c *hookPrePushCmd) Run(a *app) error {
	start := time.Now()
	budget, err := pushHookBudget(a.env.LookupEnv)
	if err != nil {
		fmt.Fprintf(a.env.Stderr, "thoughtbox: warning: %v; using %s\n", err, budget)
	}
	ctx, cancel := context.WithTimeout(a.ctx, budget)
	defer cancel()
	r, err := coderepo.Find(ctx, workingDir(a.env))
	if errors.Is(err, coderepo.ErrNotARepository) {
		return nil
	}
	if err != nil {
		return err
	}
	if on, err := r.Enabled(ctx); err != nil || !on {
		return err
	}
	updates, err := coderepo.ParsePrePush(a.env.Stdin)
	if err != nil {
		return err
	}
	target, bound, err := project.HookTarget(ctx, r, c.Remote, c.URL)
	if err != nil {
		return err
	}
	private, err := r.PrivateSessions()
	if err != nil {
		return err
	}
	if err := project.CheckGitPushedRefs(updates, bound != "" && target == bound, private); err != nil {
		return err
	}
	switch {
	case bound == "":
		fmt.Fprintln(a.env.Stderr, "thoughtbox: no reasoning remote is bound, so this push carries no reasoning ('thoughtbox remote bind <remote>' shares it with one remote)")
		return nil
	case target != bound:
		fmt.Fprintf(a.env.Stderr, "thoughtbox: %s is not the bound reasoning remote (%s), so this push carries no reasoning\n", target, bound)
		return nil
	}
	linked, err := r.PushedSessions(ctx, c.Remote, updates)
	if err != nil && ctx.Err() != nil {
		// A first push of a long history: its commits alone take longer
		// than the budget to read.
		fmt.Fprintf(a.env.Stderr, "thoughtbox: the pushed commits were not read within the hook's budget, so this push carries no reasoning; 'thoughtbox push' sends it to %s\n", bound)
		return nil
	}
	if err != nil {
		return err
	}
	queued, err := r.PushQueue()
	if err != nil {
		return err
	}
	var ids []string
	for _, id := range append(queued, linked...) {
		if !slices.Contains(ids, id) && !slices.Contains(private, id) && validTrailerID(id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	// Queued first: a send cut off by the budget, or by a kill, leaves
	// them for the next push.
	if err := r.Queue(ids); err != nil {
		return err
	}
	return a.sendReasoning(ctx, r, ids, bound, budget-time.Since(start))
}

// validTrailerID keeps a forged trailer's value away from the store, as
// why does: session ids are letters, digits and dashes.
func validTrailerID(id string) bool {
	return id != "" && len(id) <= 64 && strings.Trim(strings.ToLower(id), "abcdefghijklmnopqrstuvwxyz0123456789-") == ""
}

// pushResult is what the sending goroutine hands back of a push.
type pushResult struct {
	rejected []string // sessions the remote refused, each once
	updated  []sharing.RefChange
	err      error
}

// sendReasoning opens the repository's ledger and pushes ids to the bound
// remote, giving up (and leaving them queued) when left runs out.
func (a *app) sendReasoning(ctx context.Context, r *coderepo.Repo, ids []string, bound string, left time.Duration) error {
	n := plural(len(ids), "session", "sessions")
	queued := func() error {
		fmt.Fprintf(a.env.Stderr, "thoughtbox: the reasoning of %s was not sent to %s within the hook's budget; queued: the next git push or 'thoughtbox push' sends it\n", n, bound)
		return nil
	}
	if left <= 0 {
		return queued()
	}
	done := make(chan pushResult, 1)
	go func() {
		cfg, err := config.Resolve(config.Flags{}, a.env.LookupEnv)
		if err != nil {
			done <- pushResult{err: err}
			return
		}
		cfg = cfg.InCode(config.CodeRepo{Worktree: r.Worktree, GitDir: r.GitDir, CommonDir: r.CommonDir})
		proj, err := project.Open(cfg, project.Options{Logger: newLogger(a.env.Stderr)})
		if err != nil {
			done <- pushResult{err: err}
			return
		}
		// The links the post-commit hook left pending go with their
		// sessions: a drain still running in the background is waited for.
		ask := &why.Asker{Repo: r, Sessions: proj.Ledger(), Links: proj}
		if _, err := ask.Drain(ctx, true); err != nil {
			fmt.Fprintf(a.env.Stderr, "thoughtbox: warning: recording pending links: %v\n", err)
		}
		res, err := proj.Push(ctx, "", project.PushOptions{Sessions: ids, SessionsOnly: true})
		if cerr := proj.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			done <- pushResult{err: err}
			return
		}
		var rejected []string
		for _, rj := range res.Rejected {
			if !slices.Contains(rejected, rj.Session) {
				rejected = append(rejected, rj.Session)
			}
		}
		done <- pushResult{rejected: rejected, updated: res.Updated}
	}()
	var got pushResult
	select {
	case got = <-done:
	case <-time.After(left):
		// The send goes on no longer than this process: the push must
		// not wait. What it had not finished is still queued.
		return queued()
	}
	if got.err != nil {
		fmt.Fprintf(a.env.Stderr, "thoughtbox: warning: could not send the reasoning of %s to %s: %v; queued: the next git push or 'thoughtbox push' sends it\n", n, bound, got.err)
		return nil
	}
	if which := got.rejected; len(which) > 0 {
		fmt.Fprintf(a.env.Stderr, "thoughtbox: %s rejected by %s (%s): kept queued; 'thoughtbox pull' then 'thoughtbox push' shares them\n",
			plural(len(which), "session was", "sessions were"), bound, strings.Join(which, ", "))
	}
	if up := got.updated; len(up) > 0 {
		fmt.Fprintf(a.env.Stderr, "thoughtbox: sent the reasoning of %s (%s) to %s\n",
			plural(countSessions(up), "session", "sessions"), plural(len(up), "ref", "refs"), bound)
	}
	return nil
}

// pushHookBudget reads THOUGHTBOX_PUSH_HOOK_BUDGET; a bad value is
// reported and the default used (a hook never fails a push over it).
func pushHookBudget(lookup func(string) (string, bool)) (time.Duration, error) {
	v, ok := lookup(config.EnvPushHookBudget)
	if !ok || strings.TrimSpace(v) == "" {
		return config.DefaultPushHookBudget, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d <= 0 {
		return config.DefaultPushHookBudget, fmt.Errorf("%s=%q: expected a positive Go duration such as 2s", config.EnvPushHookBudget, v)
	}
	return d, nil
}

// fetchCmd brings reasoning on purpose: a clone of the code starts with
// none, and why and blame fetch only the sessions they need.
type fetchCmd struct {
	Session []string `arg:"" optional:"" name:"session" help:"Sessions to fetch, by whole id (the remote's; they are not here yet)."`
	All     bool     `name:"all" help:"Every session the remote has, with the knowledge zone and the notebooks."`
	Since   string   `name:"since" placeholder:"DATE" help:"Only sessions whose main chain's last commit is at or after DATE (2026-11-01, an RFC 3339 time, or an age: 36h, 7d, 2w), with the knowledge zone and the notebooks."`
	Quiet   bool     `short:"q" help:"Print nothing but warnings and errors."`
}

func (c *fetchCmd) Validate() error {
	given := 0
	for _, b := range []bool{len(c.Session) > 0, c.All, c.Since != ""} {
		if b {
			given++
		}
	}
	if given != 1 {
		return errors.New("give exactly one of: session ids, --all, --since DATE")
	}
	if c.Since != "" {
		if _, err := parseSince(c.Since, time.Now()); err != nil {
			return err
		}
	}
	return nil
}

func (c *fetchCmd) Run(a *app) error {
	if err := a.needDisk(); err != nil {
		return err
	}
	var (
		res *sharing.PullResult
		err error
	)
	switch {
	case len(c.Session) > 0:
		for _, id := range c.Session {
			if !validTrailerID(id) {
				return &failure{msg: fmt.Sprintf("session %q: expected a whole session id (letters, digits and dashes)", id)}
			}
		}
		res, err = a.proj.FetchSessions(a.ctx, c.Session)
	default:
		since, _ := parseSince(c.Since, time.Now())
		if c.All {
			since = time.Time{}
		}
		res, err = a.proj.Fetch(a.ctx, since, a.progress(c.Quiet))
	}
	if res != nil {
		a.printPull(res, c.Quiet)
	}
	if errors.Is(err, project.ErrNoFetchSource) {
		return &failure{msg: err.Error()}
	}
	return err
}
