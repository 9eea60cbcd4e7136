package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// MaxAppendAttempts bounds how often AddThought tries after another
// writer moved the chain. The store locks sessions across processes
// (SessionLocker), so a writer holds the session while it catches up,
// numbers and appends: it conflicts at most once — when another process
// wrote since its view was read — and retries at once, after a catch-up.
// Only writers that do not take the lock (an older binary) make it
// conflict again; this bounds how long they can.
const MaxAppendAttempts = 128

// lockSession takes the session's inter-process lock.
func (l *Ledger) lockSession(ctx context.Context, id string) (unlock func(), err error) {
	unlock, err = l.store.LockSession(ctx, id)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, storageError("lock session "+id, err)
	}
	return unlock, nil
}

// noPause is the wait before a retry after ErrConflict: none, since the
// session is locked and nobody who takes the lock can move it now.
func noPause(ctx context.Context, _ int) error { return ctx.Err() }

// Options configures a Ledger. The zero value is ready to use.
type Options struct {
	// Now is the clock for timestamps; default time.Now in UTC.
	Now func() time.Time
	// NewID makes session ids; default a random UUID v4.
	NewID func() string
	// Events, if set, receives an event after each commit.
	Events EventSink
	// MaxThoughtBytes bounds the text of a thought and of a critique, in
	// bytes; 0 means DefaultMaxThoughtBytes.
	MaxThoughtBytes int
}

// DefaultMaxThoughtBytes is the largest thought a ledger accepts unless
// configured otherwise. A thought is a step of reasoning, not a document:
// one megabyte is far above any real step, and far below the size at which
// one thought makes every later read of its session slow.
const DefaultMaxThoughtBytes = 1 << 20

// Ledger is the reasoning ledger service: it validates and numbers thoughts,
// has the store commit them, and keeps the one in-memory view of each
// session it has touched. It is safe for concurrent use; writes to different
// sessions proceed in parallel, writes to one session are serialised.
type Ledger struct {
	store  Store
	now    func() time.Time
	newID  func() string
	events EventSink
	// maxThought is Options.MaxThoughtBytes with its default applied.
	maxThought int

	// mu guards sessions and accessed, never across I/O.
	mu       sync.Mutex
	sessions map[string]*sessionState
	accessed map[string]time.Time // lastAccessedAt (kept by the store if it is an AccessKeeper)
	// accessOnce reads the store's access times the first time a listing
	// needs them, not when the ledger is made: on a large ledger they are
	// a large file, and a server's start or a write needs none of them.
	accessOnce sync.Once

	// lastWrite is when this ledger last committed (Unix nanoseconds):
	// the background warm-up of the store's index gives way to writers.
	lastWrite atomic.Int64
	// pulling counts the pulls under way (see Pulling): while one is, a
	// View reads the store rather than a view the pull may have outdated.
	pulling atomic.Int32
}

// sessionState is the ledger's single view of one session.
type sessionState struct {
	// mu guards the fields below and is held across store.Append, so that
	// one session's chains move in one order and the graph always matches
	// what was committed.
	mu sync.Mutex
	id string
	// dead is set when the session turned out not to exist and the state
	// left the cache; a goroutine that waited for mu must look again.
	dead      bool
	meta      SessionMeta
	graph     *Graph // nil until loaded
	integrity IntegrityValidationResult
	// shared is set once graph was handed out in a SessionView; the next
	// write copies it first, so snapshots never change under their readers.
	shared bool
}

// MaxThoughtBytes is the largest thought, in bytes, this ledger accepts.
func (l *Ledger) MaxThoughtBytes() int { return l.maxThought }

// CheckThought checks a thought as AddThought would before it needs the
// session: its size and the rules of ThoughtInput.Validate. A caller uses it
// to refuse a thought before it creates a session for it.
func (l *Ledger) CheckThought(in ThoughtInput) error {
	if err := l.checkSize("thought", in.Thought); err != nil {
		return err
	}
	if _, err := in.revisionFromCipher(); err != nil {
		return err
	}
	return in.Validate()
}

