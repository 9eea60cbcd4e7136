package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The knowledge zone ("the garden") keeps what is worth reusing across
// sessions: patterns, durable tagged write-ups of approaches that worked,
// and scratchpad notes, short working notes on a topic (seed 002). Unlike
// sessions it has no in-memory view: every call reads the store, so that
// several servers and CLI runs on one repository see each other's changes.

// KnowledgeKind says whether a knowledge entry is a pattern or a note.
type KnowledgeKind string

// The kinds of knowledge entries.
const (
	KindPattern KnowledgeKind = "pattern"
	KindNote    KnowledgeKind = "note"
)

// KnowledgeVersion identifies one stored version of an entry (a Git blob
// id in gitstore). The ledger treats it as opaque; "" means "absent".
type KnowledgeVersion string

// KnowledgeEntry is a pattern or a note as the store keeps it. Notes use
// only ID, Title, Content and the dates.
type KnowledgeEntry struct {
	Kind                KnowledgeKind
	ID                  string
	Title               string
	Description         string
	Tags                []string
	DerivedFromSessions []string
	CreatedBy           string
	Content             string
	CreatedAt           time.Time
	UpdatedAt           time.Time
	// Version is the stored version this entry was read from; the store
	// sets it.
	Version KnowledgeVersion
}

// KnowledgeWrite asks the store to record one change to one entry, as one
// commit.
type KnowledgeWrite struct {
	// Entry is the new version or, with Delete, the version deleted (its
	// title goes into the commit message).
	Entry  KnowledgeEntry
	Delete bool
	// Expected is the version the change was computed from, "" when the
	// entry must not exist yet. The store refuses the write with
	// ErrKnowledgeChanged if the entry's version is another one by then
	// (compare-and-swap per entry: changes to other entries do not
	// conflict).
	Expected KnowledgeVersion
	Author   Author
	// When dates the commit.
	When time.Time
}

// KnowledgeStore is the part of a Store that persists the knowledge zone.
// Implementations must be safe for concurrent use.
type KnowledgeStore interface {
	// ListKnowledge returns every entry of a kind, in no particular order.
	ListKnowledge(ctx context.Context, kind KnowledgeKind) ([]KnowledgeEntry, error)
	// ReadKnowledge returns one entry, or ErrKnowledgeNotFound.
	ReadKnowledge(ctx context.Context, kind KnowledgeKind, id string) (KnowledgeEntry, error)
	// WriteKnowledge records w and returns the new version ("" after a
	// delete). It returns ErrKnowledgeChanged, and records nothing, when
	// the entry is no longer at w.Expected. It may return ErrConflict, and
	// record nothing, when another write to the zone landed while this one
	// was built: it is one attempt, and the caller (the Knowledge service's
	// one retry loop) tries again.
	WriteKnowledge(ctx context.Context, w KnowledgeWrite) (KnowledgeVersion, error)
}

// ErrKnowledgeNotFound is returned when no pattern or note has the id
// asked for.
var ErrKnowledgeNotFound = errors.New("not found in the knowledge zone")

// ErrKnowledgeChanged is returned by KnowledgeStore.WriteKnowledge when the
// entry was changed by another writer since it was read.
var ErrKnowledgeChanged = errors.New("knowledge entry was changed by another writer")

// KnowledgePattern is a reusable reasoning pattern (seed 002).
type KnowledgePattern struct {
	ID                  string    `json:"id"`
	Title               string    `json:"title"`
	Description         string    `json:"description"`
	Tags                []string  `json:"tags"`
	Content             string    `json:"content"`
	DerivedFromSessions []string  `json:"derivedFromSessions"`
	CreatedBy           string    `json:"createdBy,omitempty"`
	CreatedAt           time.Time `json:"createdAt"`
	UpdatedAt           time.Time `json:"updatedAt"`
}

