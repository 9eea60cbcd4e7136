package ledger

import (
	"strings"
	"unicode/utf8"
)

// CreateSessionParams describes a new session (seed 002).
type CreateSessionParams struct {
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
}

// normalize trims the title and description, enforces the title rules, and
// drops blank and repeated tags, keeping the first occurrence's order.
func (p CreateSessionParams) normalize() (CreateSessionParams, error) {
	out := CreateSessionParams{
		Title:       strings.TrimSpace(p.Title),
		Description: strings.TrimSpace(p.Description),
		Tags:        []string{},
	}
	if out.Title == "" {
		return out, InvalidField("title", "must not be empty")
	}
	if n := utf8.RuneCountInString(out.Title); n > MaxTitleLength {
		return out, InvalidField("title", "must be at most %d characters, got %d", MaxTitleLength, n).
			with("maxLength", MaxTitleLength)
	}
	seen := map[string]bool{}
	for _, t := range p.Tags {
		t = strings.TrimSpace(t)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		out.Tags = append(out.Tags, t)
	}
	return out, nil
}

// SessionView is a snapshot of a session: its metadata, the integrity check
// made when it was loaded, and its graph. Later writes do not change it.
type SessionView struct {
	// Session counts every thought of the session, branch thoughts
	// included, in ThoughtCount, and the branches in BranchCount.
	Session Session
	// Integrity is the store's check from the last load, with the graph's
	// Problems added; the view holds whatever could be read even when
	// Integrity.Valid is false.
	Integrity IntegrityValidationResult
	Graph     *Graph
}

// AddResult is the outcome of a committed thought.
type AddResult struct {
	// Thought is the thought as committed: numbered, timestamped.
	Thought ThoughtData
	Node    ThoughtNode
	// Session is the session's metadata after the write.
	Session Session
	// Completed is set when the thought said no further thought is needed.
	Completed bool
	// Reopened is set when the session was completed before this thought
	// and the thought asks for more: it is open again.
	Reopened bool
	// NewBranch is set when the thought started a branch.
	NewBranch bool
	// Branches lists the session's branches in creation order.
	Branches []BranchID
}
