package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/observatory"
)

type observatoryCmd struct {
	Host    string `placeholder:"ADDR" help:"Address to listen on (env HOST; default 127.0.0.1). Anything but loopback should come with THOUGHTBOX_AUTH_TOKEN or THOUGHTBOX_AUTH_TOKENS_FILE."`
	Port    string `placeholder:"N" help:"Port to listen on (env THOUGHTBOX_OBSERVATORY_PORT; default 1729; 0 picks a free one)."`
	HTTPAPI bool   `name:"http-api" help:"Serve the HTTP API under /api/ (env THOUGHTBOX_OBSERVATORY_HTTP_API)."`
	// LiveWindow is a string so that the setting error names the flag.
	LiveWindow string `name:"live-window" placeholder:"DURATION" help:"List a session as live when written to within this long (env THOUGHTBOX_OBSERVATORY_LIVE_WINDOW; default 5m)."`
}

// settings reads and checks the Observatory's settings (see
// checkSettings).
func (c *observatoryCmd) settings(cfg *config.Config) (config.ObservatorySettings, error) {
	s, err := cfg.Observatory()
	if err != nil {
		return s, err
	}
	if c.Port != "" {
		n, err := strconv.Atoi(c.Port)
		if err != nil || n < 0 || n > 65535 {
			return s, &config.SettingError{Name: "--port", Value: c.Port, Reason: "expected a port number from 0 to 65535"}
		}
		s.Port = n
	}
	if c.LiveWindow != "" {
		d, err := config.ParseLiveWindow(c.LiveWindow)
		if err != nil {
			return s, &config.SettingError{Name: "--live-window", Value: c.LiveWindow, Reason: err.Error()}
		}
		s.LiveWindow = d
	}
	return s, nil
}

func (c *observatoryCmd) checkSettings(cfg *config.Config) error {
	if _, err := c.settings(cfg); err != nil {
		return err
	}
	_, err := readTokensFile(cfg)
	return err
}

// followEvery is how often the standalone Observatory looks for writes by
// other processes (a stat of two files when nothing changed).
const followEvery = 250 * time.Millisecond

// Run serves the Observatory over the project's ledger until interrupted:
// for a person browsing a ledger (a clone of a team's, say) with no agent
// attached. Thoughts written meanwhile by other processes (an agent's
// serve, a thoughtbox add, a pull) reach the page live, followed through
// the storage.
func (c *observatoryCmd) Run(a *app) error {
	s, err := c.settings(a.cfg)
	if err != nil {
		return err
	}
	s.HTTPAPI = s.HTTPAPI || c.HTTPAPI
	tokens, err := readTokensFile(a.cfg)
	if err != nil {
		return err
	}
	o, ln, err := listenObservatory(a, s, c.Host, tokens)
	if err != nil {
		return err
	}
	// Nothing is written here: what the page shows live comes from other
	// processes, so follow the storage.
	followCtx, stopFollow := context.WithCancel(a.ctx)
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		o.Follow(followCtx, a.proj, followEvery)
	}()
	defer func() { stopFollow(); <-followed }()
	err = o.Serve(a.ctx, ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// startObservatoryIfEnabled starts the Observatory in the background when
// THOUGHTBOX_OBSERVATORY_ENABLED is set, guarded by the server's tokens
// (nil when there is no tokens file); stop (nil when it is not enabled)
// ends it and waits.
func startObservatoryIfEnabled(a *app, hostFlag string, tokens *gateway.Tokens) (stop func(), err error) {
	s, err := a.cfg.Observatory()
	if err != nil || !s.Enabled {
		return nil, err
	}
	o, ln, err := listenObservatory(a, s, hostFlag, tokens)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(a.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := o.Serve(ctx, ln); err != nil {
			fmt.Fprintf(a.env.Stderr, "thoughtbox: error: Observatory: %v\n", err)
		}
	}()
	return func() { cancel(); <-done }, nil
}

// listenObservatory makes the Observatory for a's ledger, binds its port
// and hands it the ledger's events. tokens (nil for none) are checked
// against the project a serves.
func listenObservatory(a *app, s config.ObservatorySettings, hostFlag string, tokens *gateway.Tokens) (*observatory.Observatory, net.Listener, error) {
	host := firstSet(hostFlag, a.cfg.Getenv(config.EnvHost), "127.0.0.1")
	cfg := observatory.Config{
		Host:           host,
		Port:           s.Port,
		Origins:        s.Origins,
		MaxConnections: s.MaxConnections,
		HTTPAPI:        s.HTTPAPI,
		AuthToken:      a.cfg.Getenv(config.EnvAuthToken),
		Project:        a.cfg.Project,
		AbandonAfter:   s.AbandonAfter,
		LiveWindow:     s.LiveWindow,
		Authors:        a.proj,
		Log:            a.log,
	}
	if cr := a.cfg.Code; cr != nil {
		// The ledger lives in a code repository: the page shows the
		// commits linked to sessions and the commit and file pages.
		cfg.Code = &coderepo.Repo{Worktree: cr.Worktree, GitDir: cr.GitDir, CommonDir: cr.CommonDir}
		cfg.CodeLinks = a.proj
	}
	if tokens != nil {
		// Set only when there are tokens: a nil *gateway.Tokens in the
		// interface would count as tokens configured.
		cfg.Tokens = tokens
	}
	o := observatory.New(a.ledger, cfg)
	ln, err := net.Listen("tcp", o.Addr())
	if err != nil {
		return nil, nil, fmt.Errorf("Observatory: listen on %s: %w (set THOUGHTBOX_OBSERVATORY_PORT to use another port)", o.Addr(), err)
	}
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" && a.cfg.Getenv(config.EnvAuthToken) == "" && tokens == nil {
		fmt.Fprintf(a.env.Stderr, "thoughtbox: warning: the Observatory listens on %s without THOUGHTBOX_AUTH_TOKEN or THOUGHTBOX_AUTH_TOKENS_FILE: anyone who can reach it can read the ledger\n", host)
	}
	a.observatory.set(o)
	api := ""
	if s.HTTPAPI {
		api = fmt.Sprintf(", API at http://%s/api/sessions", ln.Addr())
	}
	fmt.Fprintf(a.env.Stderr, "thoughtbox: Observatory at http://%s/ (WebSocket /ws%s; project %s)\n", ln.Addr(), api, a.cfg.Project)
	return o, ln, nil
}

// observatoryRelay is the ledger's event sink for an Observatory that
// starts after the ledger: events before that go nowhere.
type observatoryRelay struct {
	o atomic.Pointer[observatory.Observatory]
}

func (r *observatoryRelay) set(o *observatory.Observatory) { r.o.Store(o) }

// Publish implements ledger.EventSink.
func (r *observatoryRelay) Publish(e ledger.Event) {
	if o := r.o.Load(); o != nil {
		o.Publish(e)
	}
}
