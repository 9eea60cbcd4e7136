package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// UpdateSessionParams changes a session's metadata; a nil field is left as
// it is. The same rules as at creation apply: a title of 1 to
// MaxTitleLength characters after trimming, blank and repeated tags
// dropped.
type UpdateSessionParams struct {
	Title       *string   `json:"title,omitempty"`
	Description *string   `json:"description,omitempty"`
	Tags        *[]string `json:"tags,omitempty"`
}

// ErrNoChange is returned by UpdateSession when the parameters change
// nothing.
var ErrNoChange = errors.New("nothing to change")

// UpdateSession changes a session's title, description or tags with one
// commit on its main chain, authored by author. The thoughts are untouched.
func (l *Ledger) UpdateSession(ctx context.Context, id string, p UpdateSessionParams, author Author) (Session, error) {
	if p.Title == nil && p.Description == nil && p.Tags == nil {
		return Session{}, InvalidField("title", "give at least one of title, description and tags: %w", ErrNoChange)
	}
	st, err := l.acquire(ctx, id, false)
	if err != nil {
		return Session{}, err
	}
	defer st.mu.Unlock()
	var out Session
	err = Retry(ctx, MaxAppendAttempts, nil, func(attempt int) error {
		if attempt > 1 {
			// Another writer moved the chain: read it again, then retry
			// on the new tip.
			if err := l.reloadLocked(ctx, st); err != nil {
				return err
			}
		}
		next := CreateSessionParams{Title: st.meta.Title, Description: st.meta.Description, Tags: st.meta.Tags}
		if p.Title != nil {
			next.Title = *p.Title
		}
		if p.Description != nil {
			next.Description = *p.Description
		}
		if p.Tags != nil {
			next.Tags = *p.Tags
		}
		next, err := next.normalize()
		if err != nil {
			return err
		}
		var changed []string
		if next.Title != st.meta.Title {
			changed = append(changed, "title")
		}
		if next.Description != st.meta.Description {
			changed = append(changed, "description")
		}
		if !slices.Equal(next.Tags, st.meta.Tags) && !(len(next.Tags) == 0 && len(st.meta.Tags) == 0) {
			changed = append(changed, "tags")
		}
		if len(changed) == 0 {
			out = l.sessionLocked(st)
			return nil
		}
		meta := st.meta
		meta.Title, meta.Description, meta.Tags = next.Title, next.Description, next.Tags
		meta.UpdatedAt = l.now()
		commit, err := l.store.UpdateSession(ctx, UpdateSessionRequest{Meta: meta, ExpectedTip: st.graph.main.tip, Changed: changed, Author: author})
		if err != nil {
			serr := storageError(fmt.Sprintf("update session %s", id), err)
			if errors.Is(err, ErrConflict) {
				return Again(serr)
			}
			return serr
		}
		if st.shared {
			st.graph = st.graph.clone()
			st.shared = false
		}
		st.graph.main.tip = commit
		st.meta = meta
		l.touch(st.id, meta.UpdatedAt)
		out = l.sessionLocked(st)
		l.publish(Event{Type: EventSessionUpdated, SessionID: st.id, Timestamp: meta.UpdatedAt,
			Data: map[string]any{"changed": changed, "title": meta.Title, "tags": meta.Tags}})
		return nil
	})
	if err != nil {
		return Session{}, err
	}
	return out, nil
}
