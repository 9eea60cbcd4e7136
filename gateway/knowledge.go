package gateway

// The knowledge operation: patterns and scratchpad notes (seed 002,
// "Knowledge Zone Types"), kept in the project's Git repository on
// refs/heads/knowledge by ledger.Knowledge.

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// knowledgeSummary describes the operation in the gateway tool's
// description.
const (
	knowledgeSummary = "the knowledge zone: reusable patterns and scratchpad notes, shared by every session of the project and kept in Git (refs/heads/knowledge)"
)

// knowledgeOps lists the sub-operations in the order error messages name
// them.
var knowledgeOps = []subOp{
	sub("create", onKnowledge(createPattern)).writing(),
	sub("update", onKnowledge(updatePattern)).writing(),
	sub("get", onKnowledge(getPattern)),
	sub("list", onKnowledge(listPatterns)),
	sub("list_tags", onKnowledge(listPatternTags)),
	sub("delete", onKnowledge(deletePattern)).writing(),
	sub("write_note", onKnowledge(writeNote)).writing(),
	sub("read_note", onKnowledge(readNote)),
	sub("list_notes", onKnowledge(listNotes)),
	sub("delete_note", onKnowledge(deleteNote)).writing(),
}

// onKnowledge hands a knowledge sub-operation the zone of the
// connection's project, so that no handler fetches it itself.
func onKnowledge[P any](fn func(ctx context.Context, c *call, k *ledger.Knowledge, p *P) (any, error)) func(context.Context, *call, *P) (any, error) {
	return func(ctx context.Context, c *call, p *P) (any, error) {
		k, err := c.knowledgeZone()
		if err != nil {
			return nil, err
		}
		return fn(ctx, c, k, p)
	}
}

// knowledge is the operation's handler. A server without a zone says so
// before it looks at the arguments.
func knowledge(ctx context.Context, c *call) (any, error) {
	if _, err := c.knowledgeZone(); err != nil {
		return nil, err
	}
	return runSubOp(ctx, c)
}

// knowledgeZone is the knowledge zone of the connection's project.
func (c *call) knowledgeZone() (*ledger.Knowledge, error) {
	k := c.g.opts.Knowledge
	if k == nil {
		return nil, ledger.Errorf(ledger.CodeInvalidOperation, "the knowledge zone is not configured on this server")
	}
	// The zone belongs to the connection's project: one that moved
	// (navigate, bind_root) reads and writes that project's patterns,
	// from the store behind its ledger.
	if c.ledger != c.g.ledger {
		k = c.ledger.Knowledge()
	}
	return k, nil
}

// The pattern arguments are the ledger's parameters themselves (embedded,
// so their fields are promoted in JSON): a field added there is accepted
// here without a second definition to keep in step.
type createPatternArgs struct {
	ledger.CreatePatternParams
}

type updatePatternArgs struct {
	ledger.UpdatePatternParams
}

type knowledgeIDArgs struct {
	ID string `json:"id"`
}

func (p *knowledgeIDArgs) check() error {
	if p.ID == "" {
		return ledger.InvalidField("id", "is required")
	}
	return nil
}

type listPatternsArgs struct {
	Tags []string `json:"tags,omitempty" schema:"note=all must match"`
	// Tag is one tag, as mental_models list_models takes it.
	Tag       string `json:"tag,omitempty"`
	Search    string `json:"search,omitempty"`
	Limit     *int   `json:"limit,omitempty" schema:"note=1-100, 20"`
	Offset    *int   `json:"offset,omitempty"`
	SortBy    string `json:"sortBy,omitempty" schema:"enum=createdAt|updatedAt|title"`
	SortOrder string `json:"sortOrder,omitempty" schema:"enum=asc|desc"`
}

func (p *listPatternsArgs) check() error {
	if p.Limit != nil && (*p.Limit < 1 || *p.Limit > ledger.MaxPatternLimit) {
		return ledger.InvalidField("limit", "must be from 1 to %d, got %d", ledger.MaxPatternLimit, *p.Limit)
	}
	return nil
}

type writeNoteArgs struct {
	ID      string `json:"id,omitempty" schema:"note=default: slug of title"`
	Title   string `json:"title" schema:"note=may be left out when replacing a note"`
	Content string `json:"content"`
}

// patternReply carries one pattern, whole.
type patternReply struct {
	Pattern ledger.KnowledgePattern `json:"pattern"`
	Hint    string                  `json:"hint,omitempty"`
}

// patternSummary is a pattern in a listing: everything but the content,
// which get returns, so that a listing stays short.
type patternSummary struct {
	ID                  string    `json:"id"`
	Title               string    `json:"title"`
	Description         string    `json:"description"`
	Tags                []string  `json:"tags"`
	DerivedFromSessions []string  `json:"derivedFromSessions"`
	CreatedBy           string    `json:"createdBy,omitempty"`
	CreatedAt           time.Time `json:"createdAt"`
	UpdatedAt           time.Time `json:"updatedAt"`
}

type listPatternsReply struct {
	Patterns []patternSummary `json:"patterns"`
	// Count is the number on this page, Total the number that matched.
	Count   int    `json:"count"`
	Total   int    `json:"total"`
	Limit   int    `json:"limit"`
	Offset  int    `json:"offset"`
	HasMore bool   `json:"hasMore"`
	Hint    string `json:"hint,omitempty"`
}

