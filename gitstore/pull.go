package gitstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// divergedPrefix is where pull keeps a remote's chain of a session that was
// extended differently here: refs/thoughtbox/diverged/<remote>/sessions/<id>/main.
// It is outside refs/heads, so sessions list, load and push as before, and
// `git log --all` still shows the remote's thoughts.
const divergedPrefix = "refs/thoughtbox/diverged/"

// Divergence is a ref whose chain differs here and on a remote.
type Divergence struct {
	Session string `json:"session,omitempty"`
	Ref     string `json:"ref"`
	// KeptAs is the ref holding the remote's chain.
	KeptAs string `json:"keptAs"`
	Local  string `json:"local"`
	Remote string `json:"remote"`
}

// PullResult says what a pull did.
type PullResult struct {
	Remote   string       `json:"remote,omitempty"`
	URL      string       `json:"url"`
	Created  []RefChange  `json:"created"`
	Updated  []RefChange  `json:"updated"`
	UpToDate int          `json:"upToDate"`
	Diverged []Divergence `json:"diverged"`
	// Quarantined are incoming chains that failed the checks of what a
	// pull brings in (see incoming.go); none of them moved a live ref.
	Quarantined []Quarantined `json:"quarantined"`
	// Deleted are sessions the remote has that were deleted here; they
	// were left alone.
	Deleted []string `json:"deleted,omitempty"`
	Objects int      `json:"objects"`
	Bytes   int64    `json:"bytes"`
}

