// Package why answers "why is this code like this?" in a repository that
// keeps its reasoning (see coderepo): for a commit or a range, the
// sessions its Thoughtbox-Session trailers name or the ledger's link
// entries link to it (see Drain and Relink), their conclusion, the
// thoughts that name the files it changed, their revisions and branches;
// for lines of a file, the commits git blame gives and the same reasoning.
// The CLI (why, blame) and the gateway's why operation both answer
// through it:
//
//	a := why.Asker{Repo: repo, Sessions: ledger}
//	ans, err := a.Commits(ctx, "HEAD~3..HEAD")
//
// A trailer is a claim anyone can type: one that names no session of the
// ledger is dropped with a warning, so a forged line changes nothing.
package why

import (
	"context"
	"errors"
	"fmt"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// Sessions reads a session of the repository's ledger (*ledger.Ledger).
type Sessions interface {
	View(ctx context.Context, id string) (*ledger.SessionView, error)
}

// FetchFunc brings the named sessions into the ledger from where the
// repository shares its reasoning (project.FetchSessions): a clone starts
// with none, and a read fetches what it needs.
type FetchFunc func(ctx context.Context, ids []string) error

// Asker answers why questions about one repository.
type Asker struct {
	Repo     *coderepo.Repo
	Sessions Sessions
	// Fetch, when set, is asked once per answer for the sessions the
	// commits name that the ledger lacks; its failure is a warning.
	Fetch FetchFunc

	// Links, if set, keeps the link entries of the ledger: why and blame
	// then read links from them as well as from trailers, and Drain and
	// Relink write them.
	Links LinkStore

	idx *linkIndex // the link index, read once per Asker
	// locked is true while this Asker holds the drain lock (DrainLocked,
	// Relink), which guards writes of the index file.
	locked bool
}

// Thought is one thought as an answer shows it.
type Thought struct {
	Number int `json:"thoughtNumber"`
	// Branch is the reasoning branch it is on ("" for the main chain).
	Branch  string           `json:"branchId,omitempty"`
	Text    string           `json:"thought"`
	Revises *int             `json:"revisesThought,omitempty"`
	Code    []ledger.CodeRef `json:"code,omitempty"`
}

// Branch is a line of reasoning forked from the main chain: what was
// tried beside the conclusion.
type Branch struct {
	ID          string    `json:"branchId"`
	FromThought int       `json:"fromThought"`
	Thoughts    []Thought `json:"thoughts"`
}

// Session is the reasoning one linked session holds about a commit.
type Session struct {
	ID    string `json:"sessionId"`
	Title string `json:"title"`
	// LinkedBy says where the link comes from: "trailer" (the commit's
	// message names the session), or how its link entry was made:
	// commit, amend, rebase, cherry-pick, relink.
	LinkedBy string `json:"linkedBy"`
	// Conclusion is the last thought of the main chain (nil for a
	// session with none).
	Conclusion *Thought `json:"conclusion"`
	// Touching are the thoughts whose code references name what is
	// asked about: a file the commit changed, or the blamed lines.
	Touching  []Thought `json:"touching"`
	Revisions []Thought `json:"revisions"`
	Branches  []Branch  `json:"branches"`
}

// Commit is the answer for one commit.
type Commit struct {
	ID      string   `json:"commit"`
	Subject string   `json:"subject"`
	Files   []string `json:"files"`
	// Sessions is empty for a commit no existing session is linked to.
	Sessions []Session `json:"sessions"`
}

// Answer is what Commits returns.
type Answer struct {
	Commits []Commit `json:"commits"`
	// Warnings name the trailers that were ignored.
	Warnings []string `json:"warnings"`
	// Fetched are the sessions this answer fetched first (see
	// Asker.Fetch).
	Fetched []string `json:"fetched,omitempty"`
}

// Commits answers for rev: one commit or a range A..B.
func (a *Asker) Commits(ctx context.Context, rev string) (*Answer, error) {
	commits, err := a.Repo.Commits(ctx, rev)
	if err != nil {
		return nil, err
	}
	ans := &Answer{Commits: []Commit{}, Warnings: []string{}}
	ans.Fetched, ans.Warnings = a.fetchMissing(ctx, commits)
	for _, c := range commits {
		files := c.Files
		out := Commit{ID: c.ID, Subject: c.Subject, Files: append([]string{}, files...), Sessions: []Session{}}
		touches := func(ref ledger.CodeRef) bool { return ref.Commit == c.ID || contains(files, ref.Path) }
		views, err := a.linked(ctx, c, &ans.Warnings)
		if err != nil {
			return nil, err
		}
		for _, v := range views {
			out.Sessions = append(out.Sessions, summarize(v, touches))
		}
		ans.Commits = append(ans.Commits, out)
	}
	return ans, nil
}

// linkedSession is a session linked to a commit, and how.
type linkedSession struct {
	view *ledger.SessionView
	// via is "trailer" for a link the commit's message makes, else how
	// the link entry was made (commit, amend, rebase, cherry-pick,
	// relink).
	via string
}

// linked loads the sessions c's trailers name and those link entries
// link to it; a trailer naming no session is a warning, not an error.
func (a *Asker) linked(ctx context.Context, c coderepo.Commit, warnings *[]string) ([]linkedSession, error) {
	var out []linkedSession
	seen := map[string]bool{}
	for _, id := range c.Sessions {
		v, ok, err := a.view(ctx, id)
		if err != nil {
			return nil, err
		}
		if !ok {
			*warnings = append(*warnings, fmt.Sprintf("commit %s names session %q, which this ledger does not have; ignored", short(c.ID), id))
			continue
		}
		seen[id] = true
		out = append(out, linkedSession{view: v, via: "trailer"})
	}
	idx, err := a.index(ctx)
	if err != nil {
		return nil, err
	}
	for _, l := range idx.sessionsOf(c.ID) {
		if seen[l.Session] {
			continue
		}
		seen[l.Session] = true
		v, ok, err := a.view(ctx, l.Session)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, linkedSession{view: v, via: string(l.Via)})
		}
	}
	return out, nil
}