type listPatternTagsReply struct {
	Tags  []ledger.TagCount `json:"tags"`
	Count int               `json:"count"`
}

type deletedReply struct {
	Deleted bool   `json:"deleted"`
	Kind    string `json:"kind"`
	ID      string `json:"id"`
	Title   string `json:"title"`
}

type noteReply struct {
	Note ledger.ScratchpadNote `json:"note"`
	// Created is set by write_note: false when it replaced a note.
	Created *bool `json:"created,omitempty"`
}

// noteSummary is a note in a listing, without its content.
type noteSummary struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

type listNotesReply struct {
	Notes []noteSummary `json:"notes"`
	Count int           `json:"count"`
	pageInfo
}

func createPattern(ctx context.Context, c *call, k *ledger.Knowledge, p *createPatternArgs) (any, error) {
	pat, err := k.CreatePattern(ctx, p.CreatePatternParams, c.author())
	if err != nil {
		return nil, err
	}
	return &patternReply{Pattern: pat, Hint: "Stored as patterns/" + pat.ID + ".md on refs/heads/knowledge; get, update or delete it by id " + pat.ID + "."}, nil
}

func updatePattern(ctx context.Context, c *call, k *ledger.Knowledge, p *updatePatternArgs) (any, error) {
	pat, err := k.UpdatePattern(ctx, p.UpdatePatternParams, c.author())
	if err != nil {
		return nil, err
	}
	return &patternReply{Pattern: pat}, nil
}

func getPattern(ctx context.Context, _ *call, k *ledger.Knowledge, p *knowledgeIDArgs) (any, error) {
	pat, err := k.Pattern(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	return &patternReply{Pattern: pat}, nil
}

func listPatterns(ctx context.Context, _ *call, k *ledger.Knowledge, p *listPatternsArgs) (any, error) {
	f := ledger.PatternFilter{Tags: p.Tags, Search: p.Search, SortBy: p.SortBy, SortOrder: p.SortOrder}
	if p.Tag != "" {
		f.Tags = append(slices.Clone(f.Tags), p.Tag)
	}
	if p.Limit != nil {
		f.Limit = *p.Limit
	}
	if p.Offset != nil {
		f.Offset = *p.Offset
	}
	page, err := k.ListPatterns(ctx, f)
	if err != nil {
		return nil, err
	}
	r := &listPatternsReply{Patterns: []patternSummary{}, Total: page.Total, Limit: page.Limit, Offset: page.Offset, HasMore: page.HasMore}
	for _, pat := range page.Patterns {
		r.Patterns = append(r.Patterns, patternSummary{
			ID: pat.ID, Title: pat.Title, Description: pat.Description, Tags: pat.Tags,
			DerivedFromSessions: pat.DerivedFromSessions, CreatedBy: pat.CreatedBy,
			CreatedAt: pat.CreatedAt, UpdatedAt: pat.UpdatedAt,
		})
	}
	r.Count = len(r.Patterns)
	switch {
	case r.HasMore:
		r.Hint = "More patterns match: list again with offset " + strconv.Itoa(page.Offset+page.Limit) + ". get {id} returns a pattern's content."
	case r.Count > 0:
		r.Hint = "get {id} returns a pattern's content."
	}
	return r, nil
}

func listPatternTags(ctx context.Context, _ *call, k *ledger.Knowledge, _ *noParams) (any, error) {
	tags, err := k.PatternTags(ctx)
	if err != nil {
		return nil, err
	}
	return &listPatternTagsReply{Tags: tags, Count: len(tags)}, nil
}

func deletePattern(ctx context.Context, c *call, k *ledger.Knowledge, p *knowledgeIDArgs) (any, error) {
	pat, err := k.DeletePattern(ctx, p.ID, c.author())
	if err != nil {
		return nil, err
	}
	return &deletedReply{Deleted: true, Kind: string(ledger.KindPattern), ID: pat.ID, Title: pat.Title}, nil
}

func writeNote(ctx context.Context, c *call, k *ledger.Knowledge, p *writeNoteArgs) (any, error) {
	w, err := k.WriteNote(ctx, ledger.WriteNoteParams{ID: p.ID, Title: p.Title, Content: p.Content}, c.author())
	if err != nil {
		return nil, err
	}
	return &noteReply{Note: w.Note, Created: &w.Created}, nil
}

func readNote(ctx context.Context, _ *call, k *ledger.Knowledge, p *knowledgeIDArgs) (any, error) {
	n, err := k.Note(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	return &noteReply{Note: n}, nil
}

func listNotes(ctx context.Context, _ *call, k *ledger.Knowledge, p *pageArgs) (any, error) {
	notes, err := k.ListNotes(ctx)
	if err != nil {
		return nil, err
	}
	page, info := pageOf(notes, *p, "knowledge list_notes")
	r := &listNotesReply{Notes: []noteSummary{}, pageInfo: info}
	for _, n := range page {
		r.Notes = append(r.Notes, noteSummary{ID: n.ID, Title: n.Title, CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt})
	}
	r.Count = len(r.Notes)
	return r, nil
}

func deleteNote(ctx context.Context, c *call, k *ledger.Knowledge, p *knowledgeIDArgs) (any, error) {
	n, err := k.DeleteNote(ctx, p.ID, c.author())
	if err != nil {
		return nil, err
	}
	return &deletedReply{Deleted: true, Kind: string(ledger.KindNote), ID: n.ID, Title: n.Title}, nil
}