// Pull fetches a remote's sessions and knowledge and integrates them: a ref
// we lack is created, one we are behind on is fast-forwarded, one we are
// ahead on is left for push, and one that diverged is left as it is here
// while the remote's chain is kept under refs/thoughtbox/diverged/<remote>/
// (a session moves whole: if any of its refs diverged, none is changed).
// Nothing stored here is ever overwritten.
func (s *Store) Pull(ctx context.Context, remote string, o TransferOptions) (*PullResult, error) {
	link, session, err := s.connect(ctx, remote, o, func(tr transport.Transport, ep *transport.Endpoint, auth transport.AuthMethod) (transport.Session, error) {
		return tr.NewUploadPackSession(ep, auth)
	})
	if err != nil {
		return nil, err
	}
	defer session.Close()
	sess := session.(transport.UploadPackSession)
	ar, u, builtin := link.adv, link.url, link.builtin
	keepName := link.name
	if keepName == "" || validRemoteName(keepName) != nil {
		keepName = "url-" + slug(redactURL(u))
	}
	res := &PullResult{Remote: link.name, URL: redactURL(u), Created: []RefChange{}, Updated: []RefChange{}, Diverged: []Divergence{}, Quarantined: []Quarantined{}}
	remoteRefs := map[string]hash{}
	advertised := map[hash]bool{}
	for n, h := range ar.References {
		advertised[h] = true
		// Only refs of our layout, with names we would write ourselves: a
		// remote's ref names become file names here.
		if shared(n) && n != "refs/heads/main" && validSharedRef(n) {
			remoteRefs[n] = h
		}
	}

	var wants []hash
	wanted := map[hash]bool{}
	for _, h := range remoteRefs {
		if wanted[h] {
			continue
		}
		if _, _, err := s.be.ReadObject(ctx, h); err == nil {
			continue
		} else if !errors.Is(err, errNotFound) {
			return nil, err
		}
		wanted[h] = true
		wants = append(wants, h)
	}
	if len(wants) > 0 {
		local, err := s.be.ListRefs(ctx, "refs/")
		if err != nil {
			return nil, err
		}
		haves := make([]hash, 0, len(local))
		seen := map[hash]bool{}
		for _, h := range local {
			// go-git's in-process server fails on a have it lacks, so it
			// is told only of tips it advertised.
			if builtin && !advertised[h] {
				continue
			}
			if !seen[h] {
				seen[h] = true
				haves = append(haves, h)
			}
		}
		sort.Slice(haves, func(i, j int) bool { return haves[i].String() < haves[j].String() })
		sort.Slice(wants, func(i, j int) bool { return wants[i].String() < wants[j].String() })
		req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
		// A thin pack leaves out bases we have; ours are often in the
		// write-ahead log, not in a pack, so ask for a whole one.
		req.Capabilities.Delete(capability.ThinPack)
		if o.Progress == nil && ar.Capabilities.Supports(capability.NoProgress) {
			req.Capabilities.Set(capability.NoProgress)
		}
		req.Wants, req.Haves = wants, haves
		start := time.Now()
		var progress io.Writer
		if o.Progress != nil {
			progress = &lateWriter{w: o.Progress, after: start.Add(time.Second)}
		}
		resp, err := sess.UploadPack(ctx, req)
		if err != nil {
			return nil, describeDialError(u, err)
		}
		r := resp
		var body interface{ Read([]byte) (int, error) } = r
		switch {
		case req.Capabilities.Supports(capability.Sideband64k):
			d := sideband.NewDemuxer(sideband.Sideband64k, r)
			d.Progress = progress
			body = d
		case req.Capabilities.Supports(capability.Sideband):
			d := sideband.NewDemuxer(sideband.Sideband, r)
			d.Progress = progress
			body = d
		}
		res.Objects, res.Bytes, err = s.ingestPack(ctx, body)
		resp.Close()
		if err != nil {
			return nil, fmt.Errorf("fetch from %s: %w", redactURL(u), err)
		}
		// As push does: a transfer of a thousand objects or more, or a
		// slow one, is reported.
		if o.Progress != nil && (res.Objects >= 1000 || res.Bytes > 1<<20 || time.Since(start) > time.Second) {
			if res.Objects > 0 {
				fmt.Fprintf(o.Progress, "Received %d objects (%s) in %s\n", res.Objects, byteSize(res.Bytes), time.Since(start).Round(time.Millisecond))
			} else {
				fmt.Fprintf(o.Progress, "Received %s in %s\n", byteSize(res.Bytes), time.Since(start).Round(time.Millisecond))
			}
		}
	}

	// Integrate, one session at a time; a writer of ours moving a ref
	// meanwhile makes the compare-and-swap fail, and that session is
	// looked at again.
	groups := map[string][]string{}
	for ref := range remoteRefs {
		// A session deleted here stays deleted: the remote still has it,
		// and restore, not pull, brings it back.
		if id := sessionOfRef(ref); id != "" {
			if gone, err := s.isDeleted(id); err != nil {
				return nil, err
			} else if gone {
				if !slices.Contains(res.Deleted, id) {
					res.Deleted = append(res.Deleted, id)
				}
				continue
			}
		}
		g := groupOfRef(ref)
		groups[g] = append(groups[g], ref)
	}
	sort.Strings(res.Deleted)
	if err := s.quarantineIncoming(ctx, keepName, groups, remoteRefs, o.maxThoughtBytes(), res); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
		sort.Slice(groups[g], func(i, j int) bool { return refOrder(groups[g][i]) < refOrder(groups[g][j]) })
	}
	sort.Strings(names)
	// All sessions' ref moves go in one batch (one fsync for a clone of
	// thousands of sessions); if a writer of ours moved one of the refs
	// meanwhile, the compare-and-swap fails and each session is redone on
	// its own.
	plans := make([]*groupPlan, 0, len(names))
	all := &batch{}
	for _, g := range names {
		gp, err := s.planGroup(keepName, groups[g], remoteRefs)
		if err != nil {
			return nil, fmt.Errorf("integrate %s: %w", g, err)
		}
		plans = append(plans, gp)
		all.Objects = append(all.Objects, gp.b.Objects...)
		all.Updates = append(all.Updates, gp.b.Updates...)
	}
	if pullPlanned != nil {
		pullPlanned()
	}
	err = nil
	if len(all.Updates) > 0 {
		err = s.be.Apply(ctx, all)
	}
	if err == nil {
		for _, gp := range plans {
			gp.record(res)
		}
		return res, nil
	}
	if !errors.Is(err, errConflict) {
		return nil, err
	}
	// Someone moved a ref meanwhile: each group is planned again on what
	// is there now, a few times, without pausing (a pull is not a race of
	// many writers on one ref, as a thought's commit can be).
	for _, g := range names {
		err := ledger.Retry(ctx, pullGroupAttempts, nil, func(int) error {
			gp, err := s.planGroup(keepName, groups[g], remoteRefs)
			if err == nil && len(gp.b.Updates) > 0 {
				err = s.be.Apply(ctx, gp.b)
			}
			switch {
			case err == nil:
				gp.record(res)
				return nil
			case errors.Is(err, errConflict):
				return ledger.Again(fmt.Errorf("integrate %s: %w", g, err))
			}
			return fmt.Errorf("integrate %s: %w", g, err)
		})
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// pullGroupAttempts bounds how often a pull plans and applies one group
// again after losing its compare-and-swap.
const pullGroupAttempts = 8

// pullPlanned, when set (by tests), runs between planning a pull's ref
// moves and applying them.
var pullPlanned func()

// validSharedRef accepts refs/heads/knowledge, a notebook's
// refs/heads/notebooks/<id> and the refs of a session:
// refs/heads/sessions/<id>/main and refs/heads/sessions/<id>/branches/<b>.
func validSharedRef(name string) bool {
	if name == knowledgeRef || notebookOfRef(name) != "" {
		return true
	}
	rest, ok := strings.CutPrefix(name, refPrefix)
	if !ok {
		return false
	}
	id, chain, ok := strings.Cut(rest, "/")
	if !ok || validSessionID(id) != nil {
		return false
	}
	if chain == "main" {
		return true
	}
	b, ok := strings.CutPrefix(chain, "branches/")
	return ok && validBranchID(b) == nil
}

// groupPlan is what a pull does to one session's (or the knowledge
// zone's) refs: the batch to apply and what to report once it is applied.
type groupPlan struct {
	b        *batch
	created  []RefChange
	updated  []RefChange
	diverged []Divergence
	upToDate int
}

func (gp *groupPlan) record(res *PullResult) {
	res.Created = append(res.Created, gp.created...)
	res.Updated = append(res.Updated, gp.updated...)
	res.Diverged = append(res.Diverged, gp.diverged...)
	res.UpToDate += gp.upToDate
}

// planGroup decides how to bring one session's (or the knowledge zone's)
// refs in line with the remote's.
func (s *Store) planGroup(remote string, refs []string, remoteRefs map[string]hash) (*groupPlan, error) {
	type plan struct {
		ref    string
		local  hash
		remote hash
		action string // create, forward, keep (we are ahead or equal), diverged
	}
	var plans []plan
	diverged := false
	for _, ref := range refs {
		l, err := s.be.ReadRef(context.Background(), ref)
		if err != nil {
			return nil, err
		}
		r := remoteRefs[ref]
		p := plan{ref: ref, local: l, remote: r}
		switch {
		case l == r:
			p.action = "keep"
		case l == zeroHash:
			p.action = "create"
		default:
			ahead, err := s.isAncestor(r, l)
			if err != nil {
				return nil, err
			}
			behind := false
			if !ahead {
				if behind, err = s.isAncestor(l, r); err != nil {
					return nil, err
				}
			}
			switch {
			case ahead:
				p.action = "keep"
			case behind:
				p.action = "forward"
			default:
				p.action = "diverged"
				diverged = true
			}
		}
		plans = append(plans, p)
	}
	gp := &groupPlan{b: &batch{}}
	if diverged && len(plans) == 1 && plans[0].ref == knowledgeRef {
		// The zone is one ref that every agent writes, so it is merged
		// when the two sides changed different entries.
		p := plans[0]
		mb, merged, conflicts, err := s.mergeKnowledge(p.local, p.remote, remote)
		if err != nil {
			return nil, err
		}
		if len(conflicts) == 0 {
			mb.Updates = []refUpdate{{Name: knowledgeRef, Old: p.local, New: merged}}
			gp.b = mb
			gp.updated = []RefChange{{Ref: knowledgeRef, Old: p.local.String(), New: merged.String(), Merged: true}}
			return gp, nil
		}
	}
	for _, p := range plans {
		id := sessionOfRef(p.ref)
		if p.action == "keep" {
			gp.upToDate++
			continue
		}
		if diverged {
			// Keep the remote's chain beside ours; change nothing of ours.
			keep := divergedPrefix + remote + "/" + strings.TrimPrefix(p.ref, "refs/heads/")
			cur, err := s.be.ReadRef(context.Background(), keep)
			if err != nil {
				return nil, err
			}
			if cur != p.remote {
				gp.b.Updates = append(gp.b.Updates, refUpdate{Name: keep, Old: cur, New: p.remote})
			}
			d := Divergence{Session: id, Ref: p.ref, KeptAs: keep, Remote: p.remote.String()}
			if p.local != zeroHash {
				d.Local = p.local.String()
			}
			gp.diverged = append(gp.diverged, d)
			continue
		}
		gp.b.Updates = append(gp.b.Updates, refUpdate{Name: p.ref, Old: p.local, New: p.remote})
		ch := RefChange{Ref: p.ref, Session: id, New: p.remote.String()}
		if p.local == zeroHash {
			gp.created = append(gp.created, ch)
		} else {
			ch.Old = p.local.String()
			gp.updated = append(gp.updated, ch)
		}
	}
	return gp, nil
}

// DivergedChain is a remote's chain of a session, kept after a pull found
// it extended differently here.
type DivergedChain struct {
	Remote string `json:"remote"`
	Ref    string `json:"ref"`
	KeptAs string `json:"keptAs"`
	Tip    string `json:"tip"`
	// Since is the last commit both chains share (empty if none).
	Since string `json:"since,omitempty"`
	// Thoughts are the remote's commits after Since, oldest first, as
	// their subject lines ("Thought 6: …").
	Thoughts []string `json:"thoughts"`
}

// Diverged lists the chains of a session kept from remotes that are still
// apart from ours (a kept chain that ours has since caught up with, or
// that is already part of ours, is not listed).
// An empty sessionID lists the kept chains of every session.
func (s *Store) Diverged(sessionID string) ([]DivergedChain, error) {
	kept, err := s.be.ListRefs(context.Background(), divergedPrefix)
	if err != nil {
		return nil, err
	}
	var out []DivergedChain
	for keep, tip := range kept {
		rest := strings.TrimPrefix(keep, divergedPrefix)
		remote, local, ok := strings.Cut(rest, "/")
		if !ok || sessionID != "" && sessionOfRef("refs/heads/"+local) != sessionID {
			continue
		}
		ref := "refs/heads/" + local
		l, err := s.be.ReadRef(context.Background(), ref)
		if err != nil {
			return nil, err
		}
		if l == tip {
			continue
		}
		mine := map[hash]bool{}
		if l != zeroHash {
			if err := s.markAncestors(l, mine); err != nil {
				return nil, err
			}
		}
		if mine[tip] {
			continue
		}
		dc := DivergedChain{Remote: remote, Ref: ref, KeptAs: keep, Tip: tip.String(), Thoughts: []string{}}
		var subjects []string
		for id := tip; id != zeroHash; {
			if mine[id] {
				dc.Since = id.String()
				break
			}
			c, err := s.readCommit(id)
			if err != nil {
				return nil, fmt.Errorf("%s: commit %s: %w", keep, id, err)
			}
			subject, _, _ := strings.Cut(c.Message, "\n")
			subjects = append(subjects, subject)
			id = zeroHash
			if len(c.Parents) > 0 {
				id = c.Parents[0]
			}
		}
		for i := len(subjects) - 1; i >= 0; i-- {
			dc.Thoughts = append(dc.Thoughts, subjects[i])
		}
		out = append(out, dc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].KeptAs < out[j].KeptAs })
	return out, nil
}

