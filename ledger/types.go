// Package ledger is the domain of Thoughtbox: sessions, thoughts, the thought
// graph, numbering and validation rules, and the revision index.
//
// It does no I/O of its own. Persistence is a Store (implemented by gitstore);
// the ledger validates and numbers a thought, asks the store to commit it, and
// only then updates its single in-memory view of the session from what was
// committed.
package ledger

import (
	"encoding/json"
	"time"
)

// Critique is the review of a thought written by a model through MCP sampling.
type Critique struct {
	Text      string    `json:"text"`
	Model     string    `json:"model"`
	Timestamp time.Time `json:"timestamp"`
}

// ThoughtData is one reasoning step as stored in the ledger (seed 002).
// Optional integers are pointers so that "absent" and "zero" stay distinct.
type ThoughtData struct {
	Thought           string    `json:"thought"`
	ThoughtNumber     int       `json:"thoughtNumber"`
	TotalThoughts     int       `json:"totalThoughts"`
	NextThoughtNeeded bool      `json:"nextThoughtNeeded"`
	IsRevision        bool      `json:"isRevision,omitempty"`
	RevisesThought    *int      `json:"revisesThought,omitempty"`
	BranchFromThought *int      `json:"branchFromThought,omitempty"`
	BranchID          string    `json:"branchId,omitempty"`
	NeedsMoreThoughts bool      `json:"needsMoreThoughts,omitempty"`
	IncludeGuide      bool      `json:"includeGuide,omitempty"`
	Timestamp         time.Time `json:"timestamp"`
	Critique          *Critique `json:"critique,omitempty"`
	// RLM is the outcome of a recursive language model run the agent asked
	// for with this thought; it is committed in the thought's own commit.
	RLM *RLMResult `json:"rlm,omitempty"`
	// Code names the code the thought is about (see CodeRef).
	Code []CodeRef `json:"code,omitempty"`
}

// Session is the metadata of a reasoning session (seed 002).
type Session struct {
	ID             string    `json:"id"`
	Title          string    `json:"title"`
	Description    string    `json:"description,omitempty"`
	Tags           []string  `json:"tags"`
	ThoughtCount   int       `json:"thoughtCount"`
	BranchCount    int       `json:"branchCount"`
	PartitionPath  string    `json:"partitionPath,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
	LastAccessedAt time.Time `json:"lastAccessedAt"`
}

// MaxTitleLength is the longest session title accepted, in characters.
const MaxTitleLength = 200

// IntegrityValidationResult reports whether a stored session is whole (seed 002).
type IntegrityValidationResult struct {
	Valid               bool                `json:"valid"`
	SessionExists       bool                `json:"sessionExists"`
	ManifestExists      bool                `json:"manifestExists"`
	ManifestValid       bool                `json:"manifestValid"`
	MissingThoughtFiles []string            `json:"missingThoughtFiles"`
	MissingBranchFiles  map[string][]string `json:"missingBranchFiles"`
	Errors              []string            `json:"errors"`
}

// MarshalJSON keeps the empty collections as [] and {} rather than null, so
// that readers of the JSON see the schema's shape.
func (r IntegrityValidationResult) MarshalJSON() ([]byte, error) {
	type plain IntegrityValidationResult
	p := plain(r)
	if p.MissingThoughtFiles == nil {
		p.MissingThoughtFiles = []string{}
	}
	if p.MissingBranchFiles == nil {
		p.MissingBranchFiles = map[string][]string{}
	}
	if p.Errors == nil {
		p.Errors = []string{}
	}
	return json.Marshal(p)
}
