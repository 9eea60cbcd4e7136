package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/project"
	"github.com/thoughtbox/thoughtbox/why"
)

type whyCmd struct {
	Rev string `arg:"" name:"commit" help:"A commit (HEAD, an id, a branch) or a range A..B."`
}

// asker is the why.Asker of the repository the ledger lives in; a
// standalone project has no commits to ask about.
func (a *app) asker() (*why.Asker, error) {
	cr := a.cfg.Code
	if cr == nil {
		return nil, &failure{msg: "this project's ledger is not kept in a code repository, so no commit names its reasoning",
			hints: []string{"run 'thoughtbox enable' inside the repository (and 'thoughtbox hooks install'), or name it with --repo PATH"}}
	}
	r := &coderepo.Repo{Worktree: cr.Worktree, GitDir: cr.GitDir, CommonDir: cr.CommonDir}
	ask := &why.Asker{Repo: r, Sessions: a.ledger, Fetch: a.fetchSessions}
	if a.proj != nil {
		ask.Links = a.proj
	}
	return ask, nil
}

// drainFirst records the links the hooks left pending, so that an answer
// covers every commit made before it. Its warnings are left to the
// answer about those commits.
func drainFirst(a *app, ask *why.Asker) error {
	_, err := ask.Drain(a.ctx, true)
	return err
}

// codeRepoOf is the code repository the served project's ledger lives
// in, for the gateway's why; other projects a connection moves to are
// answered as standalone.
func (a *app) codeRepoOf(project string) *coderepo.Repo {
	cr := a.cfg.Code
	if cr == nil || project != a.cfg.Project {
		return nil
	}
	return &coderepo.Repo{Worktree: cr.Worktree, GitDir: cr.GitDir, CommonDir: cr.CommonDir}
}

// codeLinksOf is the link store of the project codeRepoOf names.
func (a *app) codeLinksOf(project string) why.LinkStore {
	if a.codeRepoOf(project) == nil || a.proj == nil {
		return nil
	}
	return a.proj
}

// Run prints, per commit, the reasoning its trailers and links give it.
func (c *whyCmd) Run(a *app) error {
	ask, err := a.asker()
	if err != nil {
		return err
	}
	if err := drainFirst(a, ask); err != nil {
		return err
	}
	ans, err := ask.Commits(a.ctx, c.Rev)
	if errors.Is(err, coderepo.ErrNoCommit) {
		return &failure{msg: err.Error()}
	}
	if err != nil {
		return err
	}
	a.printFetched(ans.Fetched)
	for _, w := range ans.Warnings {
		fmt.Fprintf(a.env.Stderr, "warning: %s\n", w)
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, ans)
	}
	for i, cm := range ans.Commits {
		if i > 0 {
			fmt.Fprintln(a.env.Stdout)
		}
		fmt.Fprintf(a.env.Stdout, "commit %s  %s\n", cm.ID[:12], cm.Subject)
		writeSessions(a.env.Stdout, cm.Sessions, "  ", "names its files")
	}
	return nil
}

// writeSessions prints the reasoning of linked sessions, or says there is
// none.
func writeSessions(w io.Writer, sessions []why.Session, indent, touching string) {
	if len(sessions) == 0 {
		fmt.Fprintf(w, "%sno reasoning linked (no Thoughtbox-Session trailer or link naming a session of this ledger)\n", indent)
		return
	}
	for _, s := range sessions {
		fmt.Fprintf(w, "%ssession %s  %s\n", indent, s.ID, s.Title)
		if s.LinkedBy != "trailer" {
			fmt.Fprintf(w, "%s  linked by: %s\n", indent, s.LinkedBy)
		}
		if s.Conclusion != nil {
			fmt.Fprintf(w, "%s  conclusion: %s\n", indent, whyThought(*s.Conclusion))
		}
		for _, t := range s.Touching {
			fmt.Fprintf(w, "%s  %s: %s\n", indent, touching, whyThought(t))
		}
		for _, t := range s.Revisions {
			fmt.Fprintf(w, "%s  revised: %s (revises %d)\n", indent, whyThought(t), *t.Revises)
		}
		for _, b := range s.Branches {
			fmt.Fprintf(w, "%s  tried: branch %s (from %d, %s)\n", indent, b.ID, b.FromThought, plural(len(b.Thoughts), "thought", "thoughts"))
			for _, t := range b.Thoughts {
				fmt.Fprintf(w, "%s    %s\n", indent, whyThought(t))
			}
		}
	}
}

