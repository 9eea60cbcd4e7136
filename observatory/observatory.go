// Package observatory is the place where a person watches agents reason:
// a WebSocket server that streams a session's thoughts as they are
// committed, an HTTP API over the ledger's history, and an embedded web UI
// that draws each session as a graph.
//
// It is fed by the ledger's events (it is a ledger.EventSink) and reads
// snapshots and listings from the ledger, so that a session written by
// another process, pulled from a remote or closed long ago can be opened as
// well as one being written now:
//
//	obs := observatory.New(l, observatory.Config{Port: 1729})
//	// the ledger was created with obs (or a relay to it) as its EventSink
//	ln, _ := net.Listen("tcp", obs.Addr())
//	go obs.Serve(ctx, ln)
//	defer obs.Close()
//
// The socket speaks two forms, told apart by the client's first message:
// ours, a JSON array [topic, event, payload] both ways, with the topics
// "observatory" (all sessions) and "reasoning:<sessionId>"; and seed
// 000's, {action, channel, sessionId} in and {channel, event, data} out,
// with text ping answered by pong (seedproto.go). Seed clients connect to
// the root path, ours to /ws; either path takes either form.
package observatory

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/internal/hostcheck"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/why"
)

// Defaults of Config.
const (
	DefaultPort           = 1729
	DefaultMaxConnections = 100
	DefaultAbandonAfter   = 24 * time.Hour
	DefaultReadLimit      = 64 << 10
	DefaultPingInterval   = 30 * time.Second
	DefaultIdleTimeout    = 10 * time.Minute
	DefaultQueueSize      = 1024
	DefaultStallTimeout   = 5 * time.Second
	DefaultCorkDelay      = 10 * time.Millisecond
	DefaultQueueBytes     = 8 << 20
	DefaultSubscribeBurst = 8
	DefaultSubscribeEvery = 250 * time.Millisecond
	// maxActive bounds the sessions:active list sent on joining.
	maxActive = 100
	// activeScan bounds the sessions activeSessions reads to find them:
	// past it, the sessions still not completed are shown by the list's
	// pages, not on joining.
	activeScan = scanLimit
)

// Config configures an Observatory. Zero fields take the defaults.
type Config struct {
	// Host and Port are where Addr says to listen; Host defaults to
	// 127.0.0.1.
	Host string
	Port int
	// Origins are the browser origins (scheme://host[:port]) allowed to
	// open the socket and read the API, besides the Observatory's own
	// origin and loopback origins, which are always allowed. "*" allows
	// every origin.
	Origins []string
	// MaxConnections bounds the open WebSocket connections.
	MaxConnections int
	// HTTPAPI enables /api/….
	HTTPAPI bool
	// AuthToken, when set, is required by the page, the socket and the
	// API: as "Authorization: Bearer <token>", a ?token= query parameter
	// (which also sets a cookie, so that the page's own requests carry
	// it), or that cookie.
	AuthToken string
	// Tokens, when set, are tokens accepted the same way, each with the
	// projects it may read (THOUGHTBOX_AUTH_TOKENS_FILE; gateway.Tokens
	// is one). A token that may not read Project is refused with 403.
	// With AuthToken and Tokens both set, either opens the Observatory.
	Tokens Tokens
	// Project is the name of the project the ledger holds, which the
	// scopes of Tokens are checked against.
	Project string
	// AbandonAfter is how long a session that is not completed may go
	// without a thought before it counts as abandoned.
	AbandonAfter time.Duration
	// LiveWindow is how recently a session must have been written to for
	// the page to list it as live; zero takes DefaultLiveWindow.
	LiveWindow time.Duration
	// ReadLimit bounds one client message, in bytes.
	ReadLimit int64
	// PingInterval is how often the server pings; a client that has not
	// answered (or sent anything) within two intervals is disconnected.
	PingInterval time.Duration
	// IdleTimeout closes a connection that subscribes to nothing for
	// that long.
	IdleTimeout time.Duration
	// QueueSize is how many messages may wait for one client before it
	// counts as behind. A client behind that has taken nothing from its
	// queue for StallTimeout, or that is 16 times QueueSize behind (or
	// past QueueBytes), is disconnected; the writer is never slowed.
	QueueSize    int
	StallTimeout time.Duration
	// QueueBytes bounds the bytes waiting for one client (queued, or
	// being written), besides the largest snapshot among them: past it
	// the client is cut off and what waited for it is let go at once.
	QueueBytes int
	// SubscribeBurst and SubscribeEvery limit one connection's
	// subscribes: a burst of SubscribeBurst, then one per SubscribeEvery;
	// one past the limit is refused with an error. A subscribe to a
	// session whose snapshot is still on its way to the client is
	// answered by that snapshot, without reading the session again.
	SubscribeBurst int
	SubscribeEvery time.Duration
	// CorkDelay is the least time between two writes of queued messages
	// to one connection while messages keep coming: a message that finds
	// the connection written to less than CorkDelay ago waits out the
	// rest, and whatever queues meanwhile goes with it in one system
	// call. After a quiet spell a message goes at once. Zero takes
	// DefaultCorkDelay; a negative value disables the delay.
	CorkDelay time.Duration
	// Authors, if set, gives the detail panel each thought's author.
	Authors AuthorReader
	// Code, if set, is the code repository the ledger is kept in: the
	// page then shows the commits linked to a session and the reasoning
	// behind a commit or a file (code.go). Nil for a standalone ledger.
	Code *coderepo.Repo
	// CodeLinks, if set with Code, holds the ledger's link entries: the
	// pages then show commits linked by an amend, a rebase, a cherry-pick
	// or relink, not only by their trailers.
	CodeLinks why.LinkStore
	// Now is the clock for statuses; default time.Now.
	Now func() time.Time
	// Log receives one record per noteworthy event (a client cut off);
	// nil discards them.
	Log *slog.Logger
}

