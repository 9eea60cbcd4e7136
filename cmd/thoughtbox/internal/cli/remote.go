package cli

import (
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/project"
	"github.com/thoughtbox/thoughtbox/sharing"
)

func (a *app) needDisk() error {
	if a.cfg.Storage != config.StorageFS {
		return &failure{msg: "remotes need a ledger on disk, and THOUGHTBOX_STORAGE=memory keeps none",
			hints: []string{"unset THOUGHTBOX_STORAGE to use the project's repository"}}
	}
	return nil
}

type remoteCmd struct {
	Add    remoteAddCmd    `cmd:"" help:"Add a Git remote to share the project's ledger through."`
	List   remoteListCmd   `cmd:"" default:"1" help:"List the project's remotes."`
	Remove remoteRemoveCmd `cmd:"" aliases:"rm" help:"Forget a remote (chains kept from it after a divergence stay)."`
	Bind   remoteBindCmd   `cmd:"" help:"In a code repository: record in .git/config the one URL its reasoning may be pushed to and pulled from."`
	Unbind remoteUnbindCmd `cmd:"" help:"In a code repository: forget the bound URL; reasoning is pushed nowhere until you bind again."`
}

type remoteBindCmd struct {
	Remote string `arg:"" name:"remote-or-url" help:"A git remote of the repository (its push URL is bound; a remote with several push URLs is refused: name the URL) or a URL or path."`
}

func (c *remoteBindCmd) Run(a *app) error {
	b, err := a.proj.Bind(a.ctx, c.Remote)
	if err != nil {
		return err
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, b)
	}
	via := ""
	if b.Remote != "" {
		via = fmt.Sprintf(" (remote %s)", b.Remote)
	}
	fmt.Fprintf(a.env.Stdout, "bound: reasoning is pushed to %s%s and nowhere else; recorded in .git/config, so clones and forks are not bound\n", b.URL, via)
	return nil
}

type remoteUnbindCmd struct{}

func (c *remoteUnbindCmd) Run(a *app) error {
	was, err := a.proj.Bound(a.ctx)
	if err != nil {
		return err
	}
	changed, err := a.proj.Unbind(a.ctx)
	if err != nil {
		return err
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, map[string]any{"unbound": was.URL, "changed": changed})
	}
	if changed {
		fmt.Fprintf(a.env.Stdout, "unbound %s: reasoning is pushed nowhere until you bind a remote again\n", was.URL)
	} else {
		fmt.Fprintln(a.env.Stdout, "no reasoning remote was bound")
	}
	return nil
}

type remoteAddCmd struct {
	Name string `arg:"" help:"Name of the remote, e.g. origin."`
	URL  string `arg:"" name:"url" help:"A path to a bare repository, file://, git://, http(s):// or ssh:// URL, or user@host:path."`
}

func (c *remoteAddCmd) Run(a *app) error {
	if err := a.needDisk(); err != nil {
		return err
	}
	r, err := a.proj.AddRemote(c.Name, c.URL)
	if err != nil {
		return err
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, r)
	}
	fmt.Fprintf(a.env.Stdout, "%s\t%s\n", r.Name, r.URL)
	return nil
}

type remoteListCmd struct{}

func (c *remoteListCmd) Run(a *app) error {
	if err := a.needDisk(); err != nil {
		return err
	}
	list, err := a.proj.Remotes()
	if err != nil {
		return err
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, list)
	}
	if len(list) == 0 {
		fmt.Fprintf(a.env.Stderr, "project %s has no remotes; add one with 'thoughtbox remote add origin <url>'\n", a.cfg.Project)
	}
	for _, r := range list {
		fmt.Fprintf(a.env.Stdout, "%s\t%s\n", r.Name, r.URL)
	}
	return nil
}

type remoteRemoveCmd struct {
	Name string `arg:"" help:"Name of the remote."`
}

func (c *remoteRemoveCmd) Run(a *app) error {
	if err := a.needDisk(); err != nil {
		return err
	}
	return a.proj.RemoveRemote(c.Name)
}

type pushCmd struct {
	Remote  string   `arg:"" optional:"" help:"Remote name, URL or path (default: the only remote, or origin)."`
	Session []string `name:"session" placeholder:"ID" help:"Push only these sessions (repeatable; the knowledge zone goes too)."`
	Force   []string `name:"force" placeholder:"ID" help:"Replace the remote's chain of this session with ours even though they diverged (repeatable). The remote's thoughts stay in any clone that pulled them."`
	Quiet   bool     `short:"q" help:"Print nothing but warnings and errors (no list of refs, no progress)."`
}

