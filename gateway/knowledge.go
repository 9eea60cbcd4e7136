package gateway

// The knowledge operation: patterns and scratchpad notes (seed 002,
// "Knowledge Zone Types"), kept in the project's Git repository on
// refs/heads/knowledge by ledger.Knowledge.

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// knowledgeArgs and knowledgeSummary describe the operation in the gateway
// tool's description.
const (
	knowledgeArgs = "operation: create {title, description, content, tags?, id?, derivedFromSessions?, createdBy?} | update {id, title?, description?, content?, tags?, derivedFromSessions?} | get {id} | " +
		"list {tags? (all must match), search?, limit? (20), offset?, sortBy? createdAt|updatedAt|title, sortOrder? asc|desc} | list_tags | delete {id} | " +
		"write_note {id? (default: slug of title), title, content} | read_note {id} | list_notes | delete_note {id}"
	knowledgeSummary = "the knowledge zone: reusable patterns and scratchpad notes, shared by every session of the project and kept in Git (refs/heads/knowledge)"
)

// knowledgeSubOp is one sub-operation of knowledge; it decodes its own
// arguments, strictly.
type knowledgeSubOp func(ctx context.Context, c *call, k *ledger.Knowledge) (any, error)

// knowledgeOps lists the sub-operations in the order error messages name
// them.
var knowledgeOps = []struct {
	name string
	run  knowledgeSubOp
}{
	{"create", knowledgeTyped(createPattern)},
	{"update", knowledgeTyped(updatePattern)},
	{"get", knowledgeTyped(getPattern)},
	{"list", knowledgeTyped(listPatterns)},
	{"list_tags", knowledgeTyped(listPatternTags)},
	{"delete", knowledgeTyped(deletePattern)},
	{"write_note", knowledgeTyped(writeNote)},
	{"read_note", knowledgeTyped(readNote)},
	{"list_notes", knowledgeTyped(listNotes)},
	{"delete_note", knowledgeTyped(deleteNote)},
}

func knowledgeOpNames() []string {
	out := make([]string, len(knowledgeOps))
	for i, op := range knowledgeOps {
		out[i] = op.name
	}
	return out
}

// knowledgeTyped decodes a sub-operation's arguments into P strictly, so an
// argument the sub-operation does not take is reported, not ignored.
func knowledgeTyped[P any](fn func(ctx context.Context, c *call, k *ledger.Knowledge, p *P) (any, error)) knowledgeSubOp {
	return func(ctx context.Context, c *call, k *ledger.Knowledge) (any, error) {
		p := new(P)
		if err := decodeArgs(c.args, p); err != nil {
			return nil, err
		}
		return fn(ctx, c, k, p)
	}
}

// knowledge is the operation's handler: it picks the sub-operation from
// args.operation (or its alias subOperation), as mental_models does.
func knowledge(ctx context.Context, c *call) (any, error) {
	k := c.g.opts.Knowledge
	if k == nil {
		return nil, ledger.Errorf(ledger.CodeInvalidOperation, "the knowledge zone is not configured on this server")
	}
	// The zone belongs to the connection's project: one that moved
	// (navigate, bind_root) reads and writes that project's patterns,
	// from the store behind its ledger.
	if c.ledger != c.g.ledger {
		pk, ok := c.ledger.Knowledge()
		if !ok {
			e := ledger.Errorf(ledger.CodeInvalidOperation, "project %q keeps no knowledge zone", c.project)
			e.Details = map[string]any{"project": c.project}
			return nil, e
		}
		k = pk
	}
	var head map[string]json.RawMessage
	if err := decodeArgs(c.args, &head); err != nil {
		return nil, err
	}
	name, err := subOperation(head)
	if err != nil {
		return nil, err
	}
	for _, op := range knowledgeOps {
		if op.name == name {
			return op.run(ctx, c, k)
		}
	}
	e := ledger.InvalidField("operation", "must be one of %s, got %q", strings.Join(knowledgeOpNames(), ", "), name)
	e.Details["expected"] = knowledgeOpNames()
	return nil, e
}

// subOperation reads args.operation, or its alias subOperation.
func subOperation(head map[string]json.RawMessage) (string, error) {
	var names [2]string
	for i, key := range []string{"operation", "subOperation"} {
		raw, ok := head[key]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, &names[i]); err != nil {
			e := ledger.InvalidField(key, "expected string, got %s", jsonKind(raw))
			e.Details["expected"] = "string"
			return "", e
		}
	}
	name := names[0]
	if err := alias(&name, names[1], "operation", "subOperation"); err != nil {
		return "", err
	}
	if name == "" {
		e := ledger.InvalidField("operation", "is required: one of %s", strings.Join(knowledgeOpNames(), ", "))
		e.Details["expected"] = knowledgeOpNames()
		return "", e
	}
	return name, nil
}

// Every sub-operation's arguments carry operation and subOperation, which
// chose it; they are declared in each so that strict decoding accepts them
// and names them among the expected arguments.

// subOperationArgs are the routing fields every sub-operation's arguments
// carry.
type subOperationArgs struct {
	Operation    string `json:"operation"`
	SubOperation string `json:"subOperation"`
}

// The pattern arguments are the ledger's parameters themselves (embedded,
// so their fields are promoted in JSON): a field added there is accepted
// here without a second definition to keep in step.
type createPatternArgs struct {
	subOperationArgs
	ledger.CreatePatternParams
}

type updatePatternArgs struct {
	subOperationArgs
	ledger.UpdatePatternParams
}

type knowledgeIDArgs struct {
	Operation    string `json:"operation"`
	SubOperation string `json:"subOperation"`
	ID           string `json:"id"`
}

func (p *knowledgeIDArgs) check() error {
	if p.ID == "" {
		return ledger.InvalidField("id", "is required")
	}
	return nil
}

type listPatternsArgs struct {
	Operation    string   `json:"operation"`
	SubOperation string   `json:"subOperation"`
	Tags         []string `json:"tags"`
	// Tag is one tag, as mental_models list_models takes it.
	Tag       string `json:"tag"`
	Search    string `json:"search"`
	Limit     *int   `json:"limit"`
	Offset    *int   `json:"offset"`
	SortBy    string `json:"sortBy"`
	SortOrder string `json:"sortOrder"`
}

func (p *listPatternsArgs) check() error {
	if p.Limit != nil && (*p.Limit < 1 || *p.Limit > ledger.MaxPatternLimit) {
		return ledger.InvalidField("limit", "must be from 1 to %d, got %d", ledger.MaxPatternLimit, *p.Limit)
	}
	return nil
}

type noArgs struct {
	Operation    string `json:"operation"`
	SubOperation string `json:"subOperation"`
}

type writeNoteArgs struct {
	Operation    string `json:"operation"`
	SubOperation string `json:"subOperation"`
	ID           string `json:"id"`
	Title        string `json:"title"`
	Content      string `json:"content"`
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

func listPatternTags(ctx context.Context, _ *call, k *ledger.Knowledge, _ *noArgs) (any, error) {
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

func listNotes(ctx context.Context, _ *call, k *ledger.Knowledge, _ *noArgs) (any, error) {
	notes, err := k.ListNotes(ctx)
	if err != nil {
		return nil, err
	}
	r := &listNotesReply{Notes: []noteSummary{}}
	for _, n := range notes {
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