func whyThought(t why.Thought) string {
	n := strconv.Itoa(t.Number)
	if t.Branch != "" {
		n = t.Branch + "/" + n
	}
	return n + "  " + clip(oneLine(t.Text), maxShownLine)
}

type blameCmd struct {
	Target string `arg:"" name:"path" help:"PATH or PATH:FROM[-TO], relative to the current folder."`
}

// Run prints, per run of lines, the commit and its linked reasoning.
func (c *blameCmd) Run(a *app) error {
	ask, err := a.asker()
	if err != nil {
		return err
	}
	p, from, to := c.Target, 0, 0
	if i := strings.LastIndexByte(p, ':'); i > 0 && isRange(p[i+1:]) {
		lines := p[i+1:]
		p = p[:i]
		f, t, _ := strings.Cut(lines, "-")
		from, _ = strconv.Atoi(f)
		to = from
		if t != "" {
			to, _ = strconv.Atoi(t)
		}
		if from < 1 || to < from {
			return &failure{msg: fmt.Sprintf("%s: expected PATH:FROM-TO with 1 <= FROM <= TO", c.Target)}
		}
	}
	if err := drainFirst(a, ask); err != nil {
		return err
	}
	rel, err := ask.Repo.RelPath(a.code.dir, p)
	if err != nil {
		return &failure{msg: err.Error()}
	}
	ans, err := ask.Blame(a.ctx, rel, from, to)
	if err != nil {
		return &failure{msg: err.Error()}
	}
	a.printFetched(ans.Fetched)
	for _, w := range ans.Warnings {
		fmt.Fprintf(a.env.Stderr, "warning: %s\n", w)
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, ans)
	}
	for _, l := range ans.Lines {
		if l.Commit == coderepo.NotCommitted {
			fmt.Fprintf(a.env.Stdout, "%s:%d-%d  not committed yet\n", ans.Path, l.From, l.To)
			continue
		}
		fmt.Fprintf(a.env.Stdout, "%s:%d-%d  commit %s  %s\n", ans.Path, l.From, l.To, l.Commit[:12], l.Subject)
		writeSessions(a.env.Stdout, l.Sessions, "  ", "about these lines")
	}
	return nil
}

// fetchSessions is why's lazy fetch for the CLI: the sessions a commit
// names that this clone lacks come from the bound remote (or the one the
// branch tracks), checked as a pull checks them.
func (a *app) fetchSessions(ctx context.Context, ids []string) error {
	_, err := a.proj.FetchSessions(ctx, ids)
	if errors.Is(err, project.ErrNoFetchSource) {
		// A repository with no remote to read from: the answer's warning
		// about each session it lacks says enough.
		return nil
	}
	return err
}

// printFetched says which sessions an answer fetched first.
func (a *app) printFetched(ids []string) {
	if len(ids) > 0 {
		fmt.Fprintf(a.env.Stderr, "fetched %s this clone lacked: %s\n", plural(len(ids), "linked session", "linked sessions"), strings.Join(ids, ", "))
	}
}

// fetchFor is the gateway's lazy fetch: only the served project keeps its
// ledger in the code repository (see codeRepoOf).
func (a *app) fetchFor(ctx context.Context, project string, ids []string) error {
	if a.codeRepoOf(project) == nil {
		return fmt.Errorf("project %q keeps no ledger in a code repository", project)
	}
	return a.fetchSessions(ctx, ids)
}