func (c *pushCmd) Run(a *app) error {
	if err := a.needDisk(); err != nil {
		return err
	}
	var err error
	for _, list := range []*[]string{&c.Session, &c.Force} {
		for i, id := range *list {
			if (*list)[i], err = a.resolve(id); err != nil {
				return err
			}
		}
	}
	o := project.PushOptions{Force: c.Force, Progress: a.progress(c.Quiet)}
	if len(c.Session) > 0 {
		o.Sessions = c.Session
	}
	res, err := a.proj.Push(a.ctx, c.Remote, o)
	if err != nil {
		return err
	}
	if n := len(res.Withheld); n > 0 && a.format != FormatJSON {
		fmt.Fprintf(a.env.Stderr, "thoughtbox: %s marked private not pushed\n", plural(n, "session", "sessions"))
	}
	if a.format == FormatJSON {
		if err := writeJSON(a.env.Stdout, res); err != nil {
			return err
		}
	} else if !c.Quiet {
		where := remoteLabel(res.Remote, res.URL)
		switch {
		case len(res.Updated) == 0 && len(res.Rejected) == 0:
			fmt.Fprintf(a.env.Stdout, "%s is up to date (%s)\n", where, plural(res.UpToDate, "ref", "refs"))
		case len(res.Updated) > 0:
			fmt.Fprintf(a.env.Stdout, "pushed %s of %s%s to %s (%d objects, %d bytes)\n",
				plural(len(res.Updated), "ref", "refs"), plural(countSessions(res.Updated), "session", "sessions"), notebooksNote(res.Updated, ""), where, res.Objects, res.Bytes)
			for _, u := range res.Updated {
				fmt.Fprintf(a.env.Stdout, "  %s  %s\n", changeRange(u.Old, u.New), strings.TrimPrefix(u.Ref, "refs/heads/"))
			}
		}
	}
	if len(res.Rejected) == 0 {
		return nil
	}
	f := &failure{msg: fmt.Sprintf("%s rejected by %s", plural(len(res.Rejected), "ref was", "refs were"), remoteLabel(res.Remote, res.URL))}
	reasons := map[sharing.RejectReason]bool{}
	for _, r := range res.Rejected {
		why := string(r.Reason)
		if r.Reason == sharing.RejectAhead || r.Reason == sharing.RejectBehind {
			why = "remote is ahead"
		}
		f.lines = append(f.lines, fmt.Sprintf("%s (%s): %s", strings.TrimPrefix(r.Ref, "refs/heads/"), why, r.Message))
		reasons[r.Reason] = true
	}
	remote := res.Remote
	if remote == "" {
		remote = c.Remote
	}
	if reasons[sharing.RejectBehind] || reasons[sharing.RejectAhead] {
		f.hints = append(f.hints, fmt.Sprintf("run 'thoughtbox pull %s', then push again", remote))
	}
	if reasons[sharing.RejectRefused] {
		f.hints = append(f.hints, fmt.Sprintf("the remote turned the update down (it may have moved since we looked, or forbid rewriting refs): run 'thoughtbox pull %s' and push again", remote))
	}
	if reasons[sharing.RejectDiverged] {
		f.hints = append(f.hints,
			fmt.Sprintf("a diverged session has thoughts here and on the remote that the other lacks: 'thoughtbox pull %s' records yours as a branch of the session, forked at the last shared thought, and a plain push then shares it", remote),
			fmt.Sprintf("'thoughtbox push %s --force <id>' instead replaces the remote's chain with yours", remote))
	}
	return f
}

// progress is where a transfer's progress lines go: standard error when it
// is a terminal (a person waits there; a transfer that takes more than a
// second says how far it got), nowhere for a script or with --quiet, as
// git does.
func (a *app) progress(quiet bool) io.Writer {
	if quiet || !isTerminal(unescaped(a.env.Stderr)) {
		return nil
	}
	return a.env.Stderr
}

func remoteLabel(name, url string) string {
	if name == "" {
		return url
	}
	return name + " (" + url + ")"
}

// changeRange shows a ref's move as git push does: old..new, with "new"
// for a ref the push created.
func changeRange(old, new string) string {
	abbrev := func(h string) string { return h[:min(7, len(h))] }
	if old == "" {
		return "new " + abbrev(new)
	}
	return abbrev(old) + ".." + abbrev(new)
}

func countSessions(changes []sharing.RefChange) int {
	seen := map[string]bool{}
	for _, c := range changes {
		seen[c.Session] = true
	}
	delete(seen, "")
	return len(seen)
}

