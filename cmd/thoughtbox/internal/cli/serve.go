package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/netutil"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/gateway/rlm"
	"github.com/thoughtbox/thoughtbox/project"
	"github.com/thoughtbox/thoughtbox/project/pool"
)

// Version is reported to MCP clients in initialize.
var Version = "0.1.0"

type serveCmd struct {
	Transport string `placeholder:"stdio|http" help:"MCP transport: http (Streamable HTTP at /mcp, the default) or stdio (env THOUGHTBOX_TRANSPORT). A client that launches the server should run 'thoughtbox mcp'."`
	Host      string `placeholder:"ADDR" help:"Address to listen on with http (env HOST; default 127.0.0.1). Anything but loopback should come with THOUGHTBOX_AUTH_TOKEN."`
	Port      string `placeholder:"N" help:"Port to listen on with http (env PORT; default 1731; 0 picks a free one)."`
	// MaxSessions is text, as Port, so that the flag and the environment
	// are checked by the same rule.
	MaxSessions string   `placeholder:"N" help:"Most MCP sessions open at once over http; past it the one idle longest is closed, and with none idle a new one is refused (env THOUGHTBOX_HTTP_MAX_SESSIONS; default 1000)."`
	ExportDir   []string `name:"export-dir" placeholder:"DIR" sep:"none" help:"A folder, besides DATA_DIR/exports, that MCP session export {destination} may write into (repeatable; env THOUGHTBOX_EXPORT_DIRS, separated as PATH is). Over HTTP a client's roots never add to these."`
	seedFlags   `embed:""`
}

// serveSettings are serve's settings, read and checked before anything is
// written.
type serveSettings struct {
	transport      string
	lim            serverLimits
	tokens         *gateway.Tokens
	host, portText string
	port           int
	exportDirs     []string
	rlm            rlm.Options
}

// settings reads and checks every setting of serve (flags, environment,
// config.json), so that a bad one is reported before the data directory
// or the project is touched (see checkSettings).
func (c *serveCmd) settings(cfg *config.Config) (serveSettings, error) {
	var s serveSettings
	s.transport = firstSet(c.Transport, cfg.Getenv(config.EnvTransport), "http")
	if s.transport != "http" && s.transport != "stdio" {
		name := "--transport"
		if c.Transport == "" {
			name = config.EnvTransport
		}
		return s, &config.SettingError{Name: name, Value: s.transport, Reason: "expected stdio or http"}
	}
	var err error
	if s.lim, err = readLimits(cfg); err != nil {
		return s, err
	}
	if c.MaxSessions != "" {
		n, err := strconv.Atoi(strings.TrimSpace(c.MaxSessions))
		if err != nil || n < 1 {
			return s, &config.SettingError{Name: "--max-sessions", Value: c.MaxSessions, Reason: "expected a whole number of at least 1"}
		}
		s.lim.maxSessions = n
	}
	if s.tokens, err = readTokensFile(cfg); err != nil {
		return s, err
	}
	if s.rlm, err = c.rlmSettings(cfg); err != nil {
		return s, err
	}
	if _, err := cfg.Observatory(); err != nil {
		return s, err
	}
	if s.exportDirs, err = c.readExportDirs(cfg); err != nil {
		return s, err
	}
	s.host = firstSet(c.Host, cfg.Getenv(config.EnvHost), "127.0.0.1")
	s.portText = firstSet(c.Port, cfg.Getenv(config.EnvPort), "1731")
	s.port, err = strconv.Atoi(s.portText)
	if s.transport == "http" && (err != nil || s.port < 0 || s.port > 65535) {
		name := "--port"
		if c.Port == "" {
			name = config.EnvPort
		}
		return s, &config.SettingError{Name: name, Value: s.portText, Reason: "expected a port number from 0 to 65535"}
	}
	return s, nil
}

// readExportDirs reads the folders exports may go to besides DIR/exports:
// --export-dir (repeatable) and THOUGHTBOX_EXPORT_DIRS, each an existing
// folder given by an absolute path.
func (c *serveCmd) readExportDirs(cfg *config.Config) ([]string, error) {
	type given struct{ name, dir string }
	var all []given
	for _, d := range c.ExportDir {
		all = append(all, given{"--export-dir", d})
	}
	for _, d := range filepath.SplitList(cfg.Getenv(config.EnvExportDirs)) {
		if d = strings.TrimSpace(d); d != "" {
			all = append(all, given{config.EnvExportDirs, d})
		}
	}
	var dirs []string
	for _, g := range all {
		if !filepath.IsAbs(g.dir) {
			return nil, &config.SettingError{Name: g.name, Value: g.dir, Reason: "expected an absolute path to a folder"}
		}
		if fi, err := os.Stat(g.dir); err != nil || !fi.IsDir() {
			return nil, &config.SettingError{Name: g.name, Value: g.dir, Reason: "expected an existing folder"}
		}
		dirs = append(dirs, filepath.Clean(g.dir))
	}
	return dirs, nil
}

func (c *serveCmd) checkSettings(cfg *config.Config) error {
	_, err := c.settings(cfg)
	return err
}

