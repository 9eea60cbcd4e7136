package why

import "context"

// MaxLinkedCommits bounds the commits Linked lists for one session.
const MaxLinkedCommits = 100

// LinkedCommit is a commit of the code that names a session.
type LinkedCommit struct {
	ID      string `json:"commit"`
	Subject string `json:"subject"`
}

// Linked is what Linked returns: the commits linked to one session.
type Linked struct {
	SessionID string         `json:"sessionId"`
	Commits   []LinkedCommit `json:"commits"`
	// More says that more commits than MaxLinkedCommits name it.
	More bool `json:"more"`
}

// Linked lists the commits of the code's history (its branches, tags and
// remote branches) that name the session id, newest first. The caller
// checks that the session exists; the trailers are what links it.
func (a *Asker) Linked(ctx context.Context, id string) (*Linked, error) {
	commits, more, err := a.Repo.SessionCommits(ctx, id, MaxLinkedCommits)
	if err != nil {
		return nil, err
	}
	out := &Linked{SessionID: id, Commits: []LinkedCommit{}, More: more}
	for _, c := range commits {
		out.Commits = append(out.Commits, LinkedCommit{ID: c.ID, Subject: c.Subject})
	}
	return out, nil
}