// notebooksNote is ", N notebooks"+suffix for the notebook refs among
// changes, "" if there are none (a transfer of sessions reads as before).
func notebooksNote(changes []sharing.RefChange, suffix string) string {
	n := 0
	for _, c := range changes {
		if strings.HasPrefix(c.Ref, "refs/heads/notebooks/") {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return ", " + plural(n, "notebook", "notebooks") + suffix
}

type pullCmd struct {
	Remote string `arg:"" optional:"" help:"Remote name, URL or path (default: the only remote, or origin)."`
	Quiet  bool   `short:"q" help:"Print nothing but warnings and errors (no list of refs, no progress)."`
}

func (c *pullCmd) Run(a *app) error {
	if err := a.needDisk(); err != nil {
		return err
	}
	res, err := a.proj.Pull(a.ctx, c.Remote, a.progress(c.Quiet))
	if res != nil {
		// Printed even when the ledger failed to reread what was pulled:
		// the pull itself is done.
		a.printPull(res, c.Quiet)
	}
	return err
}

// printPull reports a pull; quiet keeps only the warnings.
func (a *app) printPull(res *sharing.PullResult, quiet bool) {
	if a.format == FormatJSON {
		writeJSON(a.env.Stdout, res)
	} else if !quiet {
		where := remoteLabel(res.Remote, res.URL)
		if len(res.Created)+len(res.Updated)+len(res.Diverged)+len(res.Branched)+len(res.Quarantined) == 0 {
			fmt.Fprintf(a.env.Stdout, "already up to date with %s\n", where)
		} else {
			fmt.Fprintf(a.env.Stdout, "pulled from %s: %s new%s, %s updated (%d objects, %d bytes)\n", where,
				plural(countSessions(res.Created), "session", "sessions"), notebooksNote(res.Created, " new"), plural(len(res.Updated), "ref", "refs"), max(res.Objects, 0), res.Bytes)
		}
		for _, ch := range res.Created {
			fmt.Fprintf(a.env.Stdout, "  new  %s\n", strings.TrimPrefix(ch.Ref, "refs/heads/"))
		}
		for _, ch := range res.Updated {
			fmt.Fprintf(a.env.Stdout, "  %s..%s  %s\n", ch.Old[:7], ch.New[:7], strings.TrimPrefix(ch.Ref, "refs/heads/"))
		}
	}
	a.warnQuarantined(res)
	if len(res.Deleted) > 0 {
		fmt.Fprintf(a.env.Stderr, "thoughtbox: %s deleted here %s left alone (the remote still has %s; 'thoughtbox restore <id>' brings one back): %s\n",
			plural(len(res.Deleted), "session", "sessions"), map[bool]string{true: "was", false: "were"}[len(res.Deleted) == 1],
			map[bool]string{true: "it", false: "them"}[len(res.Deleted) == 1], strings.Join(res.Deleted, ", "))
	}
	a.printBranched(res)
	if len(res.Diverged) == 0 {
		return
	}
	// The data is safe on both sides, so this is a warning, not a failure.
	w := a.env.Stderr
	fmt.Fprintf(w, "thoughtbox: warning: %s diverged and could not be made a branch: extended differently here and on %s.\n",
		plural(len(res.Diverged), "ref", "refs"), remoteLabel(res.Remote, res.URL))
	fmt.Fprintln(w, "Nothing here was changed; the remote's chains are kept beside yours:")
	for _, d := range res.Diverged {
		fmt.Fprintf(w, "  %s  kept as %s\n", strings.TrimPrefix(d.Ref, "refs/heads/"), d.KeptAs)
		if d.Why != "" {
			fmt.Fprintf(w, "    why: %s\n", d.Why)
		}
	}
	fmt.Fprintln(w, "hint: 'thoughtbox diverged show <id>' lists the remote's thoughts you lack;")
	fmt.Fprintln(w, "hint: 'thoughtbox diverged adopt <id>' records them here as a new branch and forgets the kept copy;")
	fmt.Fprintln(w, "hint: 'thoughtbox diverged drop <id>' forgets the kept copy (the remote keeps it; the next pull brings it back).")
}

// printBranched says which of this ledger's chains a pull made branches:
// nothing was lost, and a push shares them.
func (a *app) printBranched(res *sharing.PullResult) {
	if len(res.Branched) == 0 || a.format == FormatJSON {
		return
	}
	w := a.env.Stderr
	fmt.Fprintf(w, "thoughtbox: %s extended differently here and on %s became %s:\n",
		plural(len(res.Branched), "chain", "chains"), remoteLabel(res.Remote, res.URL), map[bool]string{true: "a branch", false: "branches"}[len(res.Branched) == 1])
	for _, b := range res.Branched {
		fmt.Fprintf(w, "  session %s: your %s after thought %d are now branch %s; %s follows %s\n", b.Session,
			plural(b.Thoughts, "thought", "thoughts"), b.FromThought, b.Branch, chainName(b.Ref), remoteLabel(res.Remote, res.URL))
	}
	fmt.Fprintln(w, "hint: 'thoughtbox push' shares the new branches; nothing needs forcing.")
}

// warnQuarantined tells which incoming chains failed the pull's checks:
// they are kept aside, out of the live ledger, so the pull still succeeds.
func (a *app) warnQuarantined(res *sharing.PullResult) {
	if len(res.Quarantined) == 0 {
		return
	}
	w := a.env.Stderr
	fmt.Fprintf(w, "thoughtbox: warning: %s from %s failed the checks; kept aside, not taken in:\n",
		plural(len(res.Quarantined), "ref", "refs"), remoteLabel(res.Remote, res.URL))
	repo := ""
	for _, q := range res.Quarantined {
		what := "the knowledge zone"
		switch {
		case q.Session != "":
			what = "session " + q.Session
		case q.Notebook != "":
			what = "notebook " + q.Notebook
		}
		fmt.Fprintf(w, "  %s (%s) kept as %s:\n", what, strings.TrimPrefix(q.Ref, "refs/heads/"), q.KeptAs)
		repo = q.Repository
		for _, p := range q.Problems {
			fmt.Fprintf(w, "    %s\n", strings.Map(func(r rune) rune {
				if r < 0x20 || r == 0x7f {
					return '?'
				}
				return r
			}, p))
		}
	}
	if repo != "" {
		// Kept outside the ledger, so that git fsck of the ledger never
		// meets them.
		fmt.Fprintf(w, "They are kept in the quarantine repository %s, outside the ledger.\n", repo)
		fmt.Fprintf(w, "hint: 'git --git-dir %s log <kept ref>' shows what came in; fix it on the remote and pull again.\n", repo)
		return
	}
	fmt.Fprintln(w, "hint: 'git log <kept ref>' in the repository shows what came in; fix it on the remote and pull again.")
}

type cloneCmd struct {
	URL   string `arg:"" name:"url" help:"The remote to start from: a path, file://, git://, http(s):// or ssh:// URL."`
	Quiet bool   `short:"q" help:"Print nothing but warnings and errors (no list of refs, no progress)."`
}

func (c *cloneCmd) Run(a *app) error {
	if err := a.needDisk(); err != nil {
		return err
	}
	proj, cfg := a.proj, a.cfg
	if !a.projectFlagged {
		name := projectFromURL(c.URL)
		if err := config.ValidateProject(name); err != nil {
			return &failure{msg: fmt.Sprintf("cannot name a project after %q: %v", c.URL, err),
				hints: []string{"choose one with --project NAME"}}
		}
		var err error
		if cfg, err = a.cfg.ForProject(name); err != nil {
			return err
		}
		if proj, err = project.Open(cfg, project.Options{Events: a.baseEvents, Logger: a.log}); err != nil {
			return err
		}
		defer proj.Close()
	}
	existing, err := proj.Ledger().List(a.ctx)
	if err != nil {
		return err
	}
	if len(existing) > 0 {
		return &failure{msg: fmt.Sprintf("project %s already has %s", cfg.Project, plural(len(existing), "session", "sessions")),
			hints: []string{fmt.Sprintf("to bring the remote's sessions into it: 'thoughtbox --project %s remote add origin %s' and 'thoughtbox --project %s pull'", cfg.Project, c.URL, cfg.Project),
				"or clone into a new project with --project NAME"}}
	}
	remotes, err := proj.Remotes()
	if err != nil {
		return err
	}
	if len(remotes) == 0 {
		if _, err := proj.AddRemote("origin", c.URL); err != nil {
			return err
		}
	}
	res, err := proj.Pull(a.ctx, "origin", a.progress(c.Quiet))
	if err != nil {
		return err
	}
	a.printPull(res, c.Quiet)
	if a.format != FormatJSON && !c.Quiet {
		fmt.Fprintf(a.env.Stdout, "project %s is at %s; its remote origin is %s\n", cfg.Project, cfg.RepoPath(), res.URL)
	}
	return nil
}

// projectFromURL names a project after the last element of a remote URL,
// without .git, as git clone names its directory.
func projectFromURL(u string) string {
	u = strings.TrimRight(strings.TrimSpace(u), "/")
	if i := strings.LastIndexAny(u, ":/"); i >= 0 {
		u = u[i+1:]
	}
	u = strings.TrimSuffix(path.Base(u), ".git")
	return u
}
