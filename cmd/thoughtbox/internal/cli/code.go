package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/thoughtbox/thoughtbox/agentconfig"
	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// A project's ledger can live in a code repository (see coderepo): every
// command run inside an enabled worktree, or given --repo, uses that
// repository's own object store instead of the data directory.

// codeChoice is what decides which ledger a command uses.
type codeChoice struct {
	// repo is --repo ("" when not given).
	repo string
	// standalone says the command asked for a project of the data
	// directory by name (--project or THOUGHTBOX_PROJECT): that wins over
	// the worktree the command runs in.
	standalone bool
	// dir is the directory the command runs in.
	dir string
}

// inCode returns cfg moved into the code repository the choice names, or
// cfg itself when the command uses a standalone project. A --repo that is
// no worktree, or one not enabled, is an error; a working directory that
// is no worktree, or one not enabled, means standalone.
func (c codeChoice) inCode(ctx context.Context, cfg *config.Config) (*config.Config, *coderepo.Repo, error) {
	if cfg.Storage != config.StorageFS {
		return cfg, nil, nil
	}
	r, err := c.find(ctx)
	if r == nil || err != nil {
		return cfg, nil, err
	}
	on, err := r.Enabled(ctx)
	if err != nil {
		return cfg, nil, err
	}
	if !on {
		if c.repo != "" {
			return cfg, nil, &failure{msg: fmt.Sprintf("%s does not keep a Thoughtbox ledger", r.Worktree),
				hints: []string{fmt.Sprintf("'thoughtbox enable --repo %s' sets it up", c.repo)}}
		}
		return cfg, nil, nil
	}
	return cfg.InCode(config.CodeRepo{Worktree: r.Worktree, GitDir: r.GitDir, CommonDir: r.CommonDir}), r, nil
}

// find is the worktree the choice names: --repo, or the working directory
// unless a standalone project was named; nil when there is none.
func (c codeChoice) find(ctx context.Context) (*coderepo.Repo, error) {
	if c.repo != "" {
		r, err := coderepo.Open(ctx, c.repo)
		if errors.Is(err, coderepo.ErrNotARepository) {
			return nil, &failure{msg: fmt.Sprintf("--repo %s: not in a Git worktree", c.repo)}
		}
		return r, err
	}
	if c.standalone {
		return nil, nil
	}
	r, err := coderepo.Find(ctx, c.dir)
	if errors.Is(err, coderepo.ErrNotARepository) {
		return nil, nil
	}
	return r, err
}

// worktree is the worktree an enable, disable or status is about: --repo
// or the working directory, which must be in one.
func (c codeChoice) worktree(ctx context.Context) (*coderepo.Repo, error) {
	dir := c.dir
	if c.repo != "" {
		dir = c.repo
	}
	r, err := coderepo.Open(ctx, dir)
	if errors.Is(err, coderepo.ErrNotARepository) {
		return nil, &failure{msg: fmt.Sprintf("%s is not in a Git worktree", dir),
			hints: []string{"run it inside a repository's worktree, or name one with --repo PATH"}}
	}
	return r, err
}

func workingDir(env Env) string {
	if env.Dir != "" {
		return env.Dir
	}
	if d, err := os.Getwd(); err == nil {
		return d
	}
	return "."
}

type enableCmd struct {
	Agent []string `name:"agent" placeholder:"NAME" help:"Also write the MCP server entry for this agent (repeatable): claude-code, cursor, vscode, codex, gemini, claude-desktop; and install the commit hooks."`
	List  bool     `name:"list" help:"List the agents --agent knows and the file each one writes, then exit."`
}

// Validate refuses an unknown agent before anything runs (a usage error).
func (c *enableCmd) Validate() error {
	if c.List && len(c.Agent) > 0 {
		return errors.New("--list and --agent do not go together")
	}
	for _, name := range c.Agent {
		if _, ok := agentconfig.Lookup(name); !ok {
			return fmt.Errorf("--agent %q: unknown agent; known: %s", name, strings.Join(agentconfig.Names(), ", "))
		}
	}
	return nil
}

type enableOutput struct {
	Worktree string                   `json:"worktree"`
	Enabled  bool                     `json:"enabled"`
	Changed  bool                     `json:"changed"`
	Hooks    []coderepo.InstalledHook `json:"hooks,omitempty"`
	Agents   []*agentconfig.Change    `json:"agents,omitempty"`
}

