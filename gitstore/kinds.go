package gitstore

import (
	"context"
	"strings"
)

// The entity kinds: every kind of thing the ledger keeps on refs of its
// own has one row here, and the places that ask "which kind is this ref"
// (the layout's classification, push and pull's grouping, a pull's checks
// and merges, verify) ask this table instead of testing names themselves.
// Adding a kind is a row here and the kind's store file (its refs'
// contents, its incoming check, its merge if it has one); see
// doc/architecture.md, "Adding an entity kind".

// kind is one kind of entity.
type kind struct {
	// name says what the kind is.
	name string
	// area is where the kind's refs live below the layout's root: one ref
	// ("knowledge") or a folder of refs ("notebooks/"). Areas may nest (a
	// session's links live in its folder): the nested kind comes first in
	// the table.
	area string
	// of names the entity rest (a ref's name below the root, inside area)
	// belongs to. ok is false when rest is no ref of the kind in layout l;
	// valid says whether rest is a name this engine writes itself (a pull
	// takes no other, since a remote's ref names become file names here).
	of func(l Layout, rest string) (id string, ok, valid bool)
	// ofSession says the entity's id is a session's: its refs are the
	// session's for delete, restore, private sessions and a push of some
	// sessions.
	ofSession bool
	// group names the unit a transfer moves whole, "<group> <id>"; "" makes
	// each ref a unit of its own.
	group string
	// incoming checks what a pull would move of one entity (ref -> the
	// remote's tip) before any ref of ours moves; nil takes it unchecked.
	incoming func(s *Store, ctx context.Context, id string, moving map[string]hash, maxBytes int) ([]string, error)
	// merge joins two tips of a ref that went apart into a merge commit,
	// returned with its batch (no ref move); ok is false when it cannot.
	// nil: a pull keeps the remote's tip aside (see diverged.go).
	merge func(s *Store, ours, theirs hash, remote string) (b *batch, merged hash, ok bool, err error)
	// verify adds the problems of a kind kept in a session's folder to a
	// verify of the session; nil for a kind verify does not read.
	verify func(s *Store, ctx context.Context, session string, fail func(string, ...any))
}

// The areas of the kinds, below the layout's root.
const (
	sessionsArea  = "sessions/"
	knowledgeArea = "knowledge"
	notebooksArea = "notebooks/"
	// linksLeaf names a session's links ref in its folder (see links.go).
	linksLeaf = "links"
)

// The table, in the order a ref is matched. It is filled by init because
// its rows name functions that classify refs through it.
var (
	linksKind, sessionKind, knowledgeKind, notebookKind *kind
	kinds                                               []*kind
)

func init() {
	linksKind = &kind{name: "links", area: sessionsArea, of: linksOf, ofSession: true, group: "links",
		incoming: func(s *Store, ctx context.Context, id string, moving map[string]hash, _ int) ([]string, error) {
			return s.checkIncomingLinks(ctx, id, moving[s.lay.linksRef(id)])
		},
		merge: func(s *Store, ours, theirs hash, remote string) (*batch, hash, bool, error) {
			b, merged, err := s.MergeLinks(ours, theirs, remote)
			return b, merged, err == nil, err
		},
		verify: (*Store).verifyLinks}
	sessionKind = &kind{name: "session", area: sessionsArea, of: sessionOf, ofSession: true, group: "session",
		incoming: (*Store).CheckIncomingSession}
	knowledgeKind = &kind{name: "knowledge", area: knowledgeArea,
		of: func(_ Layout, rest string) (string, bool, bool) { return "", rest == knowledgeArea, true },
		incoming: func(s *Store, _ context.Context, _ string, moving map[string]hash, maxBytes int) ([]string, error) {
			return s.checkIncomingKnowledge(moving[s.lay.knowledge()], maxBytes)
		},
		merge: func(s *Store, ours, theirs hash, remote string) (*batch, hash, bool, error) {
			b, merged, conflicts, err := s.MergeKnowledge(ours, theirs, remote)
			return b, merged, err == nil && len(conflicts) == 0, err
		}}
	notebookKind = &kind{name: "notebook", area: notebooksArea, of: notebookOf,
		incoming: (*Store).checkIncomingNotebookRef}
	kinds = []*kind{linksKind, sessionKind, knowledgeKind, notebookKind}
}

// inArea reports whether rest lies in area.
func inArea(area, rest string) bool {
	if strings.HasSuffix(area, "/") {
		return strings.HasPrefix(rest, area)
	}
	return rest == area
}