// DropDiverged forgets a chain kept from a remote (keptAs is a ref under
// refs/thoughtbox/diverged/, as Diverged lists it): its ref is deleted
// through the log like any other ref move. The remote still has it; a
// later pull keeps it again if it is still apart from ours.
func (s *Store) DropDiverged(ctx context.Context, keptAs string) error {
	if !strings.HasPrefix(keptAs, divergedPrefix) || strings.Contains(keptAs, "..") {
		return withKind(ErrNoKeptChain, fmt.Errorf("%q is not a kept chain: expected a ref under %s", keptAs, divergedPrefix))
	}
	cur, err := s.be.ReadRef(ctx, keptAs)
	if err != nil {
		return err
	}
	if cur == zeroHash {
		return withKind(ErrNoKeptChain, fmt.Errorf("no kept chain %s: 'thoughtbox diverged list' shows what is kept", keptAs))
	}
	err = s.be.Apply(ctx, &batch{Updates: []refUpdate{{Name: keptAs, Old: cur, New: zeroHash}}})
	if errors.Is(err, errConflict) {
		return fmt.Errorf("%s moved meanwhile (a pull?): look again: %w", keptAs, ledger.ErrConflict)
	}
	return err
}

// DivergedThoughts reads the thoughts a kept chain has after the last
// commit it shares with ours, oldest first, and the number of that shared
// thought (0 if the chains share none): what adopting the chain as a
// branch records.
func (s *Store) DivergedThoughts(sessionID, keptAs string) (since int, thoughts []ledger.ThoughtData, err error) {
	chains, err := s.Diverged(sessionID)
	if err != nil {
		return 0, nil, err
	}
	var dc *DivergedChain
	for i := range chains {
		if chains[i].KeptAs == keptAs {
			dc = &chains[i]
		}
	}
	if dc == nil {
		return 0, nil, withKind(ErrNoKeptChain, fmt.Errorf("no kept chain %s apart from session %s: 'thoughtbox diverged list' shows what is kept", keptAs, sessionID))
	}
	if dc.Since != "" {
		h, err := object.ParseHash(dc.Since)
		if err != nil {
			return 0, nil, err
		}
		c, err := s.readCommit(h)
		if err != nil {
			return 0, nil, err
		}
		since, _ = strconv.Atoi(trailers(c.Message)["Thoughtbox-Thought"])
	}
	tip, err := object.ParseHash(dc.Tip)
	if err != nil {
		return 0, nil, err
	}
	cf, err := s.readChainFiles(tip, sessionID, "")
	if err != nil {
		return 0, nil, err
	}
	s.decodeFiles(cf, new(atomic.Int64))
	for _, f := range cf.files {
		if !f.ok && fileNumber(f.name) > since {
			return 0, nil, fmt.Errorf("%s: %v", keptAs, f.err)
		}
		if f.ok && f.td.ThoughtNumber > since {
			thoughts = append(thoughts, f.td)
		}
	}
	sort.Slice(thoughts, func(i, j int) bool { return thoughts[i].ThoughtNumber < thoughts[j].ThoughtNumber })
	return since, thoughts, nil
}

