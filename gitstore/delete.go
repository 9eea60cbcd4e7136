package gitstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// DeleteSession moves every ref of a session under
// refs/thoughtbox/deleted/<id>/ with a record commit, in one batch through
// the log (all or nothing). Deletion is local: a remote keeps the session,
// and pull does not bring it back while it is deleted here.
func (s *Store) DeleteSession(ctx context.Context, id, title string, author ledger.Author, at time.Time) (ledger.DeletedSession, error) {
	if err := validSessionID(id); err != nil {
		return ledger.DeletedSession{}, fmt.Errorf("%w: %v", ledger.ErrSessionNotFound, err)
	}
	refs, err := s.be.ListRefs(ctx, s.lay.sessions()+id+"/")
	if err != nil {
		return ledger.DeletedSession{}, err
	}
	mainTip, ok := refs[s.lay.mainRef(id)]
	if !ok {
		return ledger.DeletedSession{}, fmt.Errorf("%w: %s", ledger.ErrSessionNotFound, id)
	}
	if kept, err := s.be.ListRefs(ctx, deletedPrefix+id+"/"); err != nil {
		return ledger.DeletedSession{}, err
	} else if len(kept) > 0 {
		return ledger.DeletedSession{}, fmt.Errorf("session %s has a deletion record already (%s): restore it first: %w", id, deletedPrefix+id+"/record", ledger.ErrConflict)
	}
	c, err := s.readCommit(mainTip)
	if err != nil {
		return ledger.DeletedSession{}, err
	}
	names := make([]string, 0, len(refs))
	for name := range refs {
		names = append(names, name)
	}
	sort.Strings(names)
	var msg strings.Builder
	fmt.Fprintf(&msg, "Delete session: %s\n\n", firstLine(title, 72))
	for _, name := range names {
		fmt.Fprintf(&msg, "%s %s\n", refs[name], name)
	}
	fmt.Fprintf(&msg, "\n%s: %s\n%s: %s\n%s: %s\n", trailerSession, id, trailerDeleted, at.UTC().Format(time.RFC3339), trailerDeletedBy, firstLine(author.Name, 100))
	b := &batch{}
	rid := addCommit(b, commitSpec{tree: c.Tree, parents: []hash{mainTip}, message: msg.String(), author: &author, when: at})
	b.Updates = append(b.Updates, refUpdate{Name: deletedPrefix + id + "/record", New: rid})
	for _, name := range names {
		b.Updates = append(b.Updates,
			refUpdate{Name: deletedPrefix + id + "/" + strings.TrimPrefix(name, s.lay.refRoot()), New: refs[name]},
			refUpdate{Name: name, Old: refs[name]})
	}
	if err := s.be.Apply(ctx, b); err != nil {
		if errors.Is(err, errConflict) {
			return ledger.DeletedSession{}, ledger.ErrConflict
		}
		return ledger.DeletedSession{}, err
	}
	s.forgetChains(names)
	return ledger.DeletedSession{ID: id, Title: title, DeletedAt: at.UTC(), DeletedBy: author.Name, Refs: names, Record: rid.String()}, nil
}

// RestoreSession puts a deleted session's refs back where they were and
// removes the deletion record. It fails, changing nothing, if a ref of the
// session exists again (a pull brought it back).
func (s *Store) RestoreSession(ctx context.Context, id string) (ledger.DeletedSession, error) {
	if err := validSessionID(id); err != nil {
		return ledger.DeletedSession{}, fmt.Errorf("%w: %v", ledger.ErrSessionNotFound, err)
	}
	list, err := s.deleted(id)
	if err != nil {
		return ledger.DeletedSession{}, err
	}
	if len(list) == 0 {
		return ledger.DeletedSession{}, fmt.Errorf("%w: %s is not a deleted session ('thoughtbox sessions --deleted' lists them)", ledger.ErrSessionNotFound, id)
	}
	kept, err := s.be.ListRefs(ctx, deletedPrefix+id+"/")
	if err != nil {
		return ledger.DeletedSession{}, err
	}
	b := &batch{}
	var names []string
	for keep, tip := range kept {
		b.Updates = append(b.Updates, refUpdate{Name: keep, Old: tip})
		rest := strings.TrimPrefix(keep, deletedPrefix+id+"/")
		if rest == "record" {
			continue
		}
		name := s.lay.refRoot() + rest
		names = append(names, name)
		b.Updates = append(b.Updates, refUpdate{Name: name, New: tip})
	}
	sort.Slice(b.Updates, func(i, j int) bool { return b.Updates[i].Name < b.Updates[j].Name })
	if err := s.be.Apply(ctx, b); err != nil {
		if errors.Is(err, errConflict) {
			return ledger.DeletedSession{}, fmt.Errorf("session %s exists again (pulled back from a remote?), or was restored meanwhile: %w", id, ledger.ErrConflict)
		}
		return ledger.DeletedSession{}, err
	}
	s.forgetChains(names)
	return list[0], nil
}

// DeletedSessions lists the deleted sessions, most recently deleted first.
func (s *Store) DeletedSessions() ([]ledger.DeletedSession, error) { return s.deleted("") }

func (s *Store) deleted(only string) ([]ledger.DeletedSession, error) {
	prefix := deletedPrefix
	if only != "" {
		prefix += only + "/"
	}
	refs, err := s.be.ListRefs(context.Background(), prefix)
	if err != nil {
		return nil, err
	}
	var out []ledger.DeletedSession
	for name, tip := range refs {
		id, rest, ok := strings.Cut(strings.TrimPrefix(name, deletedPrefix), "/")
		if !ok || rest != "record" {
			continue
		}
		c, err := s.readCommit(tip)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		tr := trailers(c.Message)
		d := ledger.DeletedSession{ID: id, Record: tip.String(), DeletedBy: tr[trailerDeletedBy]}
		d.DeletedAt, _ = time.Parse(time.RFC3339, tr[trailerDeleted])
		subject, body, _ := strings.Cut(c.Message, "\n")
		d.Title = strings.TrimPrefix(subject, "Delete session: ")
		for _, line := range strings.Split(body, "\n") {
			if _, ref, ok := strings.Cut(line, " "); ok && strings.HasPrefix(ref, s.lay.sessions()) {
				d.Refs = append(d.Refs, ref)
			}
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].DeletedAt.Equal(out[j].DeletedAt) {
			return out[i].DeletedAt.After(out[j].DeletedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// IsDeleted reports whether a session has a deletion record here.
func (s *Store) IsDeleted(id string) (bool, error) {
	return s.isDeleted(id)
}

func (s *Store) isDeleted(id string) (bool, error) {
	if validSessionID(id) != nil {
		return false, nil
	}
	h, err := s.be.ReadRef(context.Background(), deletedPrefix+id+"/record")
	return h != zeroHash, err
}

// forgetChains drops the cached state of these chains: their refs moved
// outside the write path that keeps it.
func (s *Store) forgetChains(refs []string) {
	s.branchRefs.clear()
	for _, ref := range refs {
		cs := s.chain(ref)
		cs.Lock()
		cs.Invalidate()
		cs.Unlock()
	}
}