// checkSize refuses text over the thought limit, naming the field, the
// size and the limit, so that the caller knows what to shorten and by how
// much.
func (l *Ledger) checkSize(field, text string) error {
	if len(text) <= l.maxThought {
		return nil
	}
	return InvalidField(field, "is %d bytes; the limit is %d bytes (THOUGHTBOX_MAX_THOUGHT_BYTES): split it into several thoughts", len(text), l.maxThought).
		with("limit", l.maxThought).with("size", len(text))
}

// New returns a Ledger over store.
func New(store Store, opts Options) *Ledger {
	l := &Ledger{
		store:      store,
		now:        opts.Now,
		newID:      opts.NewID,
		events:     opts.Events,
		sessions:   map[string]*sessionState{},
		accessed:   map[string]time.Time{},
		maxThought: opts.MaxThoughtBytes,
	}
	if l.maxThought <= 0 {
		l.maxThought = DefaultMaxThoughtBytes
	}
	if l.now == nil {
		l.now = func() time.Time { return time.Now().UTC() }
	}
	if l.newID == nil {
		l.newID = uuid.NewString
	}
	return l
}

// StartSession creates an empty session. The title is trimmed and must have
// 1 to MaxTitleLength characters; blank and repeated tags are dropped.
func (l *Ledger) StartSession(ctx context.Context, p CreateSessionParams, author Author) (Session, error) {
	p, err := p.normalize()
	if err != nil {
		return Session{}, err
	}
	now := l.now()
	meta := SessionMeta{
		ID:          l.newID(),
		Title:       p.Title,
		Description: p.Description,
		Tags:        p.Tags,
		CreatedAt:   now,
		UpdatedAt:   now,
	}
	stored, tip, err := l.store.CreateSession(ctx, meta, author)
	if err != nil {
		return Session{}, storageError("create session", err)
	}
	if stored.ID == "" {
		stored.ID = meta.ID
	}
	st := &sessionState{id: stored.ID, meta: stored, graph: newGraph(stored.ID)}
	st.graph.main.tip = tip
	st.integrity = IntegrityValidationResult{Valid: true, SessionExists: true, ManifestExists: true, ManifestValid: true}

	st.mu.Lock()
	defer st.mu.Unlock()
	l.mu.Lock()
	l.sessions[st.id] = st
	l.mu.Unlock()
	l.touch(st.id, now)
	s := l.sessionLocked(st)
	l.publish(Event{Type: EventSessionStarted, SessionID: s.ID, Timestamp: now, Data: map[string]any{
		"sessionId": s.ID, "title": s.Title, "tags": s.Tags,
	}})
	return s, nil
}

