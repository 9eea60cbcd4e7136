package gateway

import (
	"context"
	"errors"
	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/why"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway/httptransport"
	"github.com/thoughtbox/thoughtbox/gateway/internal/stdio"
	"github.com/thoughtbox/thoughtbox/gateway/internal/wire"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/notebook"
)

// ProtocolVersions are the MCP protocol versions the server offers. The
// go-sdk's newest (2026-07-28) forbids server-to-client requests during a
// call, which list_roots (and later critique and RLM sampling) need.
var ProtocolVersions = wire.Versions

// DefaultHTTPSessionTimeout is how long an idle Streamable HTTP session is
// kept before it is closed and its state freed.
const DefaultHTTPSessionTimeout = time.Hour

// DefaultHTTPMaxSessions bounds the open Streamable HTTP sessions; see
// Options.HTTPMaxSessions.
const DefaultHTTPMaxSessions = httptransport.DefaultMaxSessions

// DefaultRootsTimeout is how long list_roots and bind_root wait for the
// client to answer roots/list.
const DefaultRootsTimeout = 10 * time.Second

// Options configure a Gateway. The zero value works: no thought log, no
// authentication, the MCP client as the author of its thoughts.
type Options struct {
	// Version is the server version reported in initialize.
	Version string
	// Project is the name of the project the ledger belongs to, as
	// reported by get_state ("_default" if empty).
	Project string
	// AgentName and AgentID, when set, replace the MCP client's name and
	// version as the author of the commits a connection makes
	// (THOUGHTBOX_AGENT_NAME, THOUGHTBOX_AGENT_ID). AgentID becomes the
	// author's e-mail address, "<id>@agents.thoughtbox.invalid" unless it
	// holds an "@" already.
	AgentName, AgentID string
	// ThoughtLog, if set, receives a human-readable entry for every
	// recorded thought. The server passes stderr unless
	// DISABLE_THOUGHT_LOGGING is set; it must never be stdout under stdio.
	ThoughtLog io.Writer
	// AuthToken, if set, is the bearer token HTTPHandler requires
	// (THOUGHTBOX_AUTH_TOKEN).
	AuthToken string
	// Tokens, if set, are the bearer tokens HTTPHandler accepts (besides
	// AuthToken), each with its identity and projects
	// (THOUGHTBOX_AUTH_TOKENS_FILE).
	Tokens *Tokens
	// AllowedOrigins are the browser origins (scheme://host[:port]) HTTP
	// requests may come from besides local ones (THOUGHTBOX_ALLOWED_ORIGINS).
	AllowedOrigins []string
	// HTTPReadTimeout bounds the reading of a request's body; 0 means
	// DefaultHTTPReadTimeout, negative means none.
	HTTPReadTimeout time.Duration
	// RootsTimeout bounds the wait for the client's answer to roots/list
	// (list_roots, bind_root); 0 means DefaultRootsTimeout.
	RootsTimeout time.Duration
	// HTTPSessionTimeout closes Streamable HTTP sessions idle for this
	// long; 0 means DefaultHTTPSessionTimeout, negative means never.
	HTTPSessionTimeout time.Duration
	// HTTPMaxSessions bounds the open Streamable HTTP sessions: past it
	// a new one takes the place of the one idle longest, and with none
	// idle initialize is refused with 503. 0 means
	// httptransport.DefaultMaxSessions, negative means no bound.
	HTTPMaxSessions int
	// OpenProject, if set, lets navigate {project} and bind_root move a
	// connection to another project's ledger. Without it those calls only
	// record the project, and every session stays in the configured one.
	// It returns the project's ledger held open until release is called:
	// the server may close a project no call holds (see the cli's
	// projectLedgers), so a connection holds its project for each call,
	// not between calls. Without create, a project that does not exist
	// yet is an error (ErrNoProject), so that a client cannot make the
	// server create repositories by naming them.
	OpenProject func(ctx context.Context, project string, create bool) (l *ledger.Ledger, release func(), err error)
	// CodeRepo, if set, names the code repository a project's ledger is
	// kept in (nil for a standalone project): the why operation reads that
	// repository's commits. Without it, why says to run thoughtbox enable.
	CodeRepo func(project string) *coderepo.Repo
	// OpenCodeRoot, if set, lets bind_root on a local connection (stdio,
	// or one served from NewServer) move to the ledger kept in the code
	// repository a root is in, as the server started in that worktree
	// would use: given the root's folder, it returns the name under which
	// OpenProject and CodeRepo know that ledger, or ok false when the
	// folder is in no enabled Git worktree (`thoughtbox enable`). Over
	// HTTP a root is a folder on the client's machine, so it is not asked.
	OpenCodeRoot func(ctx context.Context, dir string) (project string, ok bool, err error)
	// FetchSessions, if set, brings sessions a project's ledger lacks
	// from where its code repository shares reasoning, for a why whose
	// commits name them (see why.Asker.Fetch); its failure is a warning
	// in the answer.
	FetchSessions func(ctx context.Context, project string, ids []string) error
	// CodeLinks, if set, gives the link entries of the project CodeRepo
	// names (nil for none): why then reads links from them as well as
	// from commit trailers, after recording the links the hooks left
	// pending.
	CodeLinks func(project string) why.LinkStore
	// Events, if set, receives the gateway's own events: stage_changed and
	// cipher_loaded (the ledger publishes the thought and session events).
	Events ledger.EventSink
	// Logger receives the MCP SDK's diagnostics; nil discards them.
	Logger *slog.Logger
	// ExportDir is where sessions are exported: automatically when a
	// thought says no further thought is needed, and by session export
	// with save. The server passes <data dir>/exports. Empty: completed
	// sessions are closed without an export file, and save is refused.
	ExportDir string
	// ExportDirs are further folders (absolute paths) session export
	// {destination} may write into (THOUGHTBOX_EXPORT_DIRS, serve
	// --export-dir). Over HTTP, they and ExportDir are the only places: a
	// remote client's roots do not widen them. A connection over stdio, or
	// one served from NewServer, may also export into its bound root.
	ExportDirs []string
	// Knowledge is the project's knowledge zone, served by the knowledge
	// operation; without it that operation fails as not configured.
	Knowledge *ledger.Knowledge
	// Notebooks, if set, makes the notebook service of a project from the
	// store behind its ledger; the gateway asks once per project (again if
	// the project was reopened) and closes what it got in Close. Without
	// it the notebook operation fails as not configured.
	Notebooks func(project string, store ledger.NotebookStore) *notebook.Service
	// Sampling configures critique and RLM, which call a model through
	// the client (see SamplingOptions).
	Sampling SamplingOptions
	// NoAutoCreateSession refuses a thought when no session is active,
	// instead of creating one for it (seed 000 autoCreateSession: false;
	// THOUGHTBOX_AUTO_CREATE_SESSION=false).
	NoAutoCreateSession bool
	// ReasoningSessionID, if set, is the full id of a session every new
	// connection starts in, at stage 1 as if it had called load_context
	// (seed 000 ServerConfig reasoningSessionId: "pre-load specific
	// session"). The caller checks that the session exists.
	ReasoningSessionID string
}

