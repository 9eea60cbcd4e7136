package ledger

import (
	"context"
	"errors"
	"time"
)

// DeletedSession is a session moved out of the ledger's listings, as its
// deletion record tells: who deleted it, when, and the refs it had.
type DeletedSession struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	DeletedAt time.Time `json:"deletedAt"`
	DeletedBy string    `json:"deletedBy"`
	Refs      []string  `json:"refs"`
	Record    string    `json:"record"`
}

// SessionDeleter is the part of a Store that deletes a session
// recoverably and restores it.
type SessionDeleter interface {
	DeleteSession(ctx context.Context, id, title string, author Author, at time.Time) (DeletedSession, error)
	RestoreSession(ctx context.Context, id string) (DeletedSession, error)
	DeletedSessions() ([]DeletedSession, error)
	// IsDeleted reports whether a session of this id was deleted (and not
	// restored), so that asking for it names the way back.
	IsDeleted(id string) (bool, error)
}

// DeleteSession takes a session out of the ledger: it no longer lists,
// loads or searches, and its history is kept aside (with a record of who
// deleted it and when) until RestoreSession brings it back.
func (l *Ledger) DeleteSession(ctx context.Context, id string, author Author) (DeletedSession, error) {
	st, err := l.acquire(ctx, id, true)
	if err != nil {
		return DeletedSession{}, err
	}
	defer st.mu.Unlock()
	ds, err := l.store.DeleteSession(ctx, id, st.meta.Title, author, l.now())
	if errors.Is(err, ErrConflict) {
		return DeletedSession{}, Errorf(CodeInvalidOperation, "session %q could not be deleted: %v", id, err).with("sessionId", id)
	}
	if err != nil {
		return DeletedSession{}, l.loadError(id, "delete", err)
	}
	// Forget every view of it; a waiter on st.mu looks again and finds
	// nothing.
	st.dead = true
	l.mu.Lock()
	delete(l.sessions, id)
	delete(l.accessed, id)
	l.mu.Unlock()
	return ds, nil
}

// RestoreSession brings a deleted session back as it was.
func (l *Ledger) RestoreSession(ctx context.Context, id string) (DeletedSession, error) {
	ds, err := l.store.RestoreSession(ctx, id)
	switch {
	case errors.Is(err, ErrSessionNotFound):
		return DeletedSession{}, Errorf(CodeSessionNotFound, "session %q is not a deleted session: session {subOperation: \"list_deleted\"} (or thoughtbox sessions --deleted) lists them: %w", id, ErrSessionNotFound).with("sessionId", id)
	case errors.Is(err, ErrConflict):
		return DeletedSession{}, Errorf(CodeInvalidOperation, "session %q could not be restored: %v", id, err).with("sessionId", id)
	case err != nil:
		return DeletedSession{}, l.loadError(id, "restore", err)
	}
	return ds, nil
}

// DeletedSessions lists the deleted sessions, most recently deleted first.
func (l *Ledger) DeletedSessions(ctx context.Context) ([]DeletedSession, error) {
	list, err := l.store.DeletedSessions()
	if err != nil {
		return nil, storageError("list deleted sessions", err)
	}
	if list == nil {
		list = []DeletedSession{}
	}
	return list, nil
}