// AddThought validates, numbers and commits one thought, then adds it to
// the session's graph. Validation failures are *Error with the field at
// fault; nothing is stored then.
//
// The rules, per chain (the main chain, or one branch):
//   - An omitted thoughtNumber is the chain's last committed number plus
//     one, skipping numbers already used; a new branch starts at
//     branchFromThought+1. An explicit number may leave gaps or run
//     backwards, but one already used on the chain is refused
//     (ErrNumberTaken). totalThoughts defaults to, and is raised to, the
//     thought's number.
//   - branchId and branchFromThought come together; the origin must be a
//     main-chain thought, and every later thought of the branch must name
//     the same origin.
//   - isRevision and revisesThought come together. A main-chain thought
//     revises a main-chain thought; a branch thought revises a thought of
//     its branch or, if the branch has no such number, a main-chain thought
//     at or before the fork point. A missing target is ErrThoughtNotFound.
//   - nextThoughtNeeded=false marks the session completed (see
//     Graph.Completed); later thoughts are still accepted.
//
// If another writer moved the chain first (ErrConflict from the store), the
// session is reloaded and the thought planned again: an omitted number is
// renumbered, an explicit one that is now taken is refused with
// ErrNumberTaken. Nothing stored is ever overwritten.
func (l *Ledger) AddThought(ctx context.Context, sessionID string, in ThoughtInput, author Author) (*AddResult, error) {
	if err := l.checkSize("thought", in.Thought); err != nil {
		return nil, err
	}
	fromCipher, err := in.revisionFromCipher()
	if err != nil {
		return nil, err
	}
	branch, err := in.validate()
	if err != nil {
		return nil, err
	}
	st, err := l.acquire(ctx, sessionID, false)
	if err != nil {
		return nil, err
	}
	defer st.mu.Unlock()
	unlock, err := l.lockSession(ctx, st.id)
	if err != nil {
		return nil, err
	}
	defer unlock()

	var p plan
	var result *AddResult
	err = Retry(ctx, MaxAppendAttempts, noPause, func(attempt int) error {
		if attempt > 1 {
			// The chain moved under the last attempt: take what it gained.
			if err := l.catchUpLocked(ctx, st, p); err != nil {
				return err
			}
		}
		var err error
		p, err = st.graph.plan(in, branch)
		if err == nil && attempt == 1 && !p.newBranch {
			// Holding the session, catch up with what other processes
			// wrote before trying, instead of failing once on
			// compare-and-swap when they took turns with us.
			if err := l.catchUp(ctx, st, p, false); err != nil {
				return err
			}
			p, err = st.graph.plan(in, branch)
		}
		if err != nil {
			if e := AsError(err); fromCipher && e.Details["field"] == "revisesThought" {
				e.Message += fmt.Sprintf(" (the cipher line's ^S%d)", *in.RevisesThought)
			}
			return err
		}
		p.data.Timestamp = l.now()
		meta := st.meta
		meta.UpdatedAt = p.data.Timestamp
		commit, err := l.store.Append(ctx, AppendRequest{
			Meta:        meta,
			Branch:      string(p.branch),
			ExpectedTip: p.tip,
			NewBranch:   p.newBranch,
			Thought:     p.data,
			Revises:     p.revises,
			Author:      author,
		})
		if err != nil {
			serr := storageError(fmt.Sprintf("append thought %d to %s", p.data.ThoughtNumber, chainName(p.branch)), err)
			if errors.Is(err, ErrConflict) {
				return Again(serr)
			}
			return serr
		}
		result, err = l.commitLocked(st, p, commit)
		return err
	})
	return result, err
}

// commitLocked brings the view up to date with a committed thought and
// announces it. This is the only place a session's graph grows.
func (l *Ledger) commitLocked(st *sessionState, p plan, commit CommitID) (*AddResult, error) {
	l.lastWrite.Store(time.Now().UnixNano())
	if st.shared {
		st.graph = st.graph.clone()
		st.shared = false
	}
	wasCompleted := st.graph.Completed()
	n, err := st.graph.apply(StoredThought{Data: p.data, Commit: commit})
	if err != nil {
		// Unreachable while plan and apply agree. The thought is stored, so
		// drop the view rather than let it drift; the next use reloads it.
		st.graph = nil
		return nil, Errorf(CodeInternal, "thought %d was committed as %s, but the session view could not follow (it will be reloaded): %w",
			p.data.ThoughtNumber, commit, err)
	}
	st.meta.UpdatedAt = p.data.Timestamp
	l.touch(st.id, p.data.Timestamp)
	res := &AddResult{
		Thought:   n.Data,
		Node:      n.ThoughtNode,
		Session:   l.sessionLocked(st),
		Completed: !n.Data.NextThoughtNeeded,
		Reopened:  wasCompleted && n.Data.NextThoughtNeeded,
		NewBranch: p.newBranch,
		Branches:  st.graph.BranchIDs(),
	}
	e := thoughtEvent(st.id, n, p)
	e.ThoughtCount = st.graph.Len()
	l.publish(e)
	return res, nil
}

// catchUpLocked brings st's view up to date after p lost a race on its
// chain: with only the thoughts the chain gained, when the store can say
// which (ChainCatchUp), else by loading the whole session. Loading a long
// session takes longer than another process takes to append its next
// thought, so a loser that reloaded everything before each retry lost
// every retry and its auto-numbered thought was refused.
func (l *Ledger) catchUpLocked(ctx context.Context, st *sessionState, p plan) error {
	return l.catchUp(ctx, st, p, true)
}