// Gateway is the MCP server of one ledger. It is safe for concurrent use.
type Gateway struct {
	ledger *ledger.Ledger
	opts   Options
	ops    *operationTable

	// logMu keeps entries of concurrent connections whole in ThoughtLog.
	logMu sync.Mutex

	// mu guards conns, the connections that completed initialize and have
	// not closed yet.
	mu    sync.Mutex
	conns map[*conn]struct{}

	// nbMu guards nbs, the notebook services by project.
	nbMu sync.Mutex
	nbs  map[string]*projectNotebooks
}

// New returns a Gateway over l.
func New(l *ledger.Ledger, opts Options) *Gateway {
	if opts.Project == "" {
		opts.Project = "_default"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Gateway{ledger: l, opts: opts, ops: newOperations(), conns: map[*conn]struct{}{}}
}

// NewServer returns a new *mcp.Server with its own connection state (stage
// 0, no session). Serve exactly one MCP session with it: the stage machine
// and the tools it discloses belong to the server.
func (g *Gateway) NewServer() *mcp.Server { return g.newServer(nil) }

// newServer is NewServer for a connection whose token has grant (nil: no
// limits).
func (g *Gateway) newServer(grant *Grant) *mcp.Server { return g.newConn(grant).server }

// newConn is newServer, returning the connection's state.
func (g *Gateway) newConn(grant *Grant) *conn {
	c := &conn{g: g, ledger: g.ledger, project: g.opts.Project, grant: grant, toolDesc: map[string]string{}, hidden: map[string]bool{}}
	c.server = mcp.NewServer(&mcp.Implementation{Name: "thoughtbox", Title: "Thoughtbox", Version: g.version()}, &mcp.ServerOptions{
		Instructions:              instructions,
		Logger:                    g.opts.Logger,
		SupportedProtocolVersions: ProtocolVersions,
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			g.track(c, req.Session)
		},
	})
	c.server.AddTool(g.ops.gatewayTool(), c.handleGateway)
	c.addResources()
	c.addPrompts()
	if id := g.opts.ReasoningSessionID; id != "" {
		c.sessionID, c.stage = id, StageInitComplete
		c.syncTools()
	}
	return c
}

