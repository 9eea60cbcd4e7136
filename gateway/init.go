package gateway

// The init family: get_state, start_new, load_context, list_sessions,
// navigate, list_roots, bind_root — everything available at stage 0.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// maxContextLength bounds the free-text context values (domain, task …).
const maxContextLength = 200

type noParams struct{}

type clientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type stateReply struct {
	stageInfo
	SessionID      string          `json:"sessionId,omitempty"`
	Session        *ledger.Session `json:"session,omitempty"`
	SessionProblem string          `json:"sessionProblem,omitempty"`
	// PendingSession is set after start_new without a title: the first
	// thought creates the session.
	PendingSession bool       `json:"pendingSession,omitempty"`
	Project        string     `json:"project"`
	Domain         string     `json:"domain,omitempty"`
	BoundRoot      string     `json:"boundRoot,omitempty"`
	Navigation     navigation `json:"navigation"`
	Client         clientInfo `json:"client"`
	Author         string     `json:"author"`
	Operations     []string   `json:"availableOperations"`
	Tools          []string   `json:"tools"`
	Next           string     `json:"next"`
}

func getState(ctx context.Context, c *call, _ *noParams) (any, error) {
	a := c.author()
	cl := c.client()
	r := &stateReply{
		SessionID:      c.sessionID,
		PendingSession: c.sessionID == "" && c.stage >= StageInitComplete,
		Project:        c.project,
		Domain:         c.domain,
		BoundRoot:      c.boundRoot,
		Navigation:     c.nav,
		Client:         clientInfo{cl.Name, cl.Version},
		Author:         strings.TrimSpace(a.Name + " " + angle(a.Email)),
		Operations:     c.availableOps(),
		Tools:          c.tools(),
		Next:           c.next(),
	}
	if c.sessionID != "" {
		if v, err := c.ledger.View(ctx, c.sessionID); err != nil {
			r.SessionProblem = err.Error()
		} else {
			r.Session = &v.Session
		}
	}
	return r, nil
}

func angle(s string) string {
	if s == "" {
		return ""
	}
	return "<" + s + ">"
}

// next is the advice get_state gives for the connection's stage.
func (c *conn) next() string {
	switch {
	case c.stage < StageInitComplete:
		return "call start_new for new work, or load_context {sessionId} to resume one (list_sessions shows them)"
	case c.stage < StageCipherLoaded:
		return "call cipher to load the notation guide; it unlocks thought"
	case c.stage < StageDomainActive:
		return "record reasoning with thought; navigate {domain} focuses mental models on your kind of problem"
	}
	return "record reasoning with thought; mental_models are narrowed to the domain " + c.domain
}

type startNewParams struct {
	SessionTitle string   `json:"sessionTitle,omitempty"`
	Description  string   `json:"description,omitempty"`
	Tags         []string `json:"tags,omitempty"`
	Domain       string   `json:"domain,omitempty"`
}

func (p *startNewParams) check() error {
	return checkContext("domain", &p.Domain)
}

// checkContext trims a free-text context value and bounds its length.
func checkContext(field string, v *string) error {
	*v = strings.TrimSpace(*v)
	if n := utf8.RuneCountInString(*v); n > maxContextLength {
		return ledger.InvalidField(field, "must be at most %d characters, got %d", maxContextLength, n)
	}
	return nil
}

type startNewReply struct {
	stageInfo
	SessionID string          `json:"sessionId,omitempty"`
	Session   *ledger.Session `json:"session,omitempty"`
	Domain    string          `json:"domain,omitempty"`
	Message   string          `json:"message"`
}

func startNew(ctx context.Context, c *call, p *startNewParams) (any, error) {
	r := &startNewReply{}
	params := ledger.CreateSessionParams{Title: p.SessionTitle, Description: p.Description, Tags: p.Tags}
	if strings.TrimSpace(p.SessionTitle) != "" {
		s, err := c.ledger.StartSession(ctx, params, c.author())
		if err != nil {
			return nil, renameField(err, "title", "sessionTitle")
		}
		c.setSession(s.ID)
		r.SessionID, r.Session = s.ID, &s
		r.Message = fmt.Sprintf("Session %q started. Next: cipher, then thought.", s.Title)
	} else {
		c.setSession("")
		c.pending = params
		r.Message = "Ready for new work. Your first thought creates the session (give it a sessionTitle). Next: cipher, then thought."
	}
	if p.Domain != "" {
		c.domain = p.Domain
	}
	r.Domain = c.domain
	return r, nil
}