// catchUp is catchUpLocked; with lost unset the chain may not have moved
// at all (a writer that holds the session checks before its first try),
// and finding nothing new is no reason to reload.
func (l *Ledger) catchUp(ctx context.Context, st *sessionState, p plan, lost bool) error {
	c := st.graph.main
	if p.branch != "" {
		c = st.graph.branches[p.branch]
	}
	if p.newBranch || c == nil || c.tip == "" {
		return l.reloadLocked(ctx, st)
	}
	thoughts, tip, ok, err := l.store.ThoughtsSince(ctx, st.id, string(p.branch), c.tip)
	if err == nil && ok && len(thoughts) == 0 && !lost && tip == c.tip {
		return nil
	}
	if err != nil || !ok || len(thoughts) == 0 {
		return l.reloadLocked(ctx, st)
	}
	if st.shared {
		st.graph = st.graph.clone()
		st.shared = false
		c = st.graph.main
		if p.branch != "" {
			c = st.graph.branches[p.branch]
		}
	}
	for _, t := range thoughts {
		if t.Data.BranchID != string(p.branch) {
			return l.reloadLocked(ctx, st)
		}
		if _, err := st.graph.applyTo(c, t); err != nil {
			return l.reloadLocked(ctx, st)
		}
		if t.Data.Timestamp.After(st.meta.UpdatedAt) {
			st.meta.UpdatedAt = t.Data.Timestamp
		}
	}
	if c.tip != tip {
		return l.reloadLocked(ctx, st)
	}
	return nil
}

// Load reads a session from the store afresh, replacing the ledger's view
// of it (picking up what other processes wrote), and returns a snapshot.
// A session that fails its integrity check is still loaded as far as it can
// be read; see SessionView.Integrity.
func (l *Ledger) Load(ctx context.Context, id string) (*SessionView, error) {
	st, err := l.acquire(ctx, id, true)
	if err != nil {
		return nil, err
	}
	defer st.mu.Unlock()
	v := l.viewLocked(st)
	l.publish(Event{Type: EventSessionLoaded, SessionID: id, Timestamp: l.now(), Data: map[string]any{
		"sessionId":    id,
		"thoughtCount": v.Session.ThoughtCount,
		"branchCount":  v.Session.BranchCount,
	}})
	return v, nil
}

// View returns a snapshot of a session, reading the store only if the
// ledger has not loaded the session yet. Use it for reads; use Load to
// resume a session another process may have written to.
func (l *Ledger) View(ctx context.Context, id string) (*SessionView, error) {
	if l.pulling.Load() > 0 {
		return l.viewFromStore(ctx, id)
	}
	st, err := l.acquire(ctx, id, false)
	if err != nil {
		return nil, err
	}
	defer st.mu.Unlock()
	return l.viewLocked(st), nil
}

// Forget drops this ledger's views of sessions that changed in the store
// behind its back — a pull that moved their refs — so that the next read
// (View, a listing, a search, the next thought) loads each afresh instead
// of answering from the view it held. Sessions it never read are left
// alone. Its own writes never need this: they keep the views current.
func (l *Ledger) Forget(ids ...string) {
	for _, id := range ids {
		l.mu.Lock()
		st := l.sessions[id]
		l.mu.Unlock()
		if st != nil {
			// Waits for a write in progress on the session: the view it
			// leaves is the one to drop.
			st.mu.Lock()
			st.graph = nil
			st.shared = false
			st.mu.Unlock()
		}
	}
}

func (l *Ledger) viewLocked(st *sessionState) *SessionView {
	st.shared = true
	l.touch(st.id, l.now())
	return &SessionView{Session: l.sessionLocked(st), Integrity: st.integrity, Graph: st.graph}
}

// loadAccess merges the store's access times into l.accessed, once,
// keeping the later of two times.
func (l *Ledger) loadAccess() {
	l.accessOnce.Do(func() {
		stored := l.store.Accessed()
		l.mu.Lock()
		for id, t := range stored {
			if t.After(l.accessed[id]) {
				l.accessed[id] = t
			}
		}
		l.mu.Unlock()
	})
}