// ScratchpadNote is a working note on a topic (seed 002).
type ScratchpadNote struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Content   string    `json:"content"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// CreatePatternParams describes a new pattern (seed 002). ID is our
// addition: without it the id is a slug of the title.
type CreatePatternParams struct {
	ID                  string   `json:"id,omitempty"`
	Title               string   `json:"title"`
	Description         string   `json:"description"`
	Tags                []string `json:"tags,omitempty"`
	Content             string   `json:"content"`
	DerivedFromSessions []string `json:"derivedFromSessions,omitempty"`
	// CreatedBy defaults to the author of the change.
	CreatedBy string `json:"createdBy,omitempty"`
}

// UpdatePatternParams changes the fields of a pattern that are set; the
// id, createdAt and createdBy never change.
type UpdatePatternParams struct {
	ID                  string    `json:"id"`
	Title               *string   `json:"title,omitempty"`
	Description         *string   `json:"description,omitempty"`
	Tags                *[]string `json:"tags,omitempty"`
	Content             *string   `json:"content,omitempty"`
	DerivedFromSessions *[]string `json:"derivedFromSessions,omitempty"`
}

// Sort keys and orders of listings (seed 002: SessionFilter, PatternFilter).
const (
	SortByCreatedAt = "createdAt"
	SortByUpdatedAt = "updatedAt"
	SortByTitle     = "title"
	SortAsc         = "asc"
	SortDesc        = "desc"
)

// Listing limits for patterns.
const (
	DefaultPatternLimit = 20
	MaxPatternLimit     = 100
)

// PatternFilter selects and orders patterns (seed 002). Zero values mean
// the defaults: no tag or search filter, limit DefaultPatternLimit,
// offset 0, newest update first.
type PatternFilter struct {
	// Tags keeps patterns that have every one of them (AND), compared
	// without regard to case.
	Tags []string `json:"tags,omitempty"`
	// Search keeps patterns whose id, title, description, tags or content
	// contain every word of it, without regard to case.
	Search    string `json:"search,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	Offset    int    `json:"offset,omitempty"`
	SortBy    string `json:"sortBy,omitempty"`
	SortOrder string `json:"sortOrder,omitempty"`
}

// PatternPage is one page of a pattern listing.
type PatternPage struct {
	Patterns []KnowledgePattern `json:"patterns"`
	// Total counts every pattern that matched, on all pages.
	Total   int  `json:"total"`
	Limit   int  `json:"limit"`
	Offset  int  `json:"offset"`
	HasMore bool `json:"hasMore"`
}

// TagCount is a tag and the number of patterns that carry it.
type TagCount struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// WriteNoteParams creates or replaces a note. Without ID, the id is a slug
// of the title. Title is required for a new note; an existing note keeps
// its title when Title is empty.
type WriteNoteParams struct {
	ID      string `json:"id,omitempty"`
	Title   string `json:"title,omitempty"`
	Content string `json:"content"`
}

// NoteWrite is the outcome of WriteNote.
type NoteWrite struct {
	Note ScratchpadNote `json:"note"`
	// Created is false when an existing note was replaced.
	Created bool `json:"created"`
}

// Limits on knowledge entries.
const (
	// MaxKnowledgeIDLength is the longest id, in bytes; ids derived from a
	// title are cut shorter, at a hyphen.
	MaxKnowledgeIDLength = 100
	maxDerivedIDLength   = 64
	// MaxKnowledgeContentBytes bounds a pattern's or note's content.
	MaxKnowledgeContentBytes = 1 << 20
	maxKnowledgeTagLength    = 100
)

// KnowledgeOptions configures a Knowledge service. The zero value is ready
// to use.
type KnowledgeOptions struct {
	// Now is the clock for timestamps; default time.Now in UTC.
	Now func() time.Time
}

// Knowledge is the knowledge-zone service: it validates and normalises
// patterns and notes and has the store commit each change. It is safe for
// concurrent use.
type Knowledge struct {
	store KnowledgeStore
	now   func() time.Time
}

