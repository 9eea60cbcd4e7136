// Package cli is the thoughtbox command line: it parses arguments with
// kong, resolves the configuration, opens the ledger, runs one command and
// maps the outcome to an exit status.
//
// Every command reads and writes through an Env, never through os.Stdout
// and friends, so that tests run the whole CLI in-process:
//
//	code := cli.Main(ctx, []string{"sessions", "--format", "json"}, env)
//
// Data goes to Env.Stdout; diagnostics go to Env.Stderr as
// "thoughtbox: error: …" followed by "hint: …" lines. Exit status 0 is
// success, 1 a failure (a domain error, a damaged session), 2 a usage error
// (unknown flag, bad argument, invalid setting).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/events"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/project"
)

// Exit statuses.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// DefaultAgentName is the author of CLI-written thoughts when
// THOUGHTBOX_AGENT_NAME is unset.
const DefaultAgentName = "thoughtbox-cli"

// Env is everything a command may touch outside the ledger.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// LookupEnv reads environment variables (os.LookupEnv for the real
	// process).
	LookupEnv func(name string) (string, bool)
	// NewID makes session ids; nil means random UUIDs. Tests set it to get
	// ids they can name.
	NewID func() string
	// Dir is the working directory, whose Git worktree (when enabled)
	// keeps the ledger; "" means the process's.
	Dir string
}

// OSEnv is the process's own environment.
func OSEnv() Env {
	return Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, LookupEnv: os.LookupEnv}
}

// Format is an output format.
type Format string

// The output formats.
const (
	FormatText Format = "text"
	FormatJSON Format = "json"
	// FormatMarkdown and FormatCipher are export formats: only export
	// takes them (see checkFormat). They share the global flag because
	// kong allows one --format per command line.
	FormatMarkdown Format = "markdown"
	FormatCipher   Format = "cipher"
)