// List summarises every session, most recently updated first.
func (l *Ledger) List(ctx context.Context) ([]Session, error) {
	sums, err := l.store.ListSessions(ctx)
	if err != nil {
		return nil, storageError("list sessions", err)
	}
	l.loadAccess()
	out := make([]Session, len(sums))
	l.mu.Lock()
	for i, s := range sums {
		out[i] = session(s.Meta, s.ThoughtCount, s.BranchCount, l.accessed[s.Meta.ID])
	}
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b Session) int {
		return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// Resolve turns a session id prefix into the full id, as git does with short
// commit ids (ignoring case). A full id wins even if it prefixes another. No
// match is ErrSessionNotFound; several are an INVALID_PAYLOAD error whose
// cause is an *AmbiguousIDError listing the candidates.
func (l *Ledger) Resolve(ctx context.Context, prefix string) (string, error) {
	prefix = strings.TrimSpace(prefix)
	if prefix == "" {
		return "", InvalidField("sessionId", "must not be empty")
	}
	// An exact id wins over the ids it is a prefix of, so when the store
	// can tell that one exists, no listing is needed.
	if found, err := l.store.HasSession(ctx, prefix); err == nil && found {
		return prefix, nil
	}
	sums, err := l.store.ListSessions(ctx)
	if err != nil {
		return "", storageError("list sessions", err)
	}
	var candidates []string
	lower := strings.ToLower(prefix)
	for _, s := range sums {
		id := s.Meta.ID
		if id == prefix {
			return id, nil
		}
		if strings.HasPrefix(strings.ToLower(id), lower) {
			candidates = append(candidates, id)
		}
	}
	switch len(candidates) {
	case 0:
		if e := l.deletedError(prefix); e != nil {
			return "", e
		}
		e := sessionNotFound(prefix)
		if near := closestIDs(sums, lower, 3); len(near) > 0 {
			e.Message += fmt.Sprintf("; the closest ids: %s", strings.Join(near, ", "))
			e = e.with("closest", near)
		}
		return "", e
	case 1:
		return candidates[0], nil
	}
	slices.Sort(candidates)
	amb := &AmbiguousIDError{Prefix: prefix, Candidates: candidates}
	return "", Errorf(CodeInvalidPayload, "%w", amb).
		with("prefix", prefix).
		with("candidates", slices.Clone(candidates))
}

// closestIDs lists up to n session ids that share the longest prefix with
// the lower-cased id asked for (a mistyped or truncated id usually keeps
// its first characters), best first; none when nothing shares even one.
func closestIDs(sums []SessionSummary, lower string, n int) []string {
	type near struct {
		id     string
		common int
	}
	var all []near
	for _, s := range sums {
		id := strings.ToLower(s.Meta.ID)
		c := 0
		for c < len(id) && c < len(lower) && id[c] == lower[c] {
			c++
		}
		if c > 0 {
			all = append(all, near{s.Meta.ID, c})
		}
	}
	slices.SortFunc(all, func(a, b near) int { return cmp.Or(b.common-a.common, strings.Compare(a.id, b.id)) })
	var out []string
	for _, x := range all[:min(n, len(all))] {
		out = append(out, x.id)
	}
	return out
}

// Verify checks a session's integrity: the store's check and, when that
// passes, the graph rules (see BuildGraph), which need the session read.
// A damaged session is a result with Valid false, not an error.
func (l *Ledger) Verify(ctx context.Context, id string, opts VerifyOptions) (IntegrityValidationResult, error) {
	res, err := l.store.Verify(ctx, id, opts)
	if err != nil {
		return res, l.loadError(id, "verify", err)
	}
	if !res.Valid {
		return res, nil
	}
	s, err := l.store.LoadSession(ctx, id)
	if err != nil {
		return res, l.loadError(id, "load", err)
	}
	if s.Meta.ID == "" {
		s.Meta.ID = id
	}
	return withProblems(res, BuildGraph(s).Problems()), nil
}

// acquire returns the session's state, locked and loaded; with fresh it
// reloads from the store even if already loaded.
func (l *Ledger) acquire(ctx context.Context, id string, fresh bool) (*sessionState, error) {
	if id == "" {
		return nil, InvalidField("sessionId", "must not be empty")
	}
	for {
		l.mu.Lock()
		st := l.sessions[id]
		if st == nil {
			st = &sessionState{id: id}
			l.sessions[id] = st
		}
		l.mu.Unlock()

		st.mu.Lock()
		if st.dead {
			st.mu.Unlock()
			continue
		}
		if st.graph != nil && !fresh {
			return st, nil
		}
		if err := l.reloadLocked(ctx, st); err != nil {
			if errors.Is(err, ErrSessionNotFound) {
				// Forget the id, so that unknown ids do not accumulate.
				st.dead = true
				l.mu.Lock()
				delete(l.sessions, id)
				l.mu.Unlock()
			}
			st.mu.Unlock()
			return nil, err
		}
		return st, nil
	}
}

// reloadLocked replaces st's view with what the store holds now.
func (l *Ledger) reloadLocked(ctx context.Context, st *sessionState) error {
	s, err := l.store.LoadSession(ctx, st.id)
	if err != nil {
		return l.loadError(st.id, "load", err)
	}
	if s.Meta.ID == "" {
		s.Meta.ID = st.id
	}
	st.graph = BuildGraph(s)
	st.shared = false
	st.meta = s.Meta
	st.integrity = withProblems(s.Integrity, st.graph.Problems())
	return nil
}

// deletedError is the SESSION_NOT_FOUND for a session that was deleted
// here, naming the way back; nil otherwise.
func (l *Ledger) deletedError(id string) *Error {
	if gone, _ := l.store.IsDeleted(id); !gone {
		return nil
	}
	e := Errorf(CodeSessionNotFound, "session %q was deleted: restore brings it back (session {subOperation: \"restore\", sessionId}, or thoughtbox restore <id>): %w", id, ErrSessionNotFound).with("sessionId", id)
	e.Details["deleted"] = true
	return e
}

func (l *Ledger) loadError(id, op string, err error) error {
	if errors.Is(err, ErrSessionNotFound) {
		if e := l.deletedError(id); e != nil && op != "restore" {
			return e
		}
		return sessionNotFound(id)
	}
	return storageError(fmt.Sprintf("%s session %q", op, id), err)
}

// withProblems adds graph problems to a store's integrity result.
func withProblems(r IntegrityValidationResult, problems []string) IntegrityValidationResult {
	if len(problems) == 0 {
		return r
	}
	r.Valid = false
	r.Errors = append(slices.Clone(r.Errors), problems...)
	return r
}

func (l *Ledger) touch(id string, t time.Time) {
	l.mu.Lock()
	newer := t.After(l.accessed[id])
	if newer {
		l.accessed[id] = t
	}
	l.mu.Unlock()
	if newer {
		l.store.RecordAccess(id, t)
	}
}

func (l *Ledger) sessionLocked(st *sessionState) Session {
	l.mu.Lock()
	accessed := l.accessed[st.id]
	l.mu.Unlock()
	return session(st.meta, st.graph.Len(), st.graph.BranchCount(), accessed)
}

// session assembles a Session; lastAccessedAt is never before updatedAt.
func session(m SessionMeta, thoughts, branches int, accessed time.Time) Session {
	tags := m.Tags
	if tags == nil {
		tags = []string{}
	}
	if accessed.Before(m.UpdatedAt) {
		accessed = m.UpdatedAt
	}
	return Session{
		ID:             m.ID,
		Title:          m.Title,
		Description:    m.Description,
		Tags:           slices.Clone(tags),
		ThoughtCount:   thoughts,
		BranchCount:    branches,
		PartitionPath:  m.PartitionPath,
		CreatedAt:      m.CreatedAt,
		UpdatedAt:      m.UpdatedAt,
		LastAccessedAt: accessed,
	}
}

func (l *Ledger) publish(e Event) {
	if l.events != nil {
		l.events.Publish(e)
	}
}
