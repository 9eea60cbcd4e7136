package why

import (
	"context"
	"slices"
)

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

// Linked lists the commits linked to the session id: those of the code's
// history (its branches, tags and remote branches) whose trailers name
// it, newest first, then those its link entries name (amends, rebases,
// cherry-picks, relinked squashes) that this repository has. The caller
// checks that the session exists.
func (a *Asker) Linked(ctx context.Context, id string) (*Linked, error) {
	commits, more, err := a.Repo.SessionCommits(ctx, id, MaxLinkedCommits)
	if err != nil {
		return nil, err
	}
	out := &Linked{SessionID: id, Commits: []LinkedCommit{}, More: more}
	seen := map[string]bool{}
	for _, c := range commits {
		seen[c.ID] = true
		out.Commits = append(out.Commits, LinkedCommit{ID: c.ID, Subject: c.Subject})
	}
	if a.Links == nil || len(out.Commits) >= MaxLinkedCommits {
		return out, nil
	}
	links, _, err := a.Links.ReadLinks(ctx, id)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, l := range links {
		if !seen[l.Commit] {
			seen[l.Commit] = true
			ids = append(ids, l.Commit)
		}
	}
	have, err := a.Repo.ExistingCommits(ctx, ids)
	if err != nil {
		return nil, err
	}
	ids = slices.DeleteFunc(ids, func(c string) bool { return !have[c] })
	if len(ids) == 0 {
		return out, nil
	}
	byEntry, err := a.Repo.CommitsByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, c := range byEntry {
		if len(out.Commits) == MaxLinkedCommits {
			out.More = true
			break
		}
		out.Commits = append(out.Commits, LinkedCommit{ID: c.ID, Subject: c.Subject})
	}
	return out, nil
}