func (c *serveCmd) Run(a *app) error {
	softMemoryLimit(a.ctx)
	set, err := c.settings(a.cfg)
	if err != nil {
		return err
	}
	transport, lim, tokens := set.transport, set.lim, set.tokens
	bound, err := c.boundSession(a)
	if err != nil {
		return err
	}
	var thoughtLog = a.env.Stderr
	if truthy(a.cfg.Getenv(config.EnvDisableThoughts)) || a.cfg.File.DisableThoughtLogging {
		thoughtLog = nil
	}
	projects := pool.New(pool.Options{Config: a.cfg, Own: a.ledger, Events: a.baseEvents, Logger: a.log,
		Max: lim.maxProjects, Idle: lim.projectIdle, NoProject: gateway.ErrNoProject})
	defer projects.Close()
	// Memory storage writes nothing to the data directory: no exports.
	exportDir := filepath.Join(a.cfg.DataDir, "exports")
	if a.cfg.Storage == config.StorageMemory {
		exportDir = ""
	}
	sweepCtx, stopSweep := context.WithCancel(a.ctx)
	swept := make(chan struct{})
	go func() { defer close(swept); projects.Sweep(sweepCtx) }()
	defer func() { stopSweep(); <-swept }()
	g := gateway.New(a.ledger, gateway.Options{
		Version:       Version,
		Project:       a.cfg.Project,
		AgentName:     a.cfg.Getenv(config.EnvAgentName),
		AgentID:       a.cfg.Getenv(config.EnvAgentID),
		ThoughtLog:    thoughtLog,
		AuthToken:     a.cfg.Getenv(config.EnvAuthToken),
		Tokens:        tokens,
		OpenProject:   projects.Ledger,
		CodeRepo:      func(name string) *coderepo.Repo { return projects.CodeRepo(name, a.codeRepoOf) },
		FetchSessions: a.fetchFor,
		CodeLinks:     a.codeLinksOf,
		Knowledge:     a.proj.Knowledge(),
		Notebooks:     projects.Notebooks(project.NotebooksFor(a.cfg)),
		ExportDir:     exportDir,
		ExportDirs:    set.exportDirs,
		Events:        a.proj.Events(),

		OpenCodeRoot:        projects.CodeRoot,
		NoAutoCreateSession: !a.cfg.AutoCreateSession,
		AllowedOrigins:      lim.origins,
		HTTPReadTimeout:     lim.readTimeout,
		HTTPMaxSessions:     lim.maxSessions,
		RootsTimeout:        lim.rootsTimeout,
		Sampling:            gateway.SamplingOptions{RLM: set.rlm},
		ReasoningSessionID:  bound,
	})
	// Closed once the transports have stopped: with memory storage it
	// removes the notebooks' temporary work folders.
	defer g.Close()
	// Searching reads every session once; start it now, in the background
	// and giving way to writers (a search before it ends reads the rest at
	// full speed). It stops (and is waited for) before the store is closed.
	indexCtx, stopIndex := context.WithCancel(a.ctx)
	indexed := make(chan struct{})
	go func() {
		defer close(indexed)
		a.ledger.WarmSearchIndex(indexCtx)
	}()
	defer func() { stopIndex(); <-indexed }()
	// THOUGHTBOX_AUTO_PULL keeps this server in step with the rest of a
	// team through their remote. Only the server's own project is pulled;
	// projects opened by navigate are brought in by 'thoughtbox pull'.
	// Closing the project (in Main) stops it.
	if err := a.proj.StartAutoPull(); err != nil {
		return err
	}
	// The Observatory, when enabled, runs beside either transport on its
	// own port, until the server stops.
	if stopObservatory, err := startObservatoryIfEnabled(a, c.Host, tokens); err != nil {
		return err
	} else if stopObservatory != nil {
		defer stopObservatory()
	}
	if transport == "stdio" {
		return g.ServeStdio(a.ctx, a.env.Stdin, a.env.Stdout)
	}

	host, port := set.host, set.port
	ln, err := listenTCP(host, port)
	if err != nil {
		return err
	}
	ctx, stop := stopWhenStdinCloses(a.ctx, a.env.Stdin, a.env.Stderr)
	defer stop()
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" && a.cfg.Getenv(config.EnvAuthToken) == "" && tokens == nil {
		fmt.Fprintf(a.env.Stderr, "thoughtbox: warning: listening on %s without THOUGHTBOX_AUTH_TOKEN: anyone who can reach it can read and write the ledger\n", host)
	}
	// The address goes to stderr (stdout stays for data), with the port
	// actually bound, so that a script that asked for port 0 can find it.
	fmt.Fprintf(a.env.Stderr, "thoughtbox: MCP server listening on http://%s/mcp (project %s, %s)\n", ln.Addr(), a.cfg.Project, a.cfg.RepoPath())
	// Requests run under base, which is cancelled when the server stops:
	// a client's open event stream (GET /mcp) then ends at once instead of
	// holding Shutdown until the client goes away.
	base, stopRequests := context.WithCancel(context.Background())
	defer stopRequests()
	// No ReadTimeout or WriteTimeout: they are per connection and would
	// cut off event streams; the gateway sets a deadline per request body.
	srv := &http.Server{Handler: g.HTTPHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: lim.idle,
		BaseContext: func(net.Listener) context.Context { return base }}
	// Past the cap, connections wait in the listen queue instead of each
	// taking a descriptor and a goroutine.
	ln = netutil.LimitListener(ln, lim.maxConns)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		stopRequests()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdownCtx); err != nil {
			// Every write is durable before its reply, so a request still
			// running is cut off, not lost: say so, and stop.
			fmt.Fprintf(a.env.Stderr, "thoughtbox: closing connections still open after 5s: %v\n", err)
			srv.Close()
		}
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

func firstSet(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}