// view loads session id; ok is false when the ledger has no such session
// (or id could be none).
func (a *Asker) view(ctx context.Context, id string) (*ledger.SessionView, bool, error) {
	if !plausibleID(id) {
		return nil, false, nil
	}
	v, err := a.Sessions.View(ctx, id)
	switch {
	case notFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return v, true, nil
}

// fetchMissing asks Fetch, once, for every session the commits name that
// the ledger lacks, and says which arrived; a failure to fetch is a
// warning (the answer then warns about each session it still lacks).
func (a *Asker) fetchMissing(ctx context.Context, commits []coderepo.Commit) (fetched, warnings []string) {
	warnings = []string{}
	if a.Fetch == nil {
		return nil, warnings
	}
	var missing []string
	for _, c := range commits {
		for _, id := range c.Sessions {
			if !plausibleID(id) || contains(missing, id) {
				continue
			}
			if _, err := a.Sessions.View(ctx, id); err != nil && notFound(err) {
				missing = append(missing, id)
			}
		}
	}
	if len(missing) == 0 {
		return nil, warnings
	}
	if err := a.Fetch(ctx, missing); err != nil {
		return nil, append(warnings, fmt.Sprintf("could not fetch %d linked session(s) this clone lacks: %v", len(missing), err))
	}
	for _, id := range missing {
		if _, err := a.Sessions.View(ctx, id); err == nil {
			fetched = append(fetched, id)
		}
	}
	return fetched, warnings
}

func notFound(err error) bool {
	var le *ledger.Error
	return errors.Is(err, ledger.ErrSessionNotFound) || (errors.As(err, &le) && (le.Code == ledger.CodeSessionNotFound || le.Code == ledger.CodeInvalidPayload))
}

// summarize picks from a session what answers why: its conclusion, the
// thoughts touches accepts a code reference of, revisions and branches.
func summarize(ls linkedSession, touches func(ledger.CodeRef) bool) Session {
	v := ls.view
	g := v.Graph
	s := Session{ID: v.Session.ID, Title: v.Session.Title, LinkedBy: ls.via, Touching: []Thought{}, Revisions: []Thought{}, Branches: []Branch{}}
	if main := g.MainChain(); len(main) > 0 {
		t := thought(main[len(main)-1])
		s.Conclusion = &t
	}
	for _, n := range g.Nodes() {
		for _, ref := range n.Data.Code {
			if touches(ref) {
				s.Touching = append(s.Touching, thought(n))
				break
			}
		}
		if n.Data.IsRevision && n.Data.RevisesThought != nil {
			s.Revisions = append(s.Revisions, thought(n))
		}
	}
	for _, b := range g.Branches() {
		nodes, _ := g.Branch(b.ID)
		br := Branch{ID: string(b.ID), FromThought: b.FromThought, Thoughts: []Thought{}}
		for _, n := range nodes {
			br.Thoughts = append(br.Thoughts, thought(n))
		}
		s.Branches = append(s.Branches, br)
	}
	return s
}

func thought(n ledger.ThoughtNode) Thought {
	return Thought{Number: n.Data.ThoughtNumber, Branch: string(n.BranchID), Text: n.Data.Thought, Revises: n.Data.RevisesThought, Code: n.Data.Code}
}

// plausibleID keeps a forged trailer's value (a path, a ref name) away
// from the store: session ids are letters, digits and dashes.
func plausibleID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