// commandLine is the kong grammar. Global flags may appear anywhere.
type commandLine struct {
	DataDir *string `name:"data-dir" group:"global" placeholder:"DIR" help:"Data directory (env THOUGHTBOX_DATA_DIR; default ~/.thoughtbox)."`
	Project *string `group:"global" placeholder:"NAME" help:"Project: one Git repository per project (env THOUGHTBOX_PROJECT; default _default). Only start, serve and clone create a project that does not exist."`
	Repo    *string `name:"repo" group:"global" placeholder:"PATH" help:"Use the ledger kept in this code repository (see enable); by default a command run inside an enabled worktree uses it."`
	NoColor bool    `name:"no-color" group:"global" help:"No colour, even on a terminal (also NO_COLOR=1)."`
	Format  Format  `enum:"text,json,markdown,cipher" default:"text" group:"global" placeholder:"text|json" help:"Output format: text or json; export also writes markdown or cipher (and json by default)."`

	Sessions sessionsCmd `cmd:"" help:"List the sessions of the project, most recently updated first."`
	Show     showCmd     `cmd:"" help:"Show a session's thoughts, branches and revisions as a tree."`
	Verify   verifyCmd   `cmd:"" help:"Check the integrity of one session, or of all; exit 1 if any is damaged."`
	Start    startCmd    `cmd:"" help:"Start a session and print its id."`
	Add      addCmd      `cmd:"" help:"Record one thought in a session."`
	Edit     editCmd     `cmd:"" help:"Change a session's title, description or tags (one commit; its thoughts are untouched)."`
	Delete   deleteCmd   `cmd:"" help:"Delete a session: it leaves listings and search; its history is kept under refs/thoughtbox/deleted/ until restore."`
	Restore  restoreCmd  `cmd:"" help:"Bring a deleted session back as it was."`
	Serve    serveCmd    `cmd:"" help:"Run the MCP server (Streamable HTTP at /mcp by default, or stdio)."`
	MCP      mcpCmd      `cmd:"" name:"mcp" help:"Run the MCP server on stdio: the command an MCP client launches (no flags needed)."`

	Observatory observatoryCmd `cmd:"" help:"Serve the Observatory (web UI, WebSocket and HTTP API) over the project's ledger, without an MCP server."`
	Export      exportCmd      `cmd:"" help:"Export a session: --format json (SessionExport v1.0, the default), markdown or cipher."`
	Analyze     analyzeCmd     `cmd:"" help:"Analyse a session's structure; --deep for patterns, cognitive load and decision points."`
	Search      searchCmd      `cmd:"" help:"Search sessions by title, tags and thought content, best match first."`

	Knowledge knowledgeCmd `cmd:"" help:"The knowledge zone: reusable patterns and scratchpad notes, kept in Git on refs/heads/knowledge."`
	Notebook  notebookCmd  `cmd:"" help:"Literate JavaScript/TypeScript notebooks, each on refs/heads/notebooks/<id>: create, list, show, run, export, import, cell add|edit|delete."`

	Remote   remoteCmd   `cmd:"" help:"Manage the Git remotes the ledger is shared through (add, list, remove)."`
	Push     pushCmd     `cmd:"" help:"Push every session, its branches, the knowledge zone and the notebooks to a Git remote."`
	Pull     pullCmd     `cmd:"" help:"Fetch a Git remote's sessions, knowledge and notebooks into this project; a session extended on both sides gets this side's thoughts as a branch, so a plain push shares both."`
	Fetch    fetchCmd    `cmd:"" help:"In a code repository: bring sessions from the bound remote (or the one the branch tracks): named ones, --all, or --since DATE."`
	Clone    cloneCmd    `cmd:"" help:"Start a project from a Git remote (named after the URL unless --project is given)."`
	Diverged divergedCmd `cmd:"" help:"Chains a pull kept because a remote extended a session differently: list, show, drop, or adopt as a branch."`

	Enable  enableCmd  `cmd:"" help:"Keep this Git repository's reasoning in its own object store (refs/thoughtbox/v1/; recorded in .git/config)."`
	Disable disableCmd `cmd:"" help:"Stop using this Git repository's ledger; the reasoning stays in it."`
	Status  statusCmd  `cmd:"" help:"Say which ledger the current directory uses, and the worktree's active session."`
	Use     useCmd     `cmd:"" help:"Make a session the worktree's active one: the next commits made here name it."`
	Hooks   hooksCmd   `cmd:"" help:"Git hooks that link commits to the reasoning behind them."`
	Why     whyCmd     `cmd:"" help:"The reasoning linked to a commit or a range A..B: sessions, conclusion, the thoughts about its files, what was tried."`
	Relink  relinkCmd  `cmd:"" help:"Link the commits of a range that have no reasoning (a squash merge, a rebase done elsewhere) to the sessions of the linked commits they replace."`
	Blame   blameCmd   `cmd:"" help:"For each run of lines of a file, the commit that last changed it and the reasoning linked to that commit."`
	Hook    hookCmd    `cmd:"" hidden:"" help:"Run by the installed Git hooks."`

	Projects    projectsCmd      `cmd:"" help:"List the projects of the data directory, with their sessions and size."`
	Info        infoCmd          `cmd:"" help:"Where the ledger lives and how it is set up: data directory, project, repository, config, storage, remotes, what waits in the log."`
	Completion  completionCmd    `cmd:"" help:"Print a shell completion script: bash, zsh or fish."`
	Version     versionCmd       `cmd:"" help:"Print the version, commit, Go version and platform."`
	VersionFlag kong.VersionFlag `name:"version" group:"global" help:"Print the version and exit."`
}

const description = `Thoughtbox is a reasoning ledger for AI agents, kept in Git: every thought is a commit,
every reasoning branch a Git branch.

Session ids may be shortened to any unique prefix.

Environment: THOUGHTBOX_DATA_DIR, THOUGHTBOX_PROJECT, THOUGHTBOX_STORAGE (fs|memory),
THOUGHTBOX_PARTITION (monthly|weekly|daily|none), THOUGHTBOX_AGENT_NAME (author of
thoughts written here; default thoughtbox-cli). For serve: THOUGHTBOX_TRANSPORT,
HOST, PORT, THOUGHTBOX_AUTH_TOKEN, THOUGHTBOX_AGENT_ID, DISABLE_THOUGHT_LOGGING.
For remotes: THOUGHTBOX_GIT_TOKEN, THOUGHTBOX_GIT_USER (http), THOUGHTBOX_SSH_KEY,
THOUGHTBOX_SSH_KEY_PASSPHRASE (ssh), THOUGHTBOX_FILE_TRANSPORT (git|builtin),
THOUGHTBOX_AUTO_PUSH (a remote to push each session to when it closes),
THOUGHTBOX_AUTO_PUSH_INTERVAL (push open sessions too, this often),
THOUGHTBOX_AUTO_PULL and THOUGHTBOX_AUTO_PULL_INTERVAL (serve pulls from a remote; default 30s).
Observatory: THOUGHTBOX_OBSERVATORY_ENABLED (start it with serve), THOUGHTBOX_OBSERVATORY_PORT,
THOUGHTBOX_OBSERVATORY_CORS, THOUGHTBOX_OBSERVATORY_MAX_CONNECTIONS,
THOUGHTBOX_OBSERVATORY_HTTP_API, THOUGHTBOX_OBSERVATORY_ABANDON_AFTER,
THOUGHTBOX_OBSERVATORY_LIVE_WINDOW (a session written to within it is live; default 5m).
Notebooks: THOUGHTBOX_NOTEBOOK_TIMEOUT (a run's time limit; default 10s).`

