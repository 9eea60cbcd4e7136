package gateway

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// conn is the state of one MCP connection (seed 000, StateManager). It
// belongs to one *mcp.Server and is freed with it.
type conn struct {
	g      *Gateway
	server *mcp.Server

	// mu serialises the connection's calls and guards the fields below.
	// grant is what the connection's bearer token allows; nil: anything.
	grant *Grant
	// remote is set for a connection over HTTP, whose client may be on
	// another machine: its roots do not widen where the server writes
	// (see call.exportBases).
	remote bool

	mu    sync.Mutex
	stage Stage
	// ledger is the project's ledger (see Options.OpenProject).
	ledger  *ledger.Ledger
	project string
	// sessionID is the active session; "" until start_new with a title,
	// load_context or the first thought.
	sessionID string
	// pending is what start_new without a title asked of the session the
	// first thought will create.
	pending   ledger.CreateSessionParams
	domain    string
	boundRoot string
	nav       navigation
	// toolDesc holds the per-stage tools added so far, with the
	// description each was announced with.
	toolDesc map[string]string
	// hidden holds the per-stage tools session discovery hid: syncTools
	// leaves them out.
	hidden map[string]bool
	// deletedActive is the id of the active session this connection
	// deleted, until another session is made active: a thought then is
	// refused instead of silently starting a new session.
	deletedActive string
	// resumeTaught is set once a call that skipped the stage flow (see
	// conn.resume) was told what the skipped stages teach.
	resumeTaught bool
}

// navigation is the navigation context of seed 000.
type navigation struct {
	Project string `json:"project,omitempty"`
	Task    string `json:"task,omitempty"`
	Aspect  string `json:"aspect,omitempty"`
}

// author is who this connection's commits are attributed to: the MCP
// client from initialize, unless Options.AgentName / AgentID say otherwise.
func (c *call) author() ledger.Author {
	var a ledger.Author
	if c.session != nil {
		if p := c.session.InitializeParams(); p != nil && p.ClientInfo != nil {
			a.Name = strings.TrimSpace(p.ClientInfo.Name + " " + p.ClientInfo.Version)
		}
	}
	if c.g.opts.AgentName != "" {
		a.Name = c.g.opts.AgentName
	}
	id := c.g.opts.AgentID
	if c.grant != nil {
		// The token says who this is; the client cannot choose.
		a.Name, id = c.grant.Identity, c.grant.Identity
	}
	if id != "" {
		a.Email = id
		if !strings.Contains(id, "@") {
			a.Email = id + "@agents.thoughtbox.invalid"
		}
		if a.Name == "" {
			a.Name = id
		}
	}
	return a
}

// client is the MCP client's self-description from initialize.
func (c *call) client() *mcp.Implementation {
	if c.session != nil {
		if p := c.session.InitializeParams(); p != nil && p.ClientInfo != nil {
			return p.ClientInfo
		}
	}
	return &mcp.Implementation{}
}

// setSession makes id the active session and forgets any pending one.
func (c *conn) setSession(id string) {
	c.sessionID = id
	c.deletedActive = ""
	c.pending = ledger.CreateSessionParams{}
}

// switchLedger moves the connection to another project's ledger; the
// active session belonged to the old one, so it is dropped.
func (c *conn) switchLedger(l *ledger.Ledger, project string) {
	if project != c.project {
		c.setSession("")
	}
	c.ledger = l
	c.project = project
}

// ErrNoProject is returned by Options.OpenProject when asked, without
// create, for a project that does not exist.
var ErrNoProject = errors.New("no such project")

// openProject opens a project for the rest of the call: the server's own
// needs nothing, another goes through Options.OpenProject.
func (c *call) openProject(ctx context.Context, project string, create bool) (*ledger.Ledger, error) {
	if !c.grant.CanRead(project) {
		return nil, scopeError(c.grant, "read", project)
	}
	if create && !c.grant.CanWrite(project) {
		return nil, scopeError(c.grant, "create", project)
	}
	if project == c.g.opts.Project || c.g.opts.OpenProject == nil {
		return c.g.ledger, nil
	}
	l, release, err := c.g.opts.OpenProject(ctx, project, create)
	if err != nil {
		return nil, err
	}
	c.holds = append(c.holds, release)
	return l, nil
}

// holdCurrent opens the connection's project for the call: between calls
// it may have been closed as idle, and is then opened again.
func (c *call) holdCurrent(ctx context.Context) error {
	if c.project == c.g.opts.Project || c.g.opts.OpenProject == nil {
		return nil
	}
	l, err := c.openProject(ctx, c.project, false)
	if err != nil {
		e := ledger.Errorf(ledger.CodeStorage, "reopening project %q: %v", c.project, err)
		e.Err = err
		return e
	}
	c.ledger = l
	return nil
}

func (c *call) releaseAll() {
	for _, r := range c.holds {
		r()
	}
	c.holds = nil
}

func (c *conn) publish(t ledger.EventType, data map[string]any) {
	if c.g.opts.Events == nil {
		return
	}
	c.g.opts.Events.Publish(ledger.Event{Type: t, SessionID: c.sessionID, Timestamp: time.Now().UTC(), Data: data})
}

// activeSession resolves the session an operation works on: the sessionId
// argument (a unique prefix will do) or else the active session.
func (c *call) activeSession(ctx context.Context, arg string) (string, error) {
	if arg != "" {
		return c.ledger.Resolve(ctx, arg)
	}
	if c.sessionID == "" {
		e := ledger.Errorf(ledger.CodeSessionNotFound,
			"no active session on this connection: record a thought, call start_new with a sessionTitle or load_context, or pass sessionId")
		e.Details = map[string]any{"field": "sessionId"}
		return "", e
	}
	return c.sessionID, nil
}
