package gateway

// The session family (seed 000, "Session Tool"): the session operation and
// its sub-operations — list, get, search, resume, export, analyze,
// extract_learnings, discovery — named by "operation" inside args, as
// mental_models does.

import (
	"context"
	"strings"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// sessionOps is the table of the session sub-operations, in the order the
// gateway description and error messages list them. It is never changed.
var sessionOps = []subOp{
	sub("list", sessionList),
	sub("get", sessionGet),
	sub("search", sessionSearch),
	sub("resume", sessionResume), // load_context under another name (seed 004)
	sub("export", sessionExport).writing(),
	sub("analyze", sessionAnalyze),
	sub("extract_learnings", sessionLearnings).writing(),
	sub("discovery", sessionDiscovery),
	sub("update", sessionUpdate).writing(),
	sub("delete", sessionDelete).writing(),
	sub("restore", sessionRestore).writing(),
	sub("list_deleted", sessionListDeleted),
}

const sessionArgsNote = "update changes the session with one commit, its thoughts untouched (private, only in a code repository, marks it never to be pushed, with no commit); delete moves its refs under refs/thoughtbox/deleted/ with a record, and restore brings it back;" +
	" sessionId defaults to the active session (not for delete and restore)"

// sessionOp runs a session sub-operation.
func sessionOp(ctx context.Context, c *call) (any, error) {
	return runSubOp(ctx, c)
}

// sessionResume is load_context under another name, with the one step
// back seed 000's state machine draws: resuming a different session from
// stage 2 or 3 takes the connection back to stage 1, so that the cipher is
// offered again before thoughts go into the session just resumed.
func sessionResume(ctx context.Context, c *call, p *loadContextParams) (any, error) {
	prev := c.sessionID
	reply, err := loadContext(ctx, c, p)
	if err != nil {
		return nil, err
	}
	r := reply.(*loadContextReply)
	if r.Session.ID != prev && c.stage >= StageCipherLoaded {
		c.stepBack(StageInitComplete, "session resume (different session)")
		r.Next = "this connection is back at stage 1 for the session it resumed: call cipher to record thoughts again"
	}
	return r, nil
}

// viewOf resolves the session an operation names (or the active one) and
// returns the ledger's snapshot of it.
func (c *call) viewOf(ctx context.Context, sessionID string) (*ledger.SessionView, error) {
	id, err := c.activeSession(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return c.ledger.View(ctx, id)
}

// sessionListParams is seed 002's SessionFilter, plus project and task
// (seed 000).
type sessionListParams struct {
	Tags      []string `json:"tags,omitempty"`
	Search    string   `json:"search,omitempty"`
	Task      string   `json:"task,omitempty"`
	Project   string   `json:"project,omitempty"`
	Limit     *int     `json:"limit,omitempty" schema:"note=1-100, 20"`
	Offset    int      `json:"offset,omitempty"`
	SortBy    string   `json:"sortBy,omitempty" schema:"enum=createdAt|updatedAt|title"`
	SortOrder string   `json:"sortOrder,omitempty" schema:"enum=asc|desc"`
}

func (p *sessionListParams) check() error {
	if err := checkLimit(p.Limit); err != nil {
		return err
	}
	return checkContext("project", &p.Project)
}

// checkLimit refuses an explicit limit outside 1 to ledger.MaxListLimit
// (an absent one means the default).
func checkLimit(limit *int) error {
	if limit != nil && (*limit < 1 || *limit > ledger.MaxListLimit) {
		return ledger.InvalidField("limit", "must be between 1 and %d, got %d", ledger.MaxListLimit, *limit)
	}
	return nil
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

type sessionListReply struct {
	ledger.SessionPage
	Count           int    `json:"count"`
	Project         string `json:"project"`
	ActiveSessionID string `json:"activeSessionId,omitempty"`
}

func sessionList(ctx context.Context, c *call, p *sessionListParams) (any, error) {
	l, project := c.ledger, c.project
	if p.Project != "" && p.Project != c.project {
		if c.g.opts.OpenProject == nil {
			return nil, ledger.InvalidField("project", "this server keeps every session in project %q; got %q", c.project, p.Project)
		}
		var err error
		if l, err = c.openProject(ctx, p.Project, false); err != nil {
			e := ledger.InvalidField("project", "cannot open project %q: %v", p.Project, err)
			e.Err = err
			return nil, e
		}
		project = p.Project
	}
	page, err := l.Sessions(ctx, ledger.SessionFilter{
		Tags: p.Tags, Search: p.Search, Task: p.Task,
		Limit: deref(p.Limit), Offset: p.Offset, SortBy: p.SortBy, SortOrder: p.SortOrder,
	})
	if err != nil {
		return nil, err
	}
	r := &sessionListReply{SessionPage: page, Count: len(page.Sessions), Project: project}
	if l == c.ledger {
		r.ActiveSessionID = c.sessionID
	}
	return r, nil
}

type sessionIDParams struct {
	SessionID string `json:"sessionId,omitempty"`
}

// branchDetail is one branch with its thoughts.
type branchDetail struct {
	ID          ledger.BranchID      `json:"id"`
	FromThought int                  `json:"fromThought"`
	Origin      string               `json:"origin,omitempty"`
	Thoughts    []ledger.ThoughtNode `json:"thoughts"`
}

// revisionDetail places a revision in the revision index.
type revisionDetail struct {
	NodeID          string          `json:"nodeId"`
	ThoughtNumber   int             `json:"thoughtNumber"`
	BranchID        ledger.BranchID `json:"branchId,omitempty"`
	RevisesThought  int             `json:"revisesThought"`
	RevisesNode     string          `json:"revisesNode,omitempty"`
	RevisionDepth   int             `json:"revisionDepth"`
	RevisionChainID string          `json:"revisionChainId"`
}

// sessionGetReply is the whole session.
type sessionGetReply struct {
	Session   ledger.Session                    `json:"session"`
	Completed bool                              `json:"completed"`
	Integrity *ledger.IntegrityValidationResult `json:"integrity,omitempty"`
	MainChain []ledger.ThoughtNode              `json:"mainChain"`
	Branches  []branchDetail                    `json:"branches"`
	Revisions []revisionDetail                  `json:"revisions"`
}

func sessionGet(ctx context.Context, c *call, p *sessionIDParams) (any, error) {
	v, err := c.viewOf(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	g := v.Graph
	r := &sessionGetReply{Session: v.Session, Completed: g.Completed(), MainChain: g.MainChain(),
		Branches: []branchDetail{}, Revisions: []revisionDetail{}}
	if !v.Integrity.Valid {
		r.Integrity = &v.Integrity
	}
	for _, b := range g.Branches() {
		nodes, _ := g.Branch(b.ID)
		r.Branches = append(r.Branches, branchDetail{ID: b.ID, FromThought: b.FromThought, Origin: b.Origin, Thoughts: nodes})
	}
	for _, n := range g.Nodes() {
		if !n.Data.IsRevision || n.Data.RevisesThought == nil {
			continue
		}
		rev, _ := g.Revision(n.ID)
		r.Revisions = append(r.Revisions, revisionDetail{
			NodeID: n.ID, ThoughtNumber: n.Data.ThoughtNumber, BranchID: n.BranchID,
			RevisesThought: *n.Data.RevisesThought, RevisesNode: n.RevisesNode,
			RevisionDepth: rev.RevisionDepth, RevisionChainID: rev.RevisionChainID,
		})
	}
	return r, nil
}

type sessionSearchParams struct {
	Query  *string `json:"query"`
	Limit  *int    `json:"limit,omitempty"`
	Offset int     `json:"offset,omitempty"`
}

func (p *sessionSearchParams) check() error {
	if p.Query == nil {
		return ledger.InvalidField("query", "is required: words to find in session titles, tags and thoughts")
	}
	if p.Offset < 0 {
		return ledger.InvalidField("offset", "must be at least 0, got %d", p.Offset)
	}
	return checkLimit(p.Limit)
}

func sessionSearch(ctx context.Context, c *call, p *sessionSearchParams) (any, error) {
	return c.ledger.Search(ctx, ledger.SearchQuery{Query: *p.Query, Limit: deref(p.Limit), Offset: p.Offset})
}

type sessionUpdateParams struct {
	SessionID   string    `json:"sessionId,omitempty"`
	Title       *string   `json:"title,omitempty"`
	Description *string   `json:"description,omitempty"`
	Tags        *[]string `json:"tags,omitempty"`
	// Private marks the session private (true: no push ever sends it) or
	// lifts the mark; only where the ledger is kept in a code
	// repository, whose remotes are the code's.
	Private *bool `json:"private,omitempty"`
}

func (p *sessionUpdateParams) check() error {
	if p.Title == nil && p.Description == nil && p.Tags == nil && p.Private == nil {
		return ledger.InvalidField("title", "give at least one of title, description, tags and private")
	}
	return nil
}

type sessionUpdateReply struct {
	Session ledger.Session `json:"session"`
	Private *bool          `json:"private,omitempty"`
	Message string         `json:"message"`
}

// sessionUpdate changes a session's title, description or tags, and its
// private mark, which is kept beside the code repository's Git config,
// not in the ledger: the mark never travels with the session.
func sessionUpdate(ctx context.Context, c *call, p *sessionUpdateParams) (any, error) {
	id, err := c.activeSession(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	var msg []string
	if p.Private != nil {
		var repo *coderepo.Repo
		if c.g.opts.CodeRepo != nil {
			repo = c.g.opts.CodeRepo(c.project)
		}
		if repo == nil {
			return nil, ledger.InvalidField("private", "applies only where the ledger is kept in a code repository (thoughtbox enable); project %q shares through its own remotes", c.project)
		}
		if _, err := repo.SetPrivate(id, *p.Private); err != nil {
			return nil, err
		}
		msg = append(msg, map[bool]string{true: "Session marked private: no push sends it.", false: "Session no longer private: the next push sends it."}[*p.Private])
	}
	if p.Title == nil && p.Description == nil && p.Tags == nil {
		v, err := c.viewOf(ctx, id)
		if err != nil {
			return nil, err
		}
		return &sessionUpdateReply{Session: v.Session, Private: p.Private, Message: strings.Join(msg, " ")}, nil
	}
	s, err := c.ledger.UpdateSession(ctx, id, ledger.UpdateSessionParams{Title: p.Title, Description: p.Description, Tags: p.Tags}, c.author())
	if err != nil {
		return nil, err
	}
	msg = append(msg, "Session updated with one commit on its main chain; its thoughts are unchanged.")
	return &sessionUpdateReply{Session: s, Private: p.Private, Message: strings.Join(msg, " ")}, nil
}

type sessionDeleteParams struct {
	SessionID string `json:"sessionId"`
}

func (p *sessionDeleteParams) check() error {
	if strings.TrimSpace(p.SessionID) == "" {
		return ledger.InvalidField("sessionId", "is required: name the session to delete (or restore); it is never the active one by default")
	}
	return nil
}

type sessionDeleteReply struct {
	Deleted ledger.DeletedSession `json:"deleted"`
	// ActiveSessionDeleted says the session was the connection's active
	// one, which it no longer has.
	ActiveSessionDeleted bool   `json:"activeSessionDeleted,omitempty"`
	Message              string `json:"message"`
}

// sessionDelete takes a session out of the ledger, recoverably.
func sessionDelete(ctx context.Context, c *call, p *sessionDeleteParams) (any, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	id, err := c.ledger.Resolve(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	d, err := c.ledger.DeleteSession(ctx, id, c.author())
	if err != nil {
		return nil, err
	}
	r := &sessionDeleteReply{Deleted: d, Message: "Session deleted: it no longer lists, loads or searches; its history is kept under refs/thoughtbox/deleted/" + id + "/ and session {subOperation: \"restore\", sessionId: \"" + id + "\"} brings it back."}
	if c.sessionID == id {
		c.setSession("")
		c.deletedActive = id
		r.ActiveSessionDeleted = true
		r.Message += " It was this connection's active session: no session is active now, and a thought is refused until you call start_new, load_context or session restore (or send sessionTitle with the thought to start a new session)."
	}
	return r, nil
}

// sessionRestore brings a deleted session back.
func sessionRestore(ctx context.Context, c *call, p *sessionDeleteParams) (any, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	d, err := c.ledger.RestoreSession(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	return &sessionDeleteReply{Deleted: d, Message: "Session restored as it was when deleted."}, nil
}

// sessionListDeleted lists the deleted sessions.
func sessionListDeleted(ctx context.Context, c *call, p *pageArgs) (any, error) {
	list, err := c.ledger.DeletedSessions(ctx)
	if err != nil {
		return nil, err
	}
	page, info := pageOf(list, *p, "session list_deleted")
	return &listDeletedReply{Deleted: page, Count: len(page), pageInfo: info}, nil
}

type listDeletedReply struct {
	Deleted []ledger.DeletedSession `json:"deleted"`
	Count   int                     `json:"count"`
	pageInfo
}