// Run records thoughtbox.enabled in the repository's .git/config; with
// --agent, it also installs the hooks and writes each agent's entry. Every
// agent's file is read and merged before anything is written, so a file
// that cannot be merged leaves everything as it was.
func (c *enableCmd) Run(a *app) error {
	if c.List {
		return c.list(a)
	}
	r, err := a.code.worktree(a.ctx)
	if err != nil {
		return err
	}
	changes, err := planAgents(a, r, c.Agent)
	if err != nil {
		return err
	}
	changed, err := r.Enable(a.ctx)
	if errors.Is(err, coderepo.ErrUnsupported) {
		return &failure{msg: err.Error()}
	}
	if err != nil {
		return err
	}
	out := enableOutput{Worktree: r.Worktree, Enabled: true, Changed: changed, Agents: changes}
	if len(changes) > 0 {
		if out.Hooks, err = r.InstallHooks(a.ctx, hookCommand()); err != nil {
			return err
		}
		for _, ch := range changes {
			if err := ch.Apply(); err != nil {
				return fmt.Errorf("%s: %w", ch.File, err)
			}
		}
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, out)
	}
	if changed {
		fmt.Fprintf(a.env.Stdout, "enabled: %s keeps its reasoning in %s (refs/thoughtbox/v1/, set in .git/config)\n", r.Worktree, r.CommonDir)
	} else {
		fmt.Fprintf(a.env.Stdout, "already enabled: %s\n", r.Worktree)
	}
	if len(changes) == 0 {
		fmt.Fprintln(a.env.Stderr, "hint: 'thoughtbox hooks install' links your commits to the reasoning behind them")
		return nil
	}
	printHooks(a, out.Hooks)
	for _, ch := range changes {
		fmt.Fprintln(a.env.Stdout, ch.Describe())
		if ch.Agent == "codex" {
			fmt.Fprintln(a.env.Stderr, "hint: Codex reads a project's .codex/config.toml only once you trust the project")
		}
	}
	return nil
}

// agentPlaces is where the agents' files go for the worktree r.
func agentPlaces(a *app, worktree string) agentconfig.Places {
	getenv := func(n string) string { v, _ := a.env.LookupEnv(n); return v }
	home := getenv("HOME")
	if runtime.GOOS == "windows" && getenv("USERPROFILE") != "" {
		home = getenv("USERPROFILE")
	}
	return agentconfig.Places{Worktree: worktree, Home: home, GOOS: runtime.GOOS, Getenv: getenv}
}

// planAgents reads and merges every named agent's file (each once),
// writing nothing.
func planAgents(a *app, r *coderepo.Repo, names []string) ([]*agentconfig.Change, error) {
	places := agentPlaces(a, r.Worktree)
	launch := agentconfig.Launch{Command: "thoughtbox", Binary: hookCommand()}
	var out []*agentconfig.Change
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		agent, _ := agentconfig.Lookup(name) // Validate checked the name
		ch, err := agentconfig.Plan(agent, places, launch)
		var fe *agentconfig.FileError
		if errors.As(err, &fe) {
			return nil, &failure{msg: fmt.Sprintf("--agent %s: %v", name, err),
				hints: []string{"fix or move the file, then run this again; no file and no setting was changed"}}
		}
		if err != nil {
			return nil, fmt.Errorf("--agent %s: %w", name, err)
		}
		out = append(out, ch)
	}
	return out, nil
}

type agentListing struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	File  string `json:"file"`
	Key   string `json:"key"`
	Scope string `json:"scope"`
}

// list names the agents and their files: a project file relative to the
// repository, a user file where it is on this machine.
func (c *enableCmd) list(a *app) error {
	var rows []agentListing
	for _, ag := range agentconfig.Agents() {
		row := agentListing{Name: ag.Name, Title: ag.Title, Key: ag.Key + "." + agentconfig.ServerName, Scope: "project"}
		if ag.User {
			row.Scope = "user"
		}
		file, err := ag.File(agentPlaces(a, ""))
		if err != nil {
			file = "(" + err.Error() + ")"
		}
		row.File = file
		rows = append(rows, row)
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, rows)
	}
	tw := tabwriter.NewWriter(a.env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tNAME\tFILE\tKEY")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.Title, r.File, r.Key)
	}
	return tw.Flush()
}