// app is what a command runs against: the environment, the resolved
// configuration and the open project.
type app struct {
	ctx context.Context
	env Env
	cfg *config.Config
	// proj is the open project: its ledger, knowledge zone, notebooks and
	// remotes.
	proj *project.Project
	// ledger is proj's ledger.
	ledger *ledger.Ledger
	// log is the logger of the library's background work (auto-push,
	// auto-pull, the store's flusher): a text handler on Env.Stderr.
	log *slog.Logger
	// baseEvents is the event sink of the ledgers of other projects a
	// server opens (nil when the stream is off): the JSONL stream, without
	// this project's auto-pusher or Observatory.
	baseEvents ledger.EventSink
	format     Format
	// observatory relays the ledger's events to the Observatory, once
	// one runs.
	observatory *observatoryRelay
	// projectFlagged says --project was given (clone names the project
	// after the URL otherwise).
	projectFlagged bool
	// code decides whether the ledger is a code repository's.
	code codeChoice
	// color says text output may use colour (see wantColor).
	color bool
}

// settingsChecker is a command that checks its settings before the ledger
// is opened (and its files created).
type settingsChecker interface {
	checkSettings(cfg *config.Config) error
}

// exitRequest carries kong's request to exit (after --help) out of the
// parser without ending the process.
type exitRequest struct{ code int }

// Main runs the command line args (without the program name) and returns
// the exit status.
// shortUsage is what a bare `thoughtbox` prints.
const shortUsage = `Usage: thoughtbox <command> [flags]

Thoughtbox keeps an AI agent's reasoning as Git commits.

  thoughtbox mcp                     the MCP server on stdio: what an MCP client launches
  thoughtbox serve                   the MCP server over Streamable HTTP on 127.0.0.1:1731
  thoughtbox sessions                list the sessions of the project
  thoughtbox show <id>               a session as a tree of thoughts and branches
  thoughtbox start <title>           start a session; thoughtbox add <id> <text> records a thought
  thoughtbox export <id>             JSON, Markdown or cipher
  thoughtbox push | pull | clone     share the ledger through any Git remote
  thoughtbox observatory             watch reasoning live in a browser

Run 'thoughtbox --help' for every command and setting, 'thoughtbox <command> --help' for one.
`