// mergeKnowledge joins two histories of the knowledge zone that went apart:
// a file changed on one side only takes that side's version; a file changed
// on both sides differently is a conflict, and then nothing is merged. On
// success it returns a merge commit (parents: ours, then theirs) and the
// objects it needs.
func (s *Store) mergeKnowledge(ours, theirs hash, remote string) (*batch, hash, []string, error) {
	mine := map[hash]bool{}
	if err := s.markAncestors(ours, mine); err != nil {
		return nil, zeroHash, nil, err
	}
	base := zeroHash
	queue, seen := []hash{theirs}, map[hash]bool{}
	for len(queue) > 0 && base == zeroHash {
		id := queue[0]
		queue = queue[1:]
		if seen[id] {
			continue
		}
		seen[id] = true
		if mine[id] {
			base = id
			break
		}
		c, err := s.readCommit(id)
		if err != nil {
			return nil, zeroHash, nil, err
		}
		queue = append(queue, c.Parents...)
	}
	treeOf := func(id hash) (hash, error) {
		if id == zeroHash {
			return zeroHash, nil
		}
		c, err := s.readCommit(id)
		if err != nil {
			return zeroHash, err
		}
		return c.Tree, nil
	}
	var bt, ot, tt hash
	var err error
	if bt, err = treeOf(base); err != nil {
		return nil, zeroHash, nil, err
	}
	if ot, err = treeOf(ours); err != nil {
		return nil, zeroHash, nil, err
	}
	if tt, err = treeOf(theirs); err != nil {
		return nil, zeroHash, nil, err
	}
	b := &batch{}
	var conflicts []string
	root, err := s.merge3("", bt, ot, tt, b, &conflicts)
	if err != nil || len(conflicts) > 0 {
		return nil, zeroHash, conflicts, err
	}
	cid := addCommit(b, commitSpec{tree: root, parents: []hash{ours, theirs},
		message: "Merge the knowledge zone from " + remote + "\n\nThoughtbox-Knowledge: merge\n",
		when:    time.Now().UTC().Truncate(time.Second)})
	return b, cid, nil, nil
}