type disableCmd struct{}

// Run removes thoughtbox.enabled; the reasoning stays in the repository.
func (c *disableCmd) Run(a *app) error {
	r, err := a.code.worktree(a.ctx)
	if err != nil {
		return err
	}
	changed, err := r.Disable(a.ctx)
	if err != nil {
		return err
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, map[string]any{"worktree": r.Worktree, "enabled": false, "changed": changed})
	}
	if changed {
		fmt.Fprintf(a.env.Stdout, "disabled: %s; its reasoning stays under refs/thoughtbox/v1/ ('thoughtbox enable' brings it back)\n", r.Worktree)
	} else {
		fmt.Fprintf(a.env.Stdout, "not enabled: %s\n", r.Worktree)
	}
	return nil
}

type statusCmd struct{}

type statusOutput struct {
	Ledger        string `json:"ledger"`
	Repository    string `json:"repository"`
	Worktree      string `json:"worktree,omitempty"`
	Project       string `json:"project,omitempty"`
	ActiveSession string `json:"activeSession,omitempty"`
	// BoundRemote is the URL a code repository's reasoning may be pushed
	// to ("" when none is bound: nothing is pushed).
	BoundRemote string `json:"boundRemote,omitempty"`
	// PushQueue lists the sessions a pre-push hook could not send yet;
	// the next git push or thoughtbox push sends them.
	PushQueue []string `json:"pushQueue,omitempty"`
	// PendingLinkEvents counts the commits and rewrites the hooks saw
	// whose links are not recorded yet (the next why, blame, relink or
	// background drain records them).
	PendingLinkEvents int `json:"pendingLinkEvents,omitempty"`
}

// Run says which ledger the working directory (or --repo) uses.
func (c *statusCmd) Run(a *app) error {
	out := statusOutput{Ledger: "standalone", Repository: a.cfg.RepoPath(), Project: a.cfg.Project}
	if a.cfg.Storage == config.StorageMemory {
		out = statusOutput{Ledger: "memory", Project: a.cfg.Project}
	}
	if cr := a.cfg.Code; cr != nil {
		out = statusOutput{Ledger: "code", Repository: cr.CommonDir, Worktree: cr.Worktree}
		r := &coderepo.Repo{Worktree: cr.Worktree, GitDir: cr.GitDir, CommonDir: cr.CommonDir}
		out.ActiveSession, _ = r.ActiveSession()
		out.BoundRemote, _ = r.Binding(a.ctx)
		out.PushQueue, _ = r.PushQueue()
		out.PendingLinkEvents = r.PendingCount()
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, out)
	}
	switch out.Ledger {
	case "code":
		fmt.Fprintf(a.env.Stdout, "ledger: code repository %s (refs/thoughtbox/v1/ in %s)\n", out.Worktree, out.Repository)
		if out.ActiveSession != "" {
			fmt.Fprintf(a.env.Stdout, "active session: %s\n", out.ActiveSession)
		} else {
			fmt.Fprintln(a.env.Stdout, "active session: none")
		}
		if out.BoundRemote != "" {
			fmt.Fprintf(a.env.Stdout, "reasoning remote: %s (push and pull go there only)\n", out.BoundRemote)
		} else {
			fmt.Fprintln(a.env.Stdout, "reasoning remote: none bound, nothing is pushed ('thoughtbox remote bind <remote-or-url>')")
		}
		if n := len(out.PushQueue); n > 0 {
			fmt.Fprintf(a.env.Stdout, "queued for push: %s the pre-push hook could not send yet (the next git push or 'thoughtbox push' sends them)\n", plural(n, "session", "sessions"))
		}
		if out.PendingLinkEvents > 0 {
			fmt.Fprintf(a.env.Stdout, "links waiting: %s not recorded yet (the next why, blame or relink records them)\n", plural(out.PendingLinkEvents, "event", "events"))
		}
	case "memory":
		fmt.Fprintf(a.env.Stdout, "ledger: in memory (THOUGHTBOX_STORAGE=memory), project %s\n", out.Project)
	default:
		fmt.Fprintf(a.env.Stdout, "ledger: standalone project %s (%s)\n", out.Project, out.Repository)
		if r, err := a.code.find(a.ctx); err == nil && r != nil && a.code.repo == "" && !a.code.standalone {
			fmt.Fprintf(a.env.Stderr, "hint: %s is a Git worktree; 'thoughtbox enable' keeps its reasoning there\n", r.Worktree)
		}
	}
	return nil
}

