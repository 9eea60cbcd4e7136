package ledger

import (
	"context"
	"errors"
	"time"
)

// CommitID names the stored version that recorded a thought (a Git commit
// hash in gitstore). The ledger treats it as opaque.
type CommitID string

// Author is who a stored change is attributed to: the agent that wrote a
// thought, or the model that wrote a critique.
type Author struct {
	Name  string
	Email string
}

// SessionMeta is the part of a session that the store keeps beside the
// thoughts (the manifest's metadata).
type SessionMeta struct {
	ID          string
	Title       string
	Description string
	Tags        []string
	// PartitionPath is chosen by the store when the session is created.
	PartitionPath string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// AppendRequest asks the store to commit one thought to one chain.
type AppendRequest struct {
	Meta SessionMeta // UpdatedAt is the thought's timestamp
	// Branch is "" for the main chain, else the reasoning branch's id.
	Branch string
	// ExpectedTip is the chain's head that the ledger numbered against; the
	// store moves the chain only if it is still there (compare-and-swap).
	// For the first thought of a new branch it is the commit of the origin
	// thought on the main chain, which the branch is forked from.
	ExpectedTip CommitID
	// NewBranch is set for the first thought of a branch.
	NewBranch bool
	Thought   ThoughtData
	// Revises is the commit of the thought being revised, for revisions.
	Revises CommitID
	Author  Author
}

// CritiqueRequest asks the store to record a critique on a thought that is
// already committed: a second commit that rewrites the thought's file with
// its critique field, attributed to the model that wrote it.
type CritiqueRequest struct {
	Meta SessionMeta
	// Branch is "" for the main chain, else the branch the thought is on.
	Branch string
	// ExpectedTip is the chain's head (compare-and-swap, as for Append).
	ExpectedTip   CommitID
	ThoughtNumber int
	Critique      Critique
	Author        Author
}

// StoredThought is a thought as read back from the store.
type StoredThought struct {
	Data   ThoughtData
	Commit CommitID
}

// StoredBranch is one reasoning branch as read back from the store.
type StoredBranch struct {
	ID string
	// ForkCommit is the main-chain commit the branch was forked from.
	ForkCommit CommitID
	Thoughts   []StoredThought // in the order they were committed
	Tip        CommitID
}

// StoredSession is everything the store holds for one session.
type StoredSession struct {
	Meta     SessionMeta
	Main     []StoredThought // in the order they were committed
	MainTip  CommitID
	Branches []StoredBranch
	// Integrity is the result of the check made while loading.
	Integrity IntegrityValidationResult
}

// SessionSummary is what listing sessions needs without loading them.
type SessionSummary struct {
	Meta         SessionMeta
	ThoughtCount int
	BranchCount  int
}

// Store is everything the ledger asks of its storage, as one interface
// composed of named parts. gitstore.Store implements all of it, on disk
// (gitstore.Open) and in memory (gitstore.OpenMemory). Keeping it one
// interface is what makes a wrapper (metrics, read-only, a test spy) safe:
// one that misses a part does not compile, where a part found by type
// assertion would be lost without a word — the cross-process lock
// (writers would race), the session index (every listing would read every
// session), the access times. A wrapper embeds the store it wraps and
// overrides the methods it watches.
//
// Where a store has nothing to do for a part, the part says what it
// returns then (Prepare does nothing, LockSession hands back an unlock
// that does nothing, ThoughtsSince declines);
// each of these is a documented answer, not an absence.
// Implementations must be safe for concurrent use.
type Store interface {
	SessionStore
	ChainCatchUp
	AccessKeeper
	AccessLookup
	SessionChecker
	SessionEditor
	SessionLocker
	SessionDeleter
	SessionIndexer
	KnowledgeStore
	NotebookStore
}

// SessionStore is the core of a Store: sessions, their chains and their
// check.
type SessionStore interface {
	// CreateSession records a new, empty session and returns its metadata
	// with PartitionPath filled in, and the commit that started it.
	CreateSession(ctx context.Context, meta SessionMeta, author Author) (SessionMeta, CommitID, error)
	// Append commits one thought. It returns ErrConflict when the chain's
	// head is no longer req.ExpectedTip, and commits nothing in that case.
	Append(ctx context.Context, req AppendRequest) (CommitID, error)
	// AddCritique commits a critique onto a stored thought. It returns
	// ErrConflict when the chain moved, ErrThoughtNotFound when the chain
	// has no such thought, and commits nothing in either case.
	AddCritique(ctx context.Context, req CritiqueRequest) (CommitID, error)
	// LoadSession reads a whole session back. ErrSessionNotFound if absent.
	LoadSession(ctx context.Context, id string) (*StoredSession, error)
	// ListSessions summarises every session.
	ListSessions(ctx context.Context) ([]SessionSummary, error)
	// Verify checks one session's integrity without failing on damage.
	Verify(ctx context.Context, id string, opts VerifyOptions) (IntegrityValidationResult, error)
}

// VerifyOptions tunes Store.Verify.
type VerifyOptions struct {
	// Full rebuilds and hashes every version of every object reached, as
	// git fsck does, instead of taking packed deltas through their checked
	// base. It costs the square of a session's length; it checks what the
	// pack's writer computed (each object id), where the default check
	// relies on the pack index's CRC-32 for that and looks for damage
	// since. A store with no packed deltas checks the same either way.
	Full bool
}

// ChainCatchUp is the part of a Store that lets a writer that lost a race
// (ErrConflict) catch up with only what the chain gained, instead of
// loading the whole session again. A store that cannot tell declines
// (ok false) and the ledger loads the session.
type ChainCatchUp interface {
	// ThoughtsSince returns the thoughts committed on a chain ("" for the
	// main chain) after the commit since, oldest first, and the chain's
	// tip. ok is false when the store cannot tell (the chain moved in any
	// other way than by new thoughts); the caller then loads the session.
	ThoughtsSince(ctx context.Context, sessionID, branch string, since CommitID) (thoughts []StoredThought, tip CommitID, ok bool, err error)
}

// AccessKeeper is the part of a Store that keeps sessions' lastAccessedAt
// beyond the ledger's own memory (on disk, beyond the process). Access is
// not content: it is kept beside the ledger, not committed.
type AccessKeeper interface {
	// Accessed returns the last access time of every session it knows.
	Accessed() map[string]time.Time
	// RecordAccess notes an access; it must not block on I/O.
	RecordAccess(id string, t time.Time)
}

// AccessLookup is the part of a Store that lets a page of sessions read
// the access times of that page's sessions only, instead of a copy of
// every session's (AccessKeeper.Accessed).
type AccessLookup interface {
	AccessedAt(id string) time.Time
}

// SessionChecker is the part of a Store that makes naming a session by
// its whole id cost that session, not a listing of the ledger: Resolve
// asks it first.
type SessionChecker interface {
	// HasSession reports whether a session with exactly this id exists.
	HasSession(ctx context.Context, id string) (bool, error)
}

// SessionEditor is the part of a Store that changes a session's title,
// description and tags after it started.
type SessionEditor interface {
	// UpdateSession commits req.Meta as the session's metadata on its main
	// chain. It returns ErrConflict when the chain's head is no longer
	// req.ExpectedTip, and commits nothing in that case.
	UpdateSession(ctx context.Context, req UpdateSessionRequest) (CommitID, error)
}

// UpdateSessionRequest asks the store to record new session metadata.
type UpdateSessionRequest struct {
	Meta        SessionMeta // UpdatedAt is the time of the change
	ExpectedTip CommitID    // the main chain's head (compare-and-swap)
	// Changed names the fields that changed, for the commit message.
	Changed []string
	Author  Author
}

// SessionLocker is the part of a Store that makes writers of one session
// take turns instead of racing when several processes share the store:
// LockSession holds off every other holder of the same session's lock —
// in any process — until unlock is called. A store no other process can
// reach (memory) returns an unlock that does nothing. It is fair (two
// processes alternate) and bounded: a holder that does not let go makes it
// fail, naming the holder, after the store's lock timeout. Within a
// process the ledger already serialises a session's writers; this extends
// that across processes, and compare-and-swap (ErrConflict) stays the
// safety net.
type SessionLocker interface {
	LockSession(ctx context.Context, sessionID string) (unlock func(), err error)
}

// ErrConflict is returned by Store.Append when another writer moved the
// chain since it was read; the caller reloads and tries again.
var ErrConflict = errors.New("ledger: chain was moved by another writer")

// ErrSessionNotFound is returned when no session has the given id.
var ErrSessionNotFound = errors.New("session not found")