// NewKnowledge returns the knowledge zone kept in store.
func NewKnowledge(store KnowledgeStore, opts KnowledgeOptions) *Knowledge {
	k := &Knowledge{store: store, now: opts.Now}
	if k.now == nil {
		k.now = func() time.Time { return time.Now().UTC() }
	}
	return k
}

// CreatePattern stores a new pattern. Title, description and content are
// required; the id, given or derived from the title, must be free: an
// existing pattern is never overwritten by a create.
func (k *Knowledge) CreatePattern(ctx context.Context, p CreatePatternParams, author Author) (KnowledgePattern, error) {
	e, derived, err := p.entry()
	if err != nil {
		return KnowledgePattern{}, err
	}
	if e.CreatedBy == "" {
		e.CreatedBy = oneLineOf(author.Name)
	}
	now := k.now()
	e.CreatedAt, e.UpdatedAt = now, now
	err = Retry(ctx, MaxAppendAttempts, RandomPause, func(int) error {
		_, err := k.store.WriteKnowledge(ctx, KnowledgeWrite{Entry: e, Author: author, When: now})
		if errors.Is(err, ErrConflict) {
			// Another entry was written first: build again on it.
			return Again(err)
		}
		return err
	})
	if errors.Is(err, ErrKnowledgeChanged) {
		return KnowledgePattern{}, idTaken(KindPattern, e.ID, derived)
	}
	if err != nil {
		return KnowledgePattern{}, storageError("create pattern "+e.ID, err)
	}
	return toPattern(e), nil
}

// UpdatePattern changes the fields p sets and moves updatedAt forward. A
// concurrent change by another writer is re-read and p applied on top of
// it, so neither change is lost.
func (k *Knowledge) UpdatePattern(ctx context.Context, p UpdatePatternParams, author Author) (KnowledgePattern, error) {
	if err := checkKnowledgeID(p.ID); err != nil {
		return KnowledgePattern{}, err
	}
	if p.Title == nil && p.Description == nil && p.Tags == nil && p.Content == nil && p.DerivedFromSessions == nil {
		return KnowledgePattern{}, InvalidField("id", "update of %q changes nothing: give at least one of title, description, tags, content, derivedFromSessions", p.ID)
	}
	var change KnowledgeEntry
	var err error
	if p.Title != nil {
		if change.Title, err = checkTitle(*p.Title); err != nil {
			return KnowledgePattern{}, err
		}
	}
	if p.Description != nil {
		if change.Description, err = checkText("description", *p.Description, true); err != nil {
			return KnowledgePattern{}, err
		}
	}
	if p.Content != nil {
		if err = checkContent(*p.Content); err != nil {
			return KnowledgePattern{}, err
		}
	}
	if p.Tags != nil {
		if change.Tags, err = normalizeTags(*p.Tags); err != nil {
			return KnowledgePattern{}, err
		}
	}
	if p.DerivedFromSessions != nil {
		if change.DerivedFromSessions, err = normalizeSessionRefs(*p.DerivedFromSessions); err != nil {
			return KnowledgePattern{}, err
		}
	}
	e, err := k.modify(ctx, KindPattern, p.ID, author, func(e *KnowledgeEntry) {
		if p.Title != nil {
			e.Title = change.Title
		}
		if p.Description != nil {
			e.Description = change.Description
		}
		if p.Content != nil {
			e.Content = *p.Content
		}
		if p.Tags != nil {
			e.Tags = change.Tags
		}
		if p.DerivedFromSessions != nil {
			e.DerivedFromSessions = change.DerivedFromSessions
		}
	})
	if err != nil {
		return KnowledgePattern{}, err
	}
	return toPattern(e), nil
}