// renameField reports a ledger error about field from under the name the
// agent used.
func renameField(err error, from, to string) error {
	var e *ledger.Error
	if errors.As(err, &e) && e.Details["field"] == from {
		e.Details["field"] = to
		e.Message = to + strings.TrimPrefix(e.Message, from)
	}
	return err
}

type loadContextParams struct {
	SessionID string `json:"sessionId" schema:"note=a unique prefix will do"`
}

func (p *loadContextParams) check() error {
	if strings.TrimSpace(p.SessionID) == "" {
		return ledger.InvalidField("sessionId", "is required (a session id, or a unique prefix of one; list_sessions shows them)")
	}
	return nil
}

// restorationInfo tells a resuming agent where the session stands (seed 001).
type restorationInfo struct {
	ThoughtCount         int               `json:"thoughtCount"`
	CurrentThoughtNumber int               `json:"currentThoughtNumber"`
	BranchCount          int               `json:"branchCount"`
	Branches             []ledger.BranchID `json:"branches,omitempty"`
	Completed            bool              `json:"completed,omitempty"`
	Message              string            `json:"message"`
}

type loadContextReply struct {
	stageInfo
	Session         ledger.Session                    `json:"session"`
	RestorationInfo restorationInfo                   `json:"restorationInfo"`
	Integrity       *ledger.IntegrityValidationResult `json:"integrity,omitempty"`
	// Next says what to call when the resume moved the stage back.
	Next string `json:"next,omitempty"`
}