type useCmd struct {
	Session string `arg:"" help:"Session id or unique prefix."`
}

// Run makes the session the worktree's active one: the next commits made
// there name it.
func (c *useCmd) Run(a *app) error {
	cr := a.cfg.Code
	if cr == nil {
		return &failure{msg: "use needs a ledger kept in a code repository",
			hints: []string{"run it inside an enabled worktree ('thoughtbox enable'), or give --repo PATH"}}
	}
	id, err := a.ledger.Resolve(a.ctx, c.Session)
	if err != nil {
		return err
	}
	r := &coderepo.Repo{Worktree: cr.Worktree, GitDir: cr.GitDir, CommonDir: cr.CommonDir}
	if err := r.SetActiveSession(id); err != nil {
		return err
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, map[string]string{"activeSession": id, "worktree": cr.Worktree})
	}
	fmt.Fprintf(a.env.Stdout, "active session of %s: %s\n", cr.Worktree, id)
	return nil
}

// parseCode reads one --code value: a commit (7 to 40 hex digits, or any
// name git resolves, when no file of that name exists), or
// PATH[:FROM[-TO]] with PATH relative to the working directory. Inside a
// worktree, paths become relative to its root and commits are checked and
// expanded; elsewhere they are taken as given (the ledger still refuses
// absolute paths and bad ranges).
func (c codeChoice) parseCode(ctx context.Context, r *coderepo.Repo, v string) (ledger.CodeRef, error) {
	bad := func(format string, args ...any) (ledger.CodeRef, error) {
		return ledger.CodeRef{}, fmt.Errorf("--code %s: "+format, append([]any{v}, args...)...)
	}
	if v == "" {
		return bad("expected PATH[:FROM[-TO]] or a commit")
	}
	dir := c.dir
	if _, err := os.Stat(filepath.Join(dir, v)); err != nil && isHex(v) {
		if r == nil {
			return ledger.CodeRef{Commit: v}, nil
		}
		id, err := r.ResolveCommit(ctx, v)
		if err != nil {
			return bad("%v", err)
		}
		return ledger.CodeRef{Commit: id}, nil
	}
	p, lines := v, ""
	if i := strings.LastIndexByte(v, ':'); i > 0 && isRange(v[i+1:]) {
		p, lines = v[:i], v[i+1:]
	}
	ref := ledger.CodeRef{Path: filepath.ToSlash(p)}
	if lines != "" {
		from, to, _ := strings.Cut(lines, "-")
		ref.From, _ = strconv.Atoi(from)
		if to != "" {
			ref.To, _ = strconv.Atoi(to)
		}
	}
	if r != nil {
		rel, err := r.RelPath(dir, p)
		if err != nil {
			return bad("%v", err)
		}
		ref.Path = rel
	}
	return ref, nil
}

func isHex(s string) bool {
	return len(s) >= 7 && len(s) <= 40 && strings.Trim(strings.ToLower(s), "0123456789abcdef") == ""
}

// isRange matches FROM or FROM-TO.
func isRange(s string) bool {
	from, to, dash := strings.Cut(s, "-")
	digits := func(x string) bool { return x != "" && strings.Trim(x, "0123456789") == "" }
	return digits(from) && (!dash || digits(to))
}

// codeRefs parses every --code value of a command.
func (a *app) codeRefs(values []string) ([]ledger.CodeRef, error) {
	if len(values) == 0 {
		return nil, nil
	}
	var r *coderepo.Repo
	if cr := a.cfg.Code; cr != nil {
		r = &coderepo.Repo{Worktree: cr.Worktree, GitDir: cr.GitDir, CommonDir: cr.CommonDir}
	} else if found, err := coderepo.Find(a.ctx, a.code.dir); err == nil {
		r = found
	}
	refs := make([]ledger.CodeRef, 0, len(values))
	for _, v := range values {
		ref, err := a.code.parseCode(a.ctx, r, v)
		if err != nil {
			return nil, err
		}
		refs = append(refs, ref)
	}
	return refs, nil
}
