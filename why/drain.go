package why

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// DrainResult is what Drain did.
type DrainResult struct {
	// Events is how many pending events were read.
	Events int
	// Linked is how many new link entries were recorded.
	Linked int
	// Warnings name the trailers that named no session of the ledger.
	Warnings []string
	// Skipped is true when another drain held the lock (wait false).
	Skipped bool
}

// Drain turns the events the post-commit and post-rewrite hooks left into
// link entries of the sessions: a new commit is linked to every session
// its final trailer block names that the ledger has (a name no session
// has is a warning); a rewritten commit's links (its link entries, and
// its trailers) are copied to the commit that replaced it. A new commit
// that names no session but has the patch id of a linked commit (a
// cherry-pick of it) takes that commit's links. Draining again records
// nothing twice. With wait false, a drain already running makes this one
// return at once (Skipped); why, blame and relink wait, so that they
// answer with every commit made before them.
func (a *Asker) Drain(ctx context.Context, wait bool) (*DrainResult, error) {
	res := &DrainResult{Warnings: []string{}}
	if a.Links == nil || !a.Repo.HasPending() {
		return res, nil
	}
	unlock, ok, err := a.Repo.LockLinks(ctx, wait)
	if err != nil {
		return nil, err
	}
	if !ok {
		res.Skipped = true
		return res, nil
	}
	defer unlock()
	return a.DrainLocked(ctx)
}