// Tokens looks up bearer tokens that carry scopes.
type Tokens interface {
	// ReadScope says whether token is known, whom it stands for, and
	// whether it may read project.
	ReadScope(token, project string) (identity string, known, canRead bool)
}

// AuthorReader reads who recorded a commit, and when (gitstore.Store does).
type AuthorReader interface {
	CommitAuthor(ctx context.Context, id ledger.CommitID) (ledger.Author, time.Time, error)
}

// Observatory serves the WebSocket hub, the HTTP API and the web UI for
// one ledger. Publish may be called before Serve.
type Observatory struct {
	ledger   *ledger.Ledger
	cfg      Config
	hub      *hub
	statuses statusCache
	// handler serves every route behind the Host check.
	handler http.Handler
	// names are the host names the Observatory answers to besides
	// loopback: its configured Host and the hosts of Config.Origins.
	names []string
	// after is the writers' timer for the cork delay; tests replace it.
	after func(time.Duration) <-chan time.Time
}

// New returns an Observatory over l.
func New(l *ledger.Ledger, cfg Config) *Observatory {
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.AbandonAfter <= 0 {
		cfg.AbandonAfter = DefaultAbandonAfter
	}
	if cfg.ReadLimit <= 0 {
		cfg.ReadLimit = DefaultReadLimit
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = DefaultStallTimeout
	}
	if cfg.QueueBytes <= 0 {
		cfg.QueueBytes = DefaultQueueBytes
	}
	if cfg.SubscribeBurst <= 0 {
		cfg.SubscribeBurst = DefaultSubscribeBurst
	}
	if cfg.SubscribeEvery <= 0 {
		cfg.SubscribeEvery = DefaultSubscribeEvery
	}
	if cfg.CorkDelay == 0 {
		cfg.CorkDelay = DefaultCorkDelay
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	o := &Observatory{ledger: l, cfg: cfg, statuses: statusCache{m: map[string]statusEntry{}}, after: time.After}
	o.hub = newHub(o)
	o.names = hostNames(cfg)
	o.handler = o.checkHost(o.routes())
	return o
}

// Addr is host:port from the configuration.
func (o *Observatory) Addr() string {
	return net.JoinHostPort(o.cfg.Host, strconv.Itoa(o.cfg.Port))
}

// Publish implements ledger.EventSink. It never blocks.
func (o *Observatory) Publish(e ledger.Event) { o.hub.publish(e) }

// Dropped counts the clients disconnected for falling behind.
func (o *Observatory) Dropped() int64 { return o.hub.dropped.Load() }

// Coalesced counts the subscribes answered by a snapshot already on its
// way to the client.
func (o *Observatory) Coalesced() int64 { return o.hub.coalesced.Load() }

// PendingBytes is what waits for the connected clients, queued or being
// written.
func (o *Observatory) PendingBytes() int {
	o.hub.mu.Lock()
	defer o.hub.mu.Unlock()
	n := 0
	for c := range o.hub.clients {
		n += c.pendingBytes()
	}
	return n
}

// Handler serves the UI at /, the socket at /ws and, if enabled, /api/.
func (o *Observatory) Handler() http.Handler { return o.handler }

// Serve accepts connections on ln until ctx ends or Close is called.
func (o *Observatory) Serve(ctx context.Context, ln net.Listener) error {
	base, stop := context.WithCancel(context.Background())
	defer stop()
	srv := &http.Server{Handler: o.handler, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(corkListener{ln}) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	o.hub.close()
	stop()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close disconnects every client.
func (o *Observatory) Close() { o.hub.close() }

func (o *Observatory) now() time.Time {
	if o.cfg.Now != nil {
		return o.cfg.Now()
	}
	return time.Now()
}

// access is what a request's token allows.
type access int

const (
	accessGranted access = iota
	// accessUnknown: no token, or none the Observatory knows (401).
	accessUnknown
	// accessOutOfScope: a known token that may not read the project (403).
	accessOutOfScope
)

// codePermissionDenied is the code of a refusal for scope, the one the
// gateway gives (gateway.CodePermissionDenied).
const codePermissionDenied ledger.Code = "PERMISSION_DENIED"

// authorize checks the tokens a request carries (the Authorization
// header, ?token=, the cookie), if tokens are configured. A request
// carrying a token in scope is granted whatever else it carries; identity
// names the holder of a known token out of scope, for the refusal.
func (o *Observatory) authorize(r *http.Request) (a access, identity string) {
	if o.cfg.AuthToken == "" && o.cfg.Tokens == nil {
		return accessGranted, ""
	}
	var candidates []string
	if scheme, tok, found := strings.Cut(r.Header.Get("Authorization"), " "); found && strings.EqualFold(scheme, "Bearer") {
		candidates = append(candidates, strings.TrimSpace(tok))
	}
	candidates = append(candidates, r.URL.Query().Get("token"))
	if c, err := r.Cookie(tokenCookie); err == nil {
		candidates = append(candidates, c.Value)
	}
	a = accessUnknown
	for _, tok := range candidates {
		if tok == "" {
			continue
		}
		if o.cfg.AuthToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(o.cfg.AuthToken)) == 1 {
			return accessGranted, ""
		}
		if o.cfg.Tokens == nil {
			continue
		}
		switch id, known, canRead := o.cfg.Tokens.ReadScope(tok, o.cfg.Project); {
		case canRead:
			return accessGranted, ""
		case known:
			a, identity = accessOutOfScope, id
		}
	}
	return a, identity
}

// refusal is the error payload and status of a request authorize did not
// grant.
func (o *Observatory) refusal(a access, identity string) (int, ErrorPayload) {
	if a == accessOutOfScope {
		return http.StatusForbidden, ErrorPayload{Code: codePermissionDenied,
			Message: fmt.Sprintf("the token of %s may not read project %q", identity, o.cfg.Project),
			Details: map[string]any{"project": o.cfg.Project, "identity": identity}}
	}
	return http.StatusUnauthorized, ErrorPayload{Code: ledger.CodeInvalidOperation,
		Message: "missing or unknown token: send Authorization: Bearer <token> or ?token=<token> (THOUGHTBOX_AUTH_TOKEN or one of THOUGHTBOX_AUTH_TOKENS_FILE)"}
}

const tokenCookie = "thoughtbox_observatory_token"

// hostNames are the names besides loopback that a request's Host and
// Origin may carry: the configured Host when it is a name, and the hosts
// of the allowed origins (a dashboard listed there is a name the operator
// chose).
func hostNames(cfg Config) []string {
	var names []string
	if net.ParseIP(cfg.Host) == nil {
		names = append(names, cfg.Host)
	}
	for _, a := range cfg.Origins {
		if u, err := url.Parse(a); err == nil && u.Host != "" {
			names = append(names, u.Hostname())
		}
	}
	return names
}

// checkHost refuses, on every route (page, socket, API), a request whose
// Host is not this machine or a configured name when the Observatory
// listens on loopback: a DNS-rebinding page reaches it under its own name
// (the MCP endpoint applies the same rule, internal/hostcheck).
func (o *Observatory) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostcheck.Allowed(r, o.names) {
			writeError(w, http.StatusForbidden, ErrorPayload{Code: ledger.CodeInvalidOperation,
				Message: fmt.Sprintf("host %q is not allowed: the Observatory answers to localhost, loopback addresses and the hosts of THOUGHTBOX_OBSERVATORY_CORS", r.Host),
				Details: map[string]any{"host": r.Host}})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// originAllowed says whether a browser page from origin may use the socket
// or the API: no Origin header (not a browser), one of Config.Origins, an
// origin whose host is loopback or a configured name, or the
// Observatory's own origin when Host passed checkHost.
func (o *Observatory) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	for _, a := range o.cfg.Origins {
		if a == "*" || strings.EqualFold(strings.TrimRight(a, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if hostcheck.Loopback(u.Host) || hostcheck.Named(u.Host, o.names) {
		return true
	}
	// The page's own origin. On loopback checkHost has already held Host
	// to loopback or a configured name; beyond it, the operator exposed
	// the Observatory and its token guards it.
	return strings.EqualFold(u.Host, r.Host) && hostcheck.Allowed(r, o.names)
}