func Main(ctx context.Context, args []string, env Env) (code int) {
	if env.Stdin == nil {
		env.Stdin = eofReader{}
	}
	if env.Stdout == nil {
		env.Stdout = io.Discard
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	if env.LookupEnv == nil {
		env.LookupEnv = func(string) (string, bool) { return "", false }
	}
	if len(args) == 0 {
		// Someone trying the program: a short usage, not an error.
		fmt.Fprint(env.Stdout, shortUsage)
		return 0
	}

	var cl commandLine
	parser, err := kong.New(&cl,
		kong.Name("thoughtbox"),
		kong.Description(description),
		kong.Writers(env.Stdout, env.Stderr),
		kong.Exit(func(code int) { panic(exitRequest{code}) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		// A command's own flags are listed first, the global ones after
		// them under their own heading.
		kong.ExplicitGroups([]kong.Group{{Key: "global", Title: "Global flags:"}}),
		kong.Vars{"version": versionLine()},
	)
	if err != nil { // a defect in the grammar above
		fmt.Fprintf(env.Stderr, "thoughtbox: error: %v\n", err)
		return ExitFailure
	}
	if len(args) > 0 && args[0] == "__complete" {
		// The shell's completion hook: never a kong parse of a half-typed
		// command line.
		return runComplete(parser, args[1:], env)
	}
	kctx, err := parse(parser, args)
	var exit exitRequest
	switch {
	case errors.As(err, &exit):
		return exit.code
	case err != nil:
		return reportUsage(env.Stderr, err)
	}
	if kctx.Command() == "version" {
		if err := writeVersion(env.Stdout, cl.Format); err != nil {
			return report(env.Stderr, nil, err)
		}
		return ExitOK
	}
	stopProfiles, err := startProfiles(env.LookupEnv, env.Stderr)
	defer stopProfiles()
	if err != nil {
		return report(env.Stderr, nil, err)
	}
	if err := checkEmptyValues(kctx); err != nil {
		return reportUsageOf(env.Stderr, kctx.Command(), err)
	}
	if err := checkFormat(cl.Format, kctx.Selected().Target.Addr().Interface()); err != nil {
		return reportUsage(env.Stderr, err)
	}
	// From here on, what agents wrote may reach a person's terminal.
	errOut := &controlEscaper{w: env.Stderr}
	env.Stderr = errOut
	defer errOut.flush()
	if escapesStdout(kctx.Command(), cl.Format, env.Stdout) {
		out := &controlEscaper{w: env.Stdout}
		env.Stdout = out
		defer out.flush()
	}

	// A flag given empty is a mistake, never a silent fall back to the
	// environment or the home directory.
	for _, f := range []struct {
		name string
		v    *string
	}{{"--data-dir", cl.DataDir}, {"--project", cl.Project}} {
		if f.v != nil && strings.TrimSpace(*f.v) == "" {
			return reportUsage(env.Stderr, fmt.Errorf("%s must not be empty", f.name))
		}
	}
	if kctx.Command() == "hook drain" {
		// Started in the background by the post-commit and post-rewrite
		// hooks: with nothing pending (another drain, or a why, took it)
		// it ends before any ledger is opened.
		// The drain lock is taken before the ledger is opened, so a drain
		// that finds another at work (or, after it, nothing left) writes
		// nothing at all.
		r, err := coderepo.Find(ctx, workingDir(env))
		if err != nil || !r.HasPending() {
			return ExitOK
		}
		if on, err := r.Enabled(ctx); err != nil || !on {
			// Hooks left behind by a disabled repository: no ledger to
			// record into, and none to create.
			return ExitOK
		}
		unlock, ok, err := r.LockLinks(ctx, false)
		if err != nil || !ok {
			return ExitOK
		}
		defer unlock()
		if !r.HasPending() {
			return ExitOK
		}
	} else if strings.HasPrefix(kctx.Command(), "hook ") {
		// Run inside git commit: no configuration, no ledger, no git
		// command of our own but the one that edits the message.
		if err := kctx.Run(&app{ctx: ctx, env: env}); err != nil {
			if errors.Is(err, project.ErrReasoningRefsRefused) {
				// The one case a hook of ours stops git: git itself
				// would carry reasoning where it may not go.
				fmt.Fprintf(env.Stderr, "thoughtbox: error: %v\n", err)
				return coderepo.PrePushRefused
			}
			fmt.Fprintf(env.Stderr, "thoughtbox: warning: %v\n", err)
		}
		return ExitOK
	}
	if strings.HasPrefix(kctx.Command(), "completion ") {
		// Needs no ledger, and must not create a data directory.
		if err := kctx.Run(&app{ctx: ctx, env: env}); err != nil {
			return report(env.Stderr, nil, err)
		}
		return ExitOK
	}
	choice := codeChoice{repo: deref(cl.Repo), dir: workingDir(env), standalone: cl.Project != nil}
	if v, ok := env.LookupEnv(config.EnvProject); ok && strings.TrimSpace(v) != "" {
		choice.standalone = true
	}
	if cmd := kctx.Command(); cmd == "info" || cmd == "projects" || cmd == "status" || cmd == "enable" || cmd == "disable" || cmd == "hooks install" {
		// They only report (or set up a repository): resolved without
		// writing config.json, run without opening (or creating) a ledger.
		cfg, err := config.Inspect(config.Flags{DataDir: deref(cl.DataDir), Project: deref(cl.Project)}, env.LookupEnv)
		if err == nil && cmd != "enable" && cmd != "disable" && cmd != "hooks install" {
			cfg, _, err = choice.inCode(ctx, cfg)
		}
		if err != nil {
			return report(env.Stderr, cfg, err)
		}
		if err := kctx.Run(&app{ctx: ctx, env: env, cfg: cfg, format: cl.Format, code: choice}); err != nil {
			return report(env.Stderr, cfg, err)
		}
		return ExitOK
	}
	if sc, ok := kctx.Selected().Target.Addr().Interface().(settingsChecker); ok {
		// Servers read many settings; a bad one is reported before the
		// data directory, config.json or the project is created.
		cfg, err := config.Inspect(config.Flags{DataDir: deref(cl.DataDir), Project: deref(cl.Project)}, env.LookupEnv)
		if err == nil {
			err = sc.checkSettings(cfg)
		}
		if err != nil {
			return report(env.Stderr, cfg, err)
		}
	}
	dataDir, projectName := deref(cl.DataDir), deref(cl.Project)
	cfg, err := config.Resolve(config.Flags{DataDir: dataDir, Project: projectName}, env.LookupEnv)
	if err != nil {
		return report(env.Stderr, nil, err)
	}
	if kctx.Command() != "clone <url>" {
		if cfg, _, err = choice.inCode(ctx, cfg); err != nil {
			return report(env.Stderr, cfg, err)
		}
	}
	// The event stream (THOUGHTBOX_EVENTS_ENABLED) is the ledger's, so it
	// covers thoughts written from the command line as well as by agents.
	jsonl, err := cfg.OpenEvents(env.Stderr)
	if err != nil {
		return report(env.Stderr, cfg, err)
	}
	var sink ledger.EventSink
	if jsonl != nil {
		sink = jsonl
		defer jsonl.Close()
	}
	logger := newLogger(env.Stderr)
	if kctx.Command() == "clone <url>" && projectName == "" {
		// clone names its project after the URL and opens that one; the
		// default project is not touched (nor created).
		a := &app{ctx: ctx, env: env, cfg: cfg, format: cl.Format, log: logger, baseEvents: sink}
		if err := kctx.Run(a); err != nil {
			return report(env.Stderr, cfg, err)
		}
		return ExitOK
	}
	if err := checkProjectExists(cfg, kctx.Command()); err != nil {
		return report(env.Stderr, cfg, err)
	}
	if strings.HasPrefix(kctx.Command(), "verify") && cl.Verify.Repair {
		if err := repairLog(env, cfg); err != nil {
			return report(env.Stderr, cfg, err)
		}
	}
	// An Observatory (serve with THOUGHTBOX_OBSERVATORY_ENABLED, or the
	// observatory command) starts after the ledger it reads; the relay
	// hands it the ledger's events from then on.
	relay := &observatoryRelay{}
	proj, err := project.Open(cfg, project.Options{Events: events.Tee(sink, relay), NewID: env.NewID, Logger: logger})
	if err != nil {
		return report(env.Stderr, cfg, err)
	}
	a := &app{ctx: ctx, env: env, cfg: cfg, proj: proj, ledger: proj.Ledger(), log: logger, format: cl.Format, baseEvents: sink, projectFlagged: projectName != "", observatory: relay, code: choice,
		color: wantColor(env.Stdout, cl.Format, cl.NoColor, env.LookupEnv)}
	runErr := kctx.Run(a)
	closeErr := proj.Close()
	if runErr != nil {
		return report(env.Stderr, cfg, runErr)
	}
	if closeErr != nil {
		return report(env.Stderr, cfg, fmt.Errorf("close the ledger: %w", closeErr))
	}
	return ExitOK
}

// newLogger is the logger the library reports its background work to: a
// text handler on stderr, so that each line is one record with its level
// and fields (values from outside, such as a remote's error text, are
// quoted and cannot forge a line).
func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, nil))
}