// sessionOf takes any ref in a session's folder as the session's (push
// and delete move whatever is there), and as valid only the main chain
// and a branch.
func sessionOf(_ Layout, rest string) (string, bool, bool) {
	id, chain, _ := strings.Cut(strings.TrimPrefix(rest, sessionsArea), "/")
	if id == "" {
		return "", false, false
	}
	if validSessionID(id) != nil {
		return id, true, false
	}
	if chain == "main" {
		return id, true, true
	}
	b, ok := strings.CutPrefix(chain, "branches/")
	return id, true, ok && validBranchID(b) == nil
}

// linksOf takes <id>/links of a valid session id, inside a code
// repository only (see links.go).
func linksOf(l Layout, rest string) (string, bool, bool) {
	if l != InCode {
		return "", false, false
	}
	id, leaf, ok := strings.Cut(strings.TrimPrefix(rest, sessionsArea), "/")
	if !ok || leaf != linksLeaf || validSessionID(id) != nil {
		return "", false, false
	}
	return id, true, true
}

// notebookOf takes any ref in the notebooks folder, and as valid only one
// named by a notebook id.
func notebookOf(_ Layout, rest string) (string, bool, bool) {
	id := strings.TrimPrefix(rest, notebooksArea)
	return id, true, validNotebookID(id) == nil
}

// kindOf finds the kind of ref and the entity it belongs to (nil for a
// ref of no kind).
func (l Layout) kindOf(ref string) (k *kind, id string, valid bool) {
	rest, ok := strings.CutPrefix(ref, l.refRoot())
	if !ok {
		return nil, "", false
	}
	for _, k := range kinds {
		if !inArea(k.area, rest) {
			continue
		}
		if id, ok, valid := k.of(l, rest); ok {
			return k, id, valid
		}
	}
	return nil, "", false
}

// inAnyArea reports whether ref lies in some kind's area, whatever its
// name below it.
func (l Layout) inAnyArea(ref string) bool {
	rest, ok := strings.CutPrefix(ref, l.refRoot())
	if !ok {
		return false
	}
	for _, k := range kinds {
		if inArea(k.area, rest) {
			return true
		}
	}
	return false
}

// groupOf is the unit a transfer moves whole: a session's refs go
// together, so that a remote never gets a branch without the main chain
// it forks from; a session's links move on their own, so that links a
// clone added while the chain moved elsewhere never hold the chain back;
// a notebook or the knowledge zone is one ref, and so a unit of its own.
func (l Layout) groupOf(ref string) string {
	if k, id, _ := l.kindOf(ref); k != nil && k.group != "" {
		return k.group + " " + id
	}
	return ref
}

// GroupOfRef is the unit a transfer moves whole that ref belongs to, in
// the store's layout: refs of one group are pushed, checked and
// integrated together.
func (s *Store) GroupOfRef(ref string) string { return s.lay.groupOf(ref) }

// SessionRefFolder is the folder of session id's refs, in the store's
// layout.
func (s *Store) SessionRefFolder(id string) string { return s.lay.sessions() + id + "/" }

// SessionMainRef is the ref of session id's main chain, in the store's
// layout.
func (s *Store) SessionMainRef(id string) string { return s.lay.mainRef(id) }

// CheckIncoming checks what a pull would move of the entity ref belongs
// to (moving: ref -> the remote's tip, for the refs of ref's group) with
// its kind's incoming check, and returns the problems found. A ref of no
// kind, or whose kind has no check, has none.
func (s *Store) CheckIncoming(ctx context.Context, ref string, moving map[string]hash, maxBytes int) ([]string, error) {
	k, id, valid := s.lay.kindOf(ref)
	if k == nil || !valid || k.incoming == nil {
		return nil, nil
	}
	return k.incoming(s, ctx, id, moving, maxBytes)
}

// MergeDiverged merges two tips of ref that went apart (ours and a
// remote's), when ref's kind can: it returns the merge commit's batch,
// with no ref move, and its id. ok is false when the kind keeps the
// remote's tip aside instead, or the two sides conflict.
func (s *Store) MergeDiverged(ref string, ours, theirs hash, remote string) (b *batch, merged hash, ok bool, err error) {
	k, _, valid := s.lay.kindOf(ref)
	if k == nil || !valid || k.merge == nil {
		return nil, zeroHash, false, nil
	}
	return k.merge(s, ours, theirs, remote)
}

// verifyParts adds to a verify of session id the problems of the kinds
// kept in its folder beside its chains.
func (s *Store) verifyParts(ctx context.Context, id string, fail func(string, ...any)) {
	for _, k := range kinds {
		if k.ofSession && k.verify != nil {
			k.verify(s, ctx, id, fail)
		}
	}
}