// DrainLocked is Drain for a caller that holds the repository's drain
// lock (coderepo.Repo.LockLinks).
func (a *Asker) DrainLocked(ctx context.Context) (*DrainResult, error) {
	a.locked = true
	defer func() { a.locked = false }()
	res := &DrainResult{Warnings: []string{}}
	if a.Links == nil {
		return res, nil
	}
	events, err := a.Repo.PendingEvents()
	if err != nil || len(events) == 0 {
		return res, err
	}
	res.Events = len(events)
	d := &drain{a: a, res: res, linked: map[string]map[string]ledger.CodeLink{}, out: map[string][]ledger.CodeLink{}, views: map[string]*ledger.SessionView{}}
	if err := d.read(ctx, events); err != nil {
		return nil, err
	}
	for _, e := range events {
		if err := d.event(ctx, e); err != nil {
			return nil, err
		}
	}
	if err := d.write(ctx); err != nil {
		return nil, err
	}
	for _, e := range events {
		if err := e.Done(); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// drain is one Drain's state.
type drain struct {
	a       *Asker
	res     *DrainResult
	idx     *linkIndex
	commits map[string]coderepo.Commit
	patches map[string]string
	// linked holds, by commit then session, the links known so far: the
	// index's and this drain's own.
	linked map[string]map[string]ledger.CodeLink
	// out holds the links to write, by session.
	out   map[string][]ledger.CodeLink
	views map[string]*ledger.SessionView
	now   time.Time
}

// read loads, in a few git processes, every commit the events name.
func (d *drain) read(ctx context.Context, events []coderepo.Event) error {
	var ids, fresh []string
	for _, e := range events {
		if e.Kind == coderepo.EventCommit {
			ids, fresh = append(ids, e.Commit), append(fresh, e.Commit)
		}
		for _, p := range e.Rewritten {
			ids, fresh = append(ids, p[0], p[1]), append(fresh, p[1])
		}
	}
	exist, err := d.a.Repo.ExistingCommits(ctx, ids)
	if err != nil {
		return err
	}
	var have []string
	for id := range exist {
		have = append(have, id)
	}
	sort.Strings(have)
	list, err := d.a.Repo.CommitsByID(ctx, have)
	if err != nil {
		return err
	}
	d.commits = map[string]coderepo.Commit{}
	for _, c := range list {
		d.commits[c.ID] = c
	}
	var patch []string
	for _, id := range fresh {
		if exist[id] {
			patch = append(patch, id)
		}
	}
	if d.patches, err = d.a.Repo.PatchIDs(ctx, dedupe(patch)); err != nil {
		return err
	}
	if d.idx, err = d.a.index(ctx); err != nil {
		return err
	}
	d.now = nowUTC()
	return nil
}

// event records the links one event makes.
func (d *drain) event(ctx context.Context, e coderepo.Event) error {
	if e.Kind == coderepo.EventCommit {
		c, ok := d.commits[e.Commit]
		if !ok {
			return nil // gone already (a reset, a gc): nothing to link
		}
		n, err := d.fromTrailers(ctx, c, ledger.ViaCommit, true)
		if err != nil || n > 0 {
			return err
		}
		// No session named: a cherry-pick of a commit linked by entries
		// alone has its patch id. An amend or a rebase has it too, but
		// its post-rewrite event names the commit it replaces.
		if p := d.patches[c.ID]; p != "" && !e.Rewriting() {
			for _, from := range d.samePatch(p, c.ID) {
				if err := d.copyLinks(ctx, from, c, ledger.ViaCherryPick); err != nil {
					return err
				}
			}
		}
		return nil
	}
	via := ledger.ViaRebase
	if e.Kind == coderepo.EventAmend {
		via = ledger.ViaAmend
	}
	for _, p := range e.Rewritten {
		c, ok := d.commits[p[1]]
		if !ok {
			continue
		}
		if old, ok := d.commits[p[0]]; ok {
			if _, err := d.fromTrailers(ctx, old, via, false); err != nil {
				return err
			}
		}
		if err := d.copyLinks(ctx, p[0], c, via); err != nil {
			return err
		}
	}
	return nil
}

// samePatch lists the linked commits other than self with patch id p.
func (d *drain) samePatch(p, self string) []string {
	var out []string
	if d.idx != nil {
		for _, c := range d.idx.byPatch[p] {
			if c != self {
				out = append(out, c)
			}
		}
	}
	for c, by := range d.linked {
		if c == self || contains(out, c) {
			continue
		}
		for _, l := range by {
			if l.PatchID == p {
				out = append(out, c)
			}
			break // the links of one commit share its patch id
		}
	}
	sort.Strings(out)
	return out
}

// fromTrailers links c to each session its trailers name that the ledger
// has, and returns how many it names. record false only learns the
// links (an old commit of a rewrite, whose links are then copied).
func (d *drain) fromTrailers(ctx context.Context, c coderepo.Commit, via ledger.LinkVia, record bool) (int, error) {
	n := 0
	for _, id := range c.Sessions {
		v, err := d.session(ctx, id)
		if err != nil {
			return n, err
		}
		if v == nil {
			if record {
				d.res.Warnings = append(d.res.Warnings, fmt.Sprintf("commit %s names session %q, which this ledger does not have; ignored", short(c.ID), id))
			}
			continue
		}
		n++
		l := d.link(c, v, via, "")
		if record {
			d.add(l)
		} else {
			d.learn(l)
		}
	}
	return n, nil
}

// copyLinks links c to every session commit from is linked to.
func (d *drain) copyLinks(ctx context.Context, from string, c coderepo.Commit, via ledger.LinkVia) error {
	sessions := d.linksOf(from)
	for _, id := range sessions {
		v, err := d.session(ctx, id)
		if err != nil {
			return err
		}
		if v != nil {
			d.add(d.link(c, v, via, from))
		}
	}
	return nil
}

// linksOf lists the sessions commit is linked to, sorted.
func (d *drain) linksOf(commit string) []string {
	var out []string
	for _, l := range d.idx.sessionsOf(commit) {
		out = append(out, l.Session)
	}
	for s := range d.linked[commit] {
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// session loads a session once per drain (nil when the ledger has none).
func (d *drain) session(ctx context.Context, id string) (*ledger.SessionView, error) {
	if v, ok := d.views[id]; ok {
		return v, nil
	}
	v, _, err := d.a.view(ctx, id)
	if err != nil {
		return nil, err
	}
	d.views[id] = v
	return v, nil
}

// link is the link of c to session v: the thoughts whose code references
// name a file c changed (or c itself), c's files and patch id.
func (d *drain) link(c coderepo.Commit, v *ledger.SessionView, via ledger.LinkVia, from string) ledger.CodeLink {
	l := ledger.CodeLink{Commit: c.ID, Session: v.Session.ID, Files: append([]string{}, c.Files...), PatchID: d.patches[c.ID], Via: via, From: from, At: d.now}
	if len(l.Files) > ledger.MaxLinkFiles {
		l.Files = l.Files[:ledger.MaxLinkFiles]
	}
	for _, n := range v.Graph.Nodes() {
		for _, ref := range n.Data.Code {
			if ref.Commit == c.ID || ref.Path != "" && contains(c.Files, ref.Path) {
				l.Thoughts = append(l.Thoughts, ledger.LinkedThought{Number: n.Data.ThoughtNumber, Branch: string(n.BranchID)})
				break
			}
		}
	}
	return l
}

// learn remembers a link without writing it.
func (d *drain) learn(l ledger.CodeLink) {
	by := d.linked[l.Commit]
	if by == nil {
		by = map[string]ledger.CodeLink{}
		d.linked[l.Commit] = by
	}
	if _, ok := by[l.Session]; !ok {
		by[l.Session] = l
	}
}

// add remembers a link and queues it for writing, unless the commit is
// linked to the session already.
func (d *drain) add(l ledger.CodeLink) {
	for _, have := range d.idx.sessionsOf(l.Commit) {
		if have.Session == l.Session {
			return
		}
	}
	if _, ok := d.linked[l.Commit][l.Session]; ok {
		return
	}
	d.learn(l)
	d.out[l.Session] = append(d.out[l.Session], l)
}

// write records the queued links, one commit per session.
func (d *drain) write(ctx context.Context) error {
	ids := make([]string, 0, len(d.out))
	for id := range d.out {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		n, err := d.a.Links.AddLinks(ctx, id, d.out[id])
		if err != nil {
			return fmt.Errorf("record the links of session %s: %w", id, err)
		}
		d.res.Linked += n
	}
	if len(ids) > 0 {
		if err := d.a.indexWrote(ctx, ids); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

func dedupe(list []string) []string {
	seen := map[string]bool{}
	out := list[:0]
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func nowUTC() time.Time { return time.Now().UTC().Truncate(time.Second) }