func (r exitRequest) Error() string { return fmt.Sprintf("exit %d", r.code) }

// parse runs kong, turning its exit request (after --help) into an error.
func parse(p *kong.Kong, args []string) (kctx *kong.Context, err error) {
	defer func() {
		if r := recover(); r != nil {
			exit, ok := r.(exitRequest)
			if !ok {
				panic(r)
			}
			kctx, err = nil, exit
		}
	}()
	return p.Parse(args)
}

// author is who CLI-written thoughts are attributed to.
func (a *app) author() ledger.Author {
	name := a.cfg.Getenv(config.EnvAgentName)
	if name == "" {
		name = DefaultAgentName
	}
	return ledger.Author{Name: name}
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// checkProjectExists refuses to run a command on a project that does not
// exist, unless the command is one that creates it (start, serve, clone):
// a mistyped --project would otherwise create an empty repository and
// report an empty ledger. The default project is created on first use.
func checkProjectExists(cfg *config.Config, command string) error {
	if cfg.Storage != config.StorageFS || cfg.Project == config.DefaultProject || cfg.Code != nil {
		return nil
	}
	switch name, _, _ := strings.Cut(command, " "); name {
	case "start", "serve", "mcp", "clone":
		return nil
	}
	if _, err := os.Stat(cfg.RepoPath()); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	f := &failure{
		msg:   fmt.Sprintf("project %s does not exist in %s", cfg.Project, cfg.DataDir),
		hints: []string{fmt.Sprintf("'thoughtbox start --project %s <title>' creates it", cfg.Project)},
	}
	if names := config.Projects(cfg.DataDir); len(names) > 0 {
		f.hints = append(f.hints, "the projects there: "+strings.Join(names, ", "))
	}
	return f
}