// modify re-reads an entry, applies change and writes it back, until the
// write lands on the version it was computed from.
func (k *Knowledge) modify(ctx context.Context, kind KnowledgeKind, id string, author Author, change func(*KnowledgeEntry)) (KnowledgeEntry, error) {
	var next KnowledgeEntry
	err := Retry(ctx, MaxAppendAttempts, RandomPause, func(int) error {
		cur, err := k.read(ctx, kind, id)
		if err != nil {
			return err
		}
		next = cur
		change(&next)
		next.UpdatedAt = k.after(cur.UpdatedAt)
		_, err = k.store.WriteKnowledge(ctx, KnowledgeWrite{Entry: next, Expected: cur.Version, Author: author, When: next.UpdatedAt})
		if err == nil {
			return nil
		}
		serr := storageError(fmt.Sprintf("update %s %s", kind, id), err)
		if errors.Is(err, ErrKnowledgeChanged) || errors.Is(err, ErrConflict) {
			return Again(serr)
		}
		return serr
	})
	if err != nil {
		return KnowledgeEntry{}, err
	}
	return next, nil
}

// after is the time of a change made now to something last changed at
// prev: never earlier than prev, so updatedAt only moves forward even if
// the clock steps back or two changes fall in one clock tick.
func (k *Knowledge) after(prev time.Time) time.Time {
	now := k.now()
	if !now.After(prev) {
		now = prev.Add(time.Millisecond)
	}
	return now
}

// Pattern returns one pattern.
func (k *Knowledge) Pattern(ctx context.Context, id string) (KnowledgePattern, error) {
	if err := checkKnowledgeID(id); err != nil {
		return KnowledgePattern{}, err
	}
	e, err := k.read(ctx, KindPattern, id)
	if err != nil {
		return KnowledgePattern{}, err
	}
	return toPattern(e), nil
}

func (k *Knowledge) read(ctx context.Context, kind KnowledgeKind, id string) (KnowledgeEntry, error) {
	e, err := k.store.ReadKnowledge(ctx, kind, id)
	if errors.Is(err, ErrKnowledgeNotFound) {
		return KnowledgeEntry{}, knowledgeNotFound(kind, id)
	}
	if err != nil {
		return KnowledgeEntry{}, storageError(fmt.Sprintf("read %s %s", kind, id), err)
	}
	return e, nil
}

// ListPatterns returns the page of patterns f selects.
func (k *Knowledge) ListPatterns(ctx context.Context, f PatternFilter) (PatternPage, error) {
	f, err := f.normalize()
	if err != nil {
		return PatternPage{}, err
	}
	entries, err := k.store.ListKnowledge(ctx, KindPattern)
	if err != nil {
		return PatternPage{}, storageError("list patterns", err)
	}
	words := strings.Fields(strings.ToLower(f.Search))
	var matched []KnowledgePattern
	for _, e := range entries {
		p := toPattern(e)
		if hasAllTags(p.Tags, f.Tags) && matchesWords(p, words) {
			matched = append(matched, p)
		}
	}
	slices.SortFunc(matched, patternOrder(f.SortBy, f.SortOrder))
	page := PatternPage{Patterns: []KnowledgePattern{}, Total: len(matched), Limit: f.Limit, Offset: f.Offset}
	if f.Offset < len(matched) {
		end := min(f.Offset+f.Limit, len(matched))
		page.Patterns = matched[f.Offset:end]
		page.HasMore = end < len(matched)
	}
	return page, nil
}

func (f PatternFilter) normalize() (PatternFilter, error) {
	out := f
	if err := normalizeListing(&out.Limit, &out.Offset, &out.SortBy, &out.SortOrder, DefaultPatternLimit, MaxPatternLimit); err != nil {
		return out, err
	}
	out.Tags = nil
	for _, t := range f.Tags {
		if t = strings.TrimSpace(t); t != "" {
			out.Tags = append(out.Tags, t)
		}
	}
	return out, nil
}