func (g *Gateway) version() string {
	if g.opts.Version == "" {
		return "dev"
	}
	return g.opts.Version
}

// track counts c as live until its session ends, so that closing an MCP
// session is seen to free its state.
func (g *Gateway) track(c *conn, ss *mcp.ServerSession) {
	g.mu.Lock()
	if _, ok := g.conns[c]; ok {
		g.mu.Unlock()
		return
	}
	g.conns[c] = struct{}{}
	g.mu.Unlock()
	go func() {
		_ = ss.Wait()
		g.mu.Lock()
		delete(g.conns, c)
		g.mu.Unlock()
	}()
}

// Connections is the number of live MCP connections: initialized and not
// yet closed.
func (g *Gateway) Connections() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.conns)
}

// ServeStdio serves one MCP connection as newline-delimited JSON-RPC over
// in and out (stdin and stdout for `thoughtbox serve --transport stdio`),
// until the client goes away (closes in, or its end of out) or ctx is done;
// those ends return nil.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	err := g.newConn(nil).runStdio(ctx, stdio.Transport{In: in, Out: out}, true)
	if ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE) {
		return nil
	}
	return err
}

// HTTPHandler serves Streamable HTTP at /mcp, with one *mcp.Server per MCP
// session, DNS-rebinding protection for loopback listeners (Host) and for
// every listener (Origin: local or Options.AllowedOrigins, else 403), and
// a deadline for reading each request's body. With
// Options.AuthToken set, a request without "Authorization: Bearer <token>"
// gets 401.
func (g *Gateway) HTTPHandler() http.Handler { return g.httpHandler(true) }

// httpHandler is HTTPHandler; with direct set, calls of the gateway tool
// are taken before the SDK sees them (see conn.direct), as over stdio.
func (g *Gateway) httpHandler(direct bool) http.Handler {
	timeout := g.opts.HTTPSessionTimeout
	switch {
	case timeout == 0:
		timeout = DefaultHTTPSessionTimeout
	case timeout < 0:
		timeout = 0
	}
	read := g.opts.HTTPReadTimeout
	switch {
	case read == 0:
		read = DefaultHTTPReadTimeout
	case read < 0:
		read = 0
	}
	// Our own Streamable HTTP handling (see httptransport): the SDK's
	// decoded each request three times with fresh 32 KB buffers.
	mcpHandler := httptransport.NewDirect(func(r *http.Request) (*mcp.Server, httptransport.Direct) {
		// The grant is the connection's: handleGateway checks it on every
		// call, whichever way the call arrives.
		c := g.newConn(grantOf(r))
		c.remote = true
		if !direct {
			return c.server, nil
		}
		return c.server, c.direct
	}, httptransport.Options{
		ProtocolVersions: ProtocolVersions,
		SessionTimeout:   timeout,
		ReadTimeout:      read,
		MaxBody:          maxHTTPBody,
		MaxSessions:      g.opts.HTTPMaxSessions,
		Logger:           g.opts.Logger,
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", g.checkOrigin(g.authorize(mcpHandler)))
	return mux
}

// instructions are sent to the client in initialize.
const instructions = `Thoughtbox is a reasoning ledger: every thought you record is a Git commit.
Use the thoughtbox_gateway tool as {"operation": "...", "args": {...}}, in this order:
1. start_new (or load_context to resume a session) - unlocks stage 1;
2. cipher - loads the notation guide, unlocks stage 2;
3. thought - record each reasoning step; read_thoughts, get_structure and mental_models help along the way.
get_state tells you where you are at any time.`