func loadContext(ctx context.Context, c *call, p *loadContextParams) (any, error) {
	id, err := c.ledger.Resolve(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	v, err := c.ledger.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	c.setSession(id)
	g := v.Graph
	current := 0
	if main := g.MainChain(); len(main) > 0 {
		current = main[len(main)-1].Data.ThoughtNumber
	}
	next, _ := g.NextNumber("")
	r := &loadContextReply{
		Session: v.Session,
		RestorationInfo: restorationInfo{
			ThoughtCount:         v.Session.ThoughtCount,
			CurrentThoughtNumber: current,
			BranchCount:          v.Session.BranchCount,
			Branches:             g.BranchIDs(),
			Completed:            g.Completed(),
			Message:              fmt.Sprintf("Next thought will be #%d", next),
		},
	}
	if !v.Integrity.Valid {
		r.Integrity = &v.Integrity
	}
	return r, nil
}

// listSessionsParams are list_sessions' arguments; limit and offset follow
// the same rules as session list (checkLimit).
type listSessionsParams struct {
	pageArgs
	Tag string `json:"tag,omitempty" schema:"note=only sessions with this tag, ignoring case"`
}

// listSessionsReply is a page of sessions, most recently updated first:
// sessions, total (those that pass the tag filter), offset, limit,
// hasMore and count, as session list gives them.
type listSessionsReply struct {
	ledger.SessionPage
	Count           int    `json:"count"`
	ActiveSessionID string `json:"activeSessionId,omitempty"`
}

// listSessions answers through the ledger's paged listing, which a store
// with a session index serves from it: a page costs what the page holds,
// not what the ledger does (it used to read every session's summary on
// every call: 150–480 ms on 100,000 sessions).
func listSessions(ctx context.Context, c *call, p *listSessionsParams) (any, error) {
	f := ledger.SessionFilter{Limit: deref(p.Limit), Offset: p.Offset}
	if p.Tag != "" {
		f.Tags = []string{p.Tag}
	}
	page, err := c.ledger.Sessions(ctx, f)
	if err != nil {
		return nil, err
	}
	return &listSessionsReply{SessionPage: page, Count: len(page.Sessions), ActiveSessionID: c.sessionID}, nil
}

type navigateParams struct {
	Project string `json:"project,omitempty"`
	// Create asks for the project to be created if it does not exist.
	Create bool   `json:"create,omitempty"`
	Task   string `json:"task,omitempty"`
	Aspect string `json:"aspect,omitempty"`
	Domain string `json:"domain,omitempty"`
}

func (p *navigateParams) check() error {
	for _, f := range []struct {
		name string
		v    *string
	}{{"project", &p.Project}, {"task", &p.Task}, {"aspect", &p.Aspect}, {"domain", &p.Domain}} {
		if err := checkContext(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

type navigateReply struct {
	stageInfo
	Navigation navigation `json:"navigation"`
	Domain     string     `json:"domain,omitempty"`
	// Project is the project whose ledger this connection writes to.
	Project string `json:"project"`
	Note    string `json:"note,omitempty"`
}

func navigate(ctx context.Context, c *call, p *navigateParams) (any, error) {
	r := &navigateReply{}
	if p.Project != "" {
		note, err := c.enterProject(ctx, p.Project, "project", p.Create)
		if err != nil {
			return nil, err
		}
		r.Note = note
		c.nav.Project = p.Project
	}
	if p.Task != "" {
		c.nav.Task = p.Task
	}
	if p.Aspect != "" {
		c.nav.Aspect = p.Aspect
	}
	if p.Domain != "" {
		c.domain = p.Domain
		if c.stage < StageCipherLoaded {
			r.Note = strings.TrimSpace(r.Note + " The domain takes effect (stage 3) once the cipher is loaded.")
		}
	}
	r.Navigation, r.Domain, r.Project = c.nav, c.domain, c.project
	return r, nil
}

// enterProject moves the connection to a project's ledger when the server
// can (Options.OpenProject); otherwise it returns a note saying where
// sessions are stored.
func (c *call) enterProject(ctx context.Context, project, field string, create bool) (string, error) {
	open := c.g.opts.OpenProject
	if open == nil {
		if project == c.project {
			return "", nil
		}
		return fmt.Sprintf("Project scope %q recorded; this server keeps every session in project %q.", project, c.project), nil
	}
	if project == c.project {
		return "", nil
	}
	l, err := c.openProject(ctx, project, create)
	if ledger.CodeOf(err) == CodePermissionDenied {
		return "", err
	}
	if err != nil {
		e := ledger.InvalidField(field, "cannot open project %q: %v", project, err)
		if errors.Is(err, ErrNoProject) {
			e = ledger.InvalidField(field, "%v; pass create: true to start it", err)
		}
		e.Err = err
		return "", e
	}
	had := c.sessionID
	c.switchLedger(l, project)
	if had != "" {
		return fmt.Sprintf("Now in project %q; the active session belonged to the previous project and was let go.", project), nil
	}
	return fmt.Sprintf("Now in project %q.", project), nil
}

type rootInfo struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

type listRootsReply struct {
	Roots     []rootInfo `json:"roots"`
	Count     int        `json:"count"`
	BoundRoot string     `json:"boundRoot,omitempty"`
}

func listRoots(ctx context.Context, c *call, _ *noParams) (any, error) {
	roots, err := c.clientRoots(ctx)
	if err != nil {
		return nil, err
	}
	return &listRootsReply{Roots: roots, Count: len(roots), BoundRoot: c.boundRoot}, nil
}

// errNoRoots is returned when the client does not answer roots/list.
var errNoRoots = errors.New("the client does not offer roots")

// clientRoots asks the client for its roots (roots/list).
func (c *call) clientRoots(ctx context.Context) ([]rootInfo, error) {
	if c.session == nil {
		return nil, ledger.Errorf(ledger.CodeInvalidOperation, "list_roots: %w", errNoRoots)
	}
	timeout := c.g.opts.RootsTimeout
	if timeout <= 0 {
		timeout = DefaultRootsTimeout
	}
	// A client that advertised roots but never answers would otherwise
	// hold the call, and the connection's lock, for ever.
	askCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := c.session.ListRoots(askCtx, &mcp.ListRootsParams{})
	if err != nil {
		if askCtx.Err() != nil && ctx.Err() == nil {
			e := ledger.Errorf(ledger.CodeInvalidOperation, "asking the client for its roots: no answer to roots/list within %s; answer roots/list, or pass bind_root a file:// URI from a client without the roots capability", timeout)
			return nil, e
		}
		var je *jsonrpc.Error
		if errors.As(err, &je) && je.Code == jsonrpc.CodeMethodNotFound {
			e := ledger.Errorf(ledger.CodeInvalidOperation, "list_roots: %w (it did not advertise the roots capability); bind_root still accepts a file:// URI", errNoRoots)
			e.Err = errNoRoots
			return nil, e
		}
		return nil, ledger.Errorf(ledger.CodeInternal, "asking the client for its roots: %w", err)
	}
	roots := make([]rootInfo, 0, len(res.Roots))
	for _, r := range res.Roots {
		if r != nil {
			roots = append(roots, rootInfo{URI: r.URI, Name: r.Name})
		}
	}
	return roots, nil
}

type bindRootParams struct {
	RootURI string `json:"rootUri"`
	Project string `json:"project,omitempty"`
	// Create asks for the project to be created if it does not exist.
	Create bool `json:"create,omitempty"`
}

func (p *bindRootParams) check() error {
	p.RootURI = strings.TrimSpace(p.RootURI)
	if p.RootURI == "" {
		return ledger.InvalidField("rootUri", "is required (a file:// URI, e.g. one list_roots returned)")
	}
	u, err := url.Parse(p.RootURI)
	if err != nil || u.Scheme != "file" || u.Path == "" {
		return ledger.InvalidField("rootUri", "must be a file:// URI, got %q", p.RootURI)
	}
	return checkContext("project", &p.Project)
}

type bindRootReply struct {
	stageInfo
	BoundRoot string `json:"boundRoot"`
	Project   string `json:"project"`
	// CodeRepository is the worktree whose own ledger the connection now
	// writes to, when the root is in an enabled one (see codeRoot).
	CodeRepository string `json:"codeRepository,omitempty"`
	Note           string `json:"note,omitempty"`
}

func bindRoot(ctx context.Context, c *call, p *bindRootParams) (any, error) {
	roots, err := c.clientRoots(ctx)
	switch {
	case errors.Is(err, errNoRoots), err == nil && len(roots) == 0:
		// Nothing to check against; take the agent's word.
	case err != nil:
		return nil, err
	case !withinRoots(p.RootURI, roots):
		uris := make([]string, len(roots))
		for i, r := range roots {
			uris[i] = r.URI
		}
		e := ledger.InvalidField("rootUri", "%q is not one of the client's roots (or inside one): %s", p.RootURI, strings.Join(uris, ", "))
		e.Details["roots"] = uris
		return nil, e
	}
	project := p.Project
	code, codeNote, err := c.codeRoot(ctx, p)
	if err != nil {
		return nil, err
	}
	switch {
	case code != "":
		project = code
	case project == "":
		project = projectName(p.RootURI)
	}
	note, err := c.enterProject(ctx, project, "project", p.Create)
	if err != nil {
		return nil, err
	}
	c.boundRoot = p.RootURI
	c.nav.Project = project
	r := &bindRootReply{BoundRoot: c.boundRoot, Project: project, Note: strings.TrimSpace(note + " " + codeNote)}
	if code != "" && c.g.opts.CodeRepo != nil {
		if repo := c.g.opts.CodeRepo(code); repo != nil {
			r.CodeRepository = repo.Worktree
		}
	}
	return r, nil
}

func withinRoots(uri string, roots []rootInfo) bool {
	for _, r := range roots {
		root := strings.TrimSuffix(r.URI, "/")
		if uri == r.URI || uri == root || strings.HasPrefix(uri, root+"/") {
			return true
		}
	}
	return false
}

// projectName derives a project name from a root's last path element:
// lower case, with anything but letters, digits, '.', '_' and '-' turned
// into '-'.
func projectName(uri string) string {
	u, err := url.Parse(uri)
	base := "root"
	if err == nil {
		if b := path.Base(strings.TrimSuffix(u.Path, "/")); b != "/" && b != "." && b != "" {
			base = b
		}
	}
	var b strings.Builder
	for _, r := range strings.ToLower(base) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-.")
	if name == "" {
		return "root"
	}
	return name
}