// patternOrder sorts by the key asked for, then by id, so that pages of one
// listing never overlap or skip a pattern.
func patternOrder(by, order string) func(a, b KnowledgePattern) int {
	return func(a, b KnowledgePattern) int {
		var c int
		switch by {
		case SortByCreatedAt:
			c = a.CreatedAt.Compare(b.CreatedAt)
		case SortByTitle:
			c = cmp.Compare(strings.ToLower(a.Title), strings.ToLower(b.Title))
		default:
			c = a.UpdatedAt.Compare(b.UpdatedAt)
		}
		if order == SortDesc {
			c = -c
		}
		if c == 0 {
			c = cmp.Compare(a.ID, b.ID)
		}
		return c
	}
}

func hasAllTags(have, want []string) bool {
	for _, w := range want {
		if !slices.ContainsFunc(have, func(h string) bool { return strings.EqualFold(h, w) }) {
			return false
		}
	}
	return true
}

func matchesWords(p KnowledgePattern, words []string) bool {
	if len(words) == 0 {
		return true
	}
	text := strings.ToLower(strings.Join(append([]string{p.ID, p.Title, p.Description, p.Content}, p.Tags...), "\n"))
	for _, w := range words {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}

// PatternTags counts the patterns carrying each tag, most used first.
func (k *Knowledge) PatternTags(ctx context.Context) ([]TagCount, error) {
	entries, err := k.store.ListKnowledge(ctx, KindPattern)
	if err != nil {
		return nil, storageError("list patterns", err)
	}
	counts := map[string]int{}
	for _, e := range entries {
		for _, t := range toPattern(e).Tags {
			counts[t]++
		}
	}
	out := []TagCount{}
	for name, n := range counts {
		out = append(out, TagCount{Name: name, Count: n})
	}
	slices.SortFunc(out, func(a, b TagCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// DeletePattern removes a pattern and returns what it held.
func (k *Knowledge) DeletePattern(ctx context.Context, id string, author Author) (KnowledgePattern, error) {
	e, err := k.delete(ctx, KindPattern, id, author)
	if err != nil {
		return KnowledgePattern{}, err
	}
	return toPattern(e), nil
}

func (k *Knowledge) delete(ctx context.Context, kind KnowledgeKind, id string, author Author) (KnowledgeEntry, error) {
	if err := checkKnowledgeID(id); err != nil {
		return KnowledgeEntry{}, err
	}
	var cur KnowledgeEntry
	err := Retry(ctx, MaxAppendAttempts, RandomPause, func(int) error {
		var err error
		if cur, err = k.read(ctx, kind, id); err != nil {
			return err
		}
		_, err = k.store.WriteKnowledge(ctx, KnowledgeWrite{Entry: cur, Delete: true, Expected: cur.Version, Author: author, When: k.now()})
		if err == nil {
			return nil
		}
		serr := storageError(fmt.Sprintf("delete %s %s", kind, id), err)
		if errors.Is(err, ErrKnowledgeChanged) || errors.Is(err, ErrKnowledgeNotFound) || errors.Is(err, ErrConflict) {
			// Changed or deleted meanwhile: look again; a second delete
			// then reports that it is gone.
			return Again(serr)
		}
		return serr
	})
	if err != nil {
		return KnowledgeEntry{}, err
	}
	return cur, nil
}

// WriteNote creates a note or replaces the content (and, if given, the
// title) of an existing one; createdAt is kept, updatedAt moves forward.
func (k *Knowledge) WriteNote(ctx context.Context, p WriteNoteParams, author Author) (NoteWrite, error) {
	// A note is named by its topic: an id derived from the title names the
	// same note each time, so writing again replaces it.
	id, _, err := entryID(p.ID, p.Title)
	if err != nil {
		return NoteWrite{}, err
	}
	var title string
	if strings.TrimSpace(p.Title) != "" {
		if title, err = checkTitle(p.Title); err != nil {
			return NoteWrite{}, err
		}
	}
	if err := checkContent(p.Content); err != nil {
		return NoteWrite{}, err
	}
	var out NoteWrite
	err = Retry(ctx, MaxAppendAttempts, RandomPause, func(int) error {
		cur, err := k.store.ReadKnowledge(ctx, KindNote, id)
		exists := err == nil
		if err != nil && !errors.Is(err, ErrKnowledgeNotFound) {
			return storageError("read note "+id, err)
		}
		next := KnowledgeEntry{Kind: KindNote, ID: id, Title: title, Content: p.Content}
		if exists {
			next.CreatedAt = cur.CreatedAt
			next.UpdatedAt = k.after(cur.UpdatedAt)
			if next.Title == "" {
				next.Title = cur.Title
			}
		} else {
			if title == "" {
				return InvalidField("title", "is required for a new note (no note %q exists yet)", id).with("id", id)
			}
			next.CreatedAt = k.now()
			next.UpdatedAt = next.CreatedAt
		}
		_, err = k.store.WriteKnowledge(ctx, KnowledgeWrite{Entry: next, Expected: cur.Version, Author: author, When: next.UpdatedAt})
		if err == nil {
			out = NoteWrite{Note: toNote(next), Created: !exists}
			return nil
		}
		serr := storageError("write note "+id, err)
		if errors.Is(err, ErrKnowledgeChanged) || errors.Is(err, ErrConflict) {
			return Again(serr)
		}
		return serr
	})
	if err != nil {
		return NoteWrite{}, err
	}
	return out, nil
}

// Note returns one note.
func (k *Knowledge) Note(ctx context.Context, id string) (ScratchpadNote, error) {
	if err := checkKnowledgeID(id); err != nil {
		return ScratchpadNote{}, err
	}
	e, err := k.read(ctx, KindNote, id)
	if err != nil {
		return ScratchpadNote{}, err
	}
	return toNote(e), nil
}

// ListNotes returns every note, most recently updated first.
func (k *Knowledge) ListNotes(ctx context.Context) ([]ScratchpadNote, error) {
	entries, err := k.store.ListKnowledge(ctx, KindNote)
	if err != nil {
		return nil, storageError("list notes", err)
	}
	out := make([]ScratchpadNote, 0, len(entries))
	for _, e := range entries {
		out = append(out, toNote(e))
	}
	slices.SortFunc(out, func(a, b ScratchpadNote) int {
		return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// DeleteNote removes a note and returns what it held.
func (k *Knowledge) DeleteNote(ctx context.Context, id string, author Author) (ScratchpadNote, error) {
	e, err := k.delete(ctx, KindNote, id, author)
	if err != nil {
		return ScratchpadNote{}, err
	}
	return toNote(e), nil
}

// toPattern presents a stored entry. Entries edited by hand may lack
// fields; they are shown with the schema's shape (a title, empty lists).
func toPattern(e KnowledgeEntry) KnowledgePattern {
	p := KnowledgePattern{
		ID: e.ID, Title: e.Title, Description: e.Description, Content: e.Content,
		Tags: []string{}, DerivedFromSessions: []string{},
		CreatedBy: e.CreatedBy, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt,
	}
	if p.Title == "" {
		p.Title = e.ID
	}
	p.Tags = appendDistinct(p.Tags, e.Tags)
	p.DerivedFromSessions = appendDistinct(p.DerivedFromSessions, e.DerivedFromSessions)
	return p
}

func toNote(e KnowledgeEntry) ScratchpadNote {
	n := ScratchpadNote{ID: e.ID, Title: e.Title, Content: e.Content, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
	if n.Title == "" {
		n.Title = e.ID
	}
	return n
}

// appendDistinct appends the non-blank values of src not already in dst.
func appendDistinct(dst, src []string) []string {
	for _, s := range src {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(dst, s) {
			dst = append(dst, s)
		}
	}
	return dst
}

// Knowledge returns the knowledge zone kept in the ledger's own store, so
// that whoever holds a project's ledger reaches that project's zone (and
// no other's).
func (l *Ledger) Knowledge() *Knowledge {
	return NewKnowledge(l.store, KnowledgeOptions{Now: l.now})
}
