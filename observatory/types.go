package observatory

import (
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// Status is where a session stands, as the Observatory shows it.
type Status string

// The statuses of seed 002's ObservatorySession.
const (
	// StatusActive is a session whose last thought asked for more and
	// that had a thought within the abandonment window.
	StatusActive Status = ledger.StatusActive
	// StatusCompleted is a session whose last thought said no further
	// thought was needed.
	StatusCompleted Status = ledger.StatusCompleted
	// StatusAbandoned is a session that is not completed and had no
	// thought for longer than Config.AbandonAfter.
	StatusAbandoned Status = ledger.StatusAbandoned
)

// Session is seed 002's ObservatorySession, with the counts and times the
// session list shows.
type Session struct {
	ID           string     `json:"id"`
	Title        *string    `json:"title"`
	Description  string     `json:"description,omitempty"`
	Tags         []string   `json:"tags"`
	CreatedAt    time.Time  `json:"createdAt"`
	UpdatedAt    time.Time  `json:"updatedAt"`
	CompletedAt  *time.Time `json:"completedAt"`
	Status       Status     `json:"status"`
	ThoughtCount int        `json:"thoughtCount"`
	BranchCount  int        `json:"branchCount"`
}

// Thought is seed 002's ObservatoryThought, with the graph links and the
// fields the detail panel shows (node id, commit, critique, cipher).
type Thought struct {
	ID                string             `json:"id"`
	ThoughtNumber     int                `json:"thoughtNumber"`
	TotalThoughts     int                `json:"totalThoughts"`
	Thought           string             `json:"thought"`
	NextThoughtNeeded bool               `json:"nextThoughtNeeded"`
	Timestamp         time.Time          `json:"timestamp"`
	IsRevision        bool               `json:"isRevision,omitempty"`
	RevisesThought    *int               `json:"revisesThought,omitempty"`
	BranchID          string             `json:"branchId,omitempty"`
	BranchFromThought *int               `json:"branchFromThought,omitempty"`
	NeedsMoreThoughts bool               `json:"needsMoreThoughts,omitempty"`
	ParentID          *string            `json:"parentId"`
	RevisesNode       string             `json:"revisesNode,omitempty"`
	BranchOrigin      string             `json:"branchOrigin,omitempty"`
	Commit            string             `json:"commit,omitempty"`
	Critique          *ledger.Critique   `json:"critique,omitempty"`
	Cipher            *ledger.CipherInfo `json:"cipher,omitempty"`
	Code              []ledger.CodeRef   `json:"code,omitempty"`
}

// Branch is seed 002's ObservatoryBranch.
type Branch struct {
	ID                string    `json:"id"`
	Name              *string   `json:"name"`
	FromThoughtNumber int       `json:"fromThoughtNumber"`
	Origin            string    `json:"origin,omitempty"`
	Thoughts          []Thought `json:"thoughts"`
}

// Snapshot is seed 002's SessionSnapshotPayload: the session, its main
// chain in order, and its branches by id.
type Snapshot struct {
	Session  Session           `json:"session"`
	Thoughts []Thought         `json:"thoughts"`
	Branches map[string]Branch `json:"branches"`
}

// ThoughtDetail is what the detail panel asks for beyond the snapshot: who
// recorded the thought (the commit's author) and when.
type ThoughtDetail struct {
	ID          string           `json:"id"`
	Commit      string           `json:"commit"`
	Author      string           `json:"author"`
	AuthorEmail string           `json:"authorEmail"`
	CommittedAt time.Time        `json:"committedAt"`
	Critique    *ledger.Critique `json:"critique,omitempty"`
}

// ErrorPayload is seed 002's ErrorPayload.
type ErrorPayload struct {
	Code    ledger.Code    `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

func thoughtOf(n ledger.ThoughtNode) Thought {
	d := n.Data
	t := Thought{
		ID:                n.ID,
		ThoughtNumber:     d.ThoughtNumber,
		TotalThoughts:     d.TotalThoughts,
		Thought:           d.Thought,
		NextThoughtNeeded: d.NextThoughtNeeded,
		Timestamp:         d.Timestamp,
		IsRevision:        d.IsRevision,
		RevisesThought:    d.RevisesThought,
		BranchID:          d.BranchID,
		BranchFromThought: d.BranchFromThought,
		NeedsMoreThoughts: d.NeedsMoreThoughts,
		RevisesNode:       n.RevisesNode,
		BranchOrigin:      n.BranchOrigin,
		Commit:            string(n.Commit()),
		Critique:          d.Critique,
		Cipher:            n.Cipher,
		Code:              d.Code,
	}
	if n.Prev != "" {
		p := n.Prev
		t.ParentID = &p
	}
	return t
}

// statusOf is the ledger's rule (Graph.Status), in the Observatory's type.
func statusOf(g *ledger.Graph, updated, now time.Time, abandonAfter time.Duration) (Status, *time.Time) {
	s, at := g.Status(updated, now, abandonAfter)
	return Status(s), at
}

func sessionOf(s ledger.Session, status Status, completedAt *time.Time) Session {
	title := s.Title
	tags := s.Tags
	if tags == nil {
		tags = []string{}
	}
	return Session{
		ID: s.ID, Title: &title, Description: s.Description, Tags: tags,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, CompletedAt: completedAt, Status: status,
		ThoughtCount: s.ThoughtCount, BranchCount: s.BranchCount,
	}
}

// snapshotOf builds the snapshot of a loaded session.
func snapshotOf(v *ledger.SessionView, now time.Time, abandonAfter time.Duration) Snapshot {
	status, completedAt := statusOf(v.Graph, v.Session.UpdatedAt, now, abandonAfter)
	snap := Snapshot{
		Session:  sessionOf(v.Session, status, completedAt),
		Thoughts: []Thought{},
		Branches: map[string]Branch{},
	}
	for _, n := range v.Graph.MainChain() {
		snap.Thoughts = append(snap.Thoughts, thoughtOf(n))
	}
	for _, b := range v.Graph.Branches() {
		nodes, _ := v.Graph.Branch(b.ID)
		br := Branch{ID: string(b.ID), FromThoughtNumber: b.FromThought, Origin: b.Origin, Thoughts: make([]Thought, 0, len(nodes))}
		for _, n := range nodes {
			br.Thoughts = append(br.Thoughts, thoughtOf(n))
		}
		snap.Branches[string(b.ID)] = br
	}
	return snap
}
