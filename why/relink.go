package why

import (
	"context"
	"errors"
	"os"
	"sort"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// MinCovered is the share of a linked commit's added lines a commit must
// also add (file by file) for relink to give it that commit's links: a
// squash merge adds every line its commits added, less those a later
// commit of the squash changed again.
const MinCovered = 0.8

// Relinked is one commit relink linked.
type Relinked struct {
	Commit   string   `json:"commit"`
	Subject  string   `json:"subject"`
	Sessions []string `json:"sessions"`
	// From are the linked commits it replaces.
	From []string `json:"from"`
	// By is how they were found: "patch-id" or "hunks".
	By string `json:"by"`
}

// RelinkResult is what Relink did (or, with dry run, would do).
type RelinkResult struct {
	Linked []Relinked `json:"linked"`
	// Unmatched are the commits without a link for which no linked
	// commit they replace was found.
	Unmatched []string `json:"unmatched"`
	// AlreadyLinked counts the commits of the range that had links.
	AlreadyLinked int  `json:"alreadyLinked"`
	DryRun        bool `json:"dryRun"`
}

// Relink links each commit of rev (a commit or a range) that has no link
// to the sessions of the linked commits it replaces, found by equal git
// patch-id --stable (a rebase done elsewhere) or else by changed hunks: a
// commit takes the links of every linked commit whose added lines, file
// by file, it adds too (at least MinCovered of them; a squash merge).
// Candidates are the linked commits of the index that changed a file the
// commit changed and whose objects are still here. The links are written
// with via relink unless dryRun.
func (a *Asker) Relink(ctx context.Context, rev string, dryRun bool) (*RelinkResult, error) {
	// The lock is held throughout, so that the index relink reads and
	// the one it writes are not another drain's.
	unlock, _, err := a.Repo.LockLinks(ctx, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := a.DrainLocked(ctx); err != nil {
		return nil, err
	}
	a.locked = true
	defer func() { a.locked = false }()
	// relink is rare and looks for links anywhere: the index is checked
	// against the refs first.
	if a.Links != nil {
		if _, err := a.checkIndex(ctx, a.readIndexFile()); err != nil {
			return nil, err
		}
	}
	commits, err := a.Repo.Commits(ctx, rev)
	if err != nil {
		return nil, err
	}
	idx, err := a.index(ctx)
	if err != nil {
		return nil, err
	}
	res := &RelinkResult{Linked: []Relinked{}, Unmatched: []string{}, DryRun: dryRun}
	var open []coderepo.Commit
	for _, c := range commits {
		var warnings []string
		ls, err := a.linked(ctx, c, &warnings)
		if err != nil {
			return nil, err
		}
		if len(ls) > 0 {
			res.AlreadyLinked++
			continue
		}
		open = append(open, c)
	}
	if len(open) == 0 {
		return res, nil
	}
	ids := make([]string, len(open))
	for i, c := range open {
		ids[i] = c.ID
	}
	patches, err := a.Repo.PatchIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	m := &matcher{a: a, idx: idx, added: map[string]map[string][]string{}}
	out := map[string][]ledger.CodeLink{}
	now := nowUTC()
	for i := len(open) - 1; i >= 0; i-- { // oldest first
		c := open[i]
		from, by, err := m.match(ctx, c, patches[c.ID])
		if err != nil {
			return nil, err
		}
		if len(from) == 0 {
			res.Unmatched = append(res.Unmatched, c.ID)
			continue
		}
		r := Relinked{Commit: c.ID, Subject: c.Subject, From: from, By: by, Sessions: []string{}}
		for _, f := range from {
			for _, l := range idx.sessionsOf(f) {
				if contains(r.Sessions, l.Session) {
					continue
				}
				r.Sessions = append(r.Sessions, l.Session)
				out[l.Session] = append(out[l.Session], ledger.CodeLink{Commit: c.ID, Files: c.Files, PatchID: patches[c.ID],
					Thoughts: l.Thoughts, Via: ledger.ViaRelink, From: f, At: now})
			}
		}
		sort.Strings(r.Sessions)
		res.Linked = append(res.Linked, r)
	}
	if dryRun {
		return res, nil
	}
	sessions := make([]string, 0, len(out))
	for s := range out {
		sessions = append(sessions, s)
	}
	sort.Strings(sessions)
	for _, s := range sessions {
		if _, err := a.Links.AddLinks(ctx, s, out[s]); err != nil {
			return nil, err
		}
	}
	if err := a.indexWrote(ctx, sessions); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return res, nil
}

// matcher finds the linked commits a commit replaces.
type matcher struct {
	a     *Asker
	idx   *linkIndex
	added map[string]map[string][]string // a commit's added lines, read once
}

// match returns the linked commits c replaces and how they were found.
func (m *matcher) match(ctx context.Context, c coderepo.Commit, patch string) ([]string, string, error) {
	if m.idx == nil {
		return nil, "", nil
	}
	if patch != "" {
		var same []string
		for _, id := range m.idx.byPatch[patch] {
			if id != c.ID {
				same = append(same, id)
			}
		}
		exist, err := m.a.Repo.ExistingCommits(ctx, same)
		if err != nil {
			return nil, "", err
		}
		var from []string
		for _, id := range same {
			if exist[id] {
				from = append(from, id)
			}
		}
		if len(from) > 0 {
			sort.Strings(from)
			return from, "patch-id", nil
		}
	}
	var cands []string
	for _, f := range c.Files {
		for _, id := range m.idx.byFile[f] {
			if id != c.ID && !contains(cands, id) {
				cands = append(cands, id)
			}
		}
	}
	exist, err := m.a.Repo.ExistingCommits(ctx, cands)
	if err != nil || len(exist) == 0 {
		return nil, "", err
	}
	mine, err := m.addedLines(ctx, c.ID)
	if err != nil {
		return nil, "", err
	}
	var from []string
	for _, id := range cands {
		if !exist[id] {
			continue
		}
		theirs, err := m.addedLines(ctx, id)
		if err != nil {
			return nil, "", err
		}
		if Covered(mine, theirs) >= MinCovered {
			from = append(from, id)
		}
	}
	sort.Strings(from)
	return from, "hunks", nil
}

func (m *matcher) addedLines(ctx context.Context, id string) (map[string][]string, error) {
	if a, ok := m.added[id]; ok {
		return a, nil
	}
	a, err := m.a.Repo.AddedLines(ctx, id)
	if err != nil {
		return nil, err
	}
	m.added[id] = a
	return a, nil
}

// Covered is the share of the lines theirs adds (per file, counted with
// repeats) that mine adds to the same file too; 0 when theirs adds none.
func Covered(mine, theirs map[string][]string) float64 {
	total, found := 0, 0
	for file, lines := range theirs {
		have := map[string]int{}
		for _, l := range mine[file] {
			have[l]++
		}
		for _, l := range lines {
			total++
			if have[l] > 0 {
				have[l]--
				found++
			}
		}
	}
	if total == 0 {
		return 0
	}
	return float64(found) / float64(total)
}