// merge3 merges the trees base, ours and theirs (any may be zeroHash: the
// folder is absent) entry by entry, adding new trees to b.
func (s *Store) merge3(path string, base, ours, theirs hash, b *batch, conflicts *[]string) (hash, error) {
	switch {
	case ours == theirs, theirs == base:
		return ours, nil
	case ours == base:
		return theirs, nil
	}
	read := func(id hash) (*object.Tree, error) {
		if id == zeroHash {
			return &object.Tree{}, nil
		}
		t, _, err := s.readTreeBytes(id)
		return t, err
	}
	bt, err := read(base)
	if err != nil {
		return zeroHash, err
	}
	ot, err := read(ours)
	if err != nil {
		return zeroHash, err
	}
	tt, err := read(theirs)
	if err != nil {
		return zeroHash, err
	}
	names := map[string]bool{}
	for _, t := range []*object.Tree{bt, ot, tt} {
		for _, e := range t.Entries {
			names[e.Name] = true
		}
	}
	out := &object.Tree{}
	for name := range names {
		be, _ := bt.Get(name)
		oe, _ := ot.Get(name)
		te, _ := tt.Get(name)
		var pick object.TreeEntry
		switch {
		case oe == te:
			pick = oe
		case oe == be:
			pick = te
		case te == be:
			pick = oe
		case (oe.ID == zeroHash || oe.Dir) && (te.ID == zeroHash || te.Dir) && (be.ID == zeroHash || be.Dir):
			id, err := s.merge3(path+name+"/", dirID(be), dirID(oe), dirID(te), b, conflicts)
			if err != nil {
				return zeroHash, err
			}
			pick = object.TreeEntry{Name: name, Dir: true, ID: id}
		default:
			*conflicts = append(*conflicts, path+name)
			continue
		}
		if pick.ID != zeroHash {
			out.Set(object.TreeEntry{Name: pick.Name, Dir: pick.Dir, ID: pick.ID})
		}
	}
	if len(out.Entries) == 0 {
		return zeroHash, nil
	}
	data := out.Encode()
	id := object.HashObject(typeTree, data)
	b.Objects = append(b.Objects, logObject{ID: id, Type: typeTree, Data: data})
	return id, nil
}

func dirID(e object.TreeEntry) hash {
	if e.Dir {
		return e.ID
	}
	return zeroHash
}

// lateWriter passes progress through only once a transfer has run for a
// while: a quick pull stays quiet, a long one shows the server's counts.
type lateWriter struct {
	w     io.Writer
	after time.Time
}

func (l *lateWriter) Write(p []byte) (int, error) {
	if time.Now().Before(l.after) {
		return len(p), nil
	}
	return l.w.Write(p)
}
