package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/sharing"
)

// pull fetches a remote's sessions and knowledge and integrates them: a ref
// we lack is created, one we are behind on is fast-forwarded, one we are
// ahead on is left for push, and one that diverged is left as it is here
// while the remote's chain is kept under refs/thoughtbox/diverged/<remote>/
// (a session moves whole: if any of its refs diverged, none is changed).
// Nothing stored here is ever overwritten.
func (s *sharer) pull(ctx context.Context, remote string, o TransferOptions) (*sharing.PullResult, error) {
	link, session, err := s.connect(ctx, remote, o, func(tr transport.Transport, ep *transport.Endpoint, auth transport.AuthMethod) (transport.Session, error) {
		return tr.NewUploadPackSession(ep, auth)
	})
	if err != nil {
		return nil, err
	}
	defer session.Close()
	sess := session.(transport.UploadPackSession)
	ar, u := link.adv, link.url
	keepName := link.name
	if keepName == "" || validRemoteName(keepName) != nil {
		keepName = "url-" + gitstore.Slug(redactURL(u))
	}
	res := &sharing.PullResult{Remote: link.name, URL: redactURL(u), Created: []sharing.RefChange{}, Updated: []sharing.RefChange{}, Diverged: []sharing.Divergence{}, Branched: []sharing.Branched{}, Quarantined: []sharing.Quarantined{}}
	remoteRefs, advertised := s.pullRefs(ar.References, o)

	// What arrives is staged outside the ledger's objects until the checks
	// below have decided what to take in (see gitstore/quarantine.go).
	staging := s.NoStaging()
	defer func() { staging.Close() }()
	var wants []hash
	wanted := map[hash]bool{}
	for _, h := range remoteRefs {
		if wanted[h] {
			continue
		}
		if _, _, err := s.ReadObject(h); err == nil {
			continue
		} else if !errors.Is(err, object.ErrNotFound) {
			return nil, err
		}
		wanted[h] = true
		wants = append(wants, h)
	}
	if len(wants) > 0 {
		st, err := s.fetch(ctx, sess, link, wants, advertised, o, res)
		if err != nil {
			return nil, err
		}
		staging = st
	}
	dropped := false
	if !o.Since.IsZero() {
		if dropped, err = s.dropOlder(remoteRefs, o.Since); err != nil {
			return nil, err
		}
	}

	// Integrate, one session at a time; a writer of ours moving a ref
	// meanwhile makes the compare-and-swap fail, and that session is
	// looked at again.
	groups := map[string][]string{}
	for ref := range remoteRefs {
		// A session deleted here stays deleted: the remote still has it,
		// and restore, not pull, brings it back.
		if id := s.SessionOfRef(ref); id != "" {
			if gone, err := s.IsDeleted(id); err != nil {
				return nil, err
			} else if gone {
				if !slices.Contains(res.Deleted, id) {
					res.Deleted = append(res.Deleted, id)
				}
				continue
			}
		}
		g := s.GroupOfRef(ref)
		groups[g] = append(groups[g], ref)
	}
	sort.Strings(res.Deleted)
	kept, err := s.quarantineIncoming(ctx, keepName, groups, remoteRefs, o.maxThoughtBytes(), res)
	if err != nil {
		return nil, err
	}
	// Into the ledger goes what the chains taken in reach: the whole pack
	// when nothing was refused.
	var accepted []hash
	for _, refs := range groups {
		for _, ref := range refs {
			accepted = append(accepted, remoteRefs[ref])
		}
	}
	if err := staging.Accept(ctx, accepted, len(res.Quarantined) == 0 && !dropped); err != nil {
		return nil, fmt.Errorf("take in what %s sent: %w", redactURL(u), err)
	}
	// What is left of the pack goes with the refused chains' refs.
	qrepo, err := staging.Quarantine(ctx, kept)
	if err != nil {
		return nil, err
	}
	for i := range res.Quarantined {
		res.Quarantined[i].Repository = qrepo
	}
	return s.integrate(ctx, keepName, groups, remoteRefs, o, res)
}

// pullRefs picks the advertised refs a pull takes, and lists every
// advertised tip.
func (s *sharer) pullRefs(advertisedRefs map[string]hash, o TransferOptions) (remoteRefs map[string]hash, advertised map[hash]bool) {
	remoteRefs, advertised = map[string]hash{}, map[hash]bool{}
	only := map[string]bool{}
	for _, id := range o.Sessions {
		only[id] = true
	}
	for n, h := range advertisedRefs {
		advertised[h] = true
		// Only refs of our layout, with names we would write ourselves: a
		// remote's ref names become file names here.
		if !s.ValidSharedRef(n) {
			continue
		}
		// A pull of some sessions (a why that names a session this clone
		// lacks) wants their refs and nothing else.
		if id := s.SessionOfRef(n); o.Sessions != nil && !only[id] {
			continue
		}
		remoteRefs[n] = h
	}
	return remoteRefs, advertised
}

// fetch asks the remote for wants, telling it of our tips it advertised,
// and stages the pack it sends (see gitstore.Staging); the caller closes
// the staging.
func (s *sharer) fetch(ctx context.Context, sess transport.UploadPackSession, link *remoteLink, wants []hash, advertised map[hash]bool, o TransferOptions, res *sharing.PullResult) (*gitstore.Staging, error) {
	ar, u, builtin := link.adv, link.url, link.builtin
	local, err := s.ListRefs("refs/")
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
	r := smallReads{resp}
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
	st, objects, bytes, err := s.StagePack(ctx, body)
	resp.Close()
	res.Objects, res.Bytes = objects, bytes
	if err != nil {
		st.Close()
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
	return st, nil
}

// integrate plans and applies a pull's ref moves for the groups that
// passed the checks (see pull).
func (s *sharer) integrate(ctx context.Context, keepName string, groups map[string][]string, remoteRefs map[string]hash, o TransferOptions, res *sharing.PullResult) (*sharing.PullResult, error) {
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
		sort.Slice(groups[g], func(i, j int) bool { return gitstore.RefOrder(groups[g][i]) < gitstore.RefOrder(groups[g][j]) })
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
	var err error
	if len(all.Updates) > 0 {
		if o.BeforeRefsMove != nil {
			o.BeforeRefsMove()
		}
		err = s.Apply(ctx, all)
	}
	if err == nil {
		for _, gp := range plans {
			gp.record(res)
		}
		return res, nil
	}
	if !errors.Is(err, gitstore.ErrRefMoved) {
		return nil, err
	}
	// Someone moved a ref meanwhile: each group is planned again on what
	// is there now, a few times, without pausing (a pull is not a race of
	// many writers on one ref, as a thought's commit can be).
	for _, g := range names {
		err := ledger.Retry(ctx, pullGroupAttempts, nil, func(int) error {
			gp, err := s.planGroup(keepName, groups[g], remoteRefs)
			if err == nil && len(gp.b.Updates) > 0 {
				err = s.Apply(ctx, gp.b)
			}
			switch {
			case err == nil:
				gp.record(res)
				return nil
			case errors.Is(err, gitstore.ErrRefMoved):
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

// groupPlan is what a pull does to one session's (or the knowledge
// zone's) refs: the batch to apply and what to report once it is applied.
type groupPlan struct {
	b        *batch
	created  []sharing.RefChange
	updated  []sharing.RefChange
	diverged []sharing.Divergence
	upToDate int
}

func (gp *groupPlan) record(res *sharing.PullResult) {
	res.Created = append(res.Created, gp.created...)
	res.Updated = append(res.Updated, gp.updated...)
	res.Diverged = append(res.Diverged, gp.diverged...)
	res.UpToDate += gp.upToDate
}

// planGroup decides how to bring one session's (or the knowledge zone's)
// refs in line with the remote's.
func (s *sharer) planGroup(remote string, refs []string, remoteRefs map[string]hash) (*groupPlan, error) {
	type plan struct {
		ref    string
		local  hash
		remote hash
		action string // create, forward, keep (we are ahead or equal), diverged
	}
	var plans []plan
	diverged := false
	for _, ref := range refs {
		l, err := s.ReadRef(ref)
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
			ahead, err := s.IsAncestor(r, l)
			if err != nil {
				return nil, err
			}
			behind := false
			if !ahead {
				if behind, err = s.IsAncestor(l, r); err != nil {
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
	if diverged && len(plans) == 1 {
		// A one-ref group whose kind merges (the knowledge zone, which
		// every agent writes, when the two sides changed different
		// entries; a session's links, which only add) is merged rather
		// than kept aside.
		p := plans[0]
		mb, merged, ok, err := s.MergeDiverged(p.ref, p.local, p.remote, remote)
		if err != nil {
			return nil, err
		}
		if ok {
			mb.Updates = []refUpdate{{Name: p.ref, Old: p.local, New: merged}}
			gp.b = mb
			gp.updated = []sharing.RefChange{{Ref: p.ref, Session: s.SessionOfRef(p.ref), Old: p.local.String(), New: merged.String(), Merged: true}}
			return gp, nil
		}
	}
	for _, p := range plans {
		id := s.SessionOfRef(p.ref)
		if p.action == "keep" {
			gp.upToDate++
			continue
		}
		if diverged {
			// Keep the remote's chain beside ours; change nothing of ours.
			keep := gitstore.DivergedPrefix + remote + "/" + strings.TrimPrefix(p.ref, s.SharedRefRoot())
			cur, err := s.ReadRef(keep)
			if err != nil {
				return nil, err
			}
			if cur != p.remote {
				gp.b.Updates = append(gp.b.Updates, refUpdate{Name: keep, Old: cur, New: p.remote})
			}
			d := sharing.Divergence{Session: id, Ref: p.ref, KeptAs: keep, Remote: p.remote.String()}
			if p.local != zeroHash {
				d.Local = p.local.String()
			}
			gp.diverged = append(gp.diverged, d)
			continue
		}
		gp.b.Updates = append(gp.b.Updates, refUpdate{Name: p.ref, Old: p.local, New: p.remote})
		ch := sharing.RefChange{Ref: p.ref, Session: id, New: p.remote.String()}
		if p.local == zeroHash {
			gp.created = append(gp.created, ch)
		} else {
			ch.Old = p.local.String()
			gp.updated = append(gp.updated, ch)
		}
	}
	return gp, nil
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

// smallReads caps each read of an upload-pack response. go-git's response
// reader allocates a buffer the size of every read it is asked for, and
// an in-process server hands the pack over in many small writes, so the
// pack installer's large copy buffer cost an allocation of that size per
// small write.
type smallReads struct{ r io.Reader }

func (s smallReads) Read(p []byte) (int, error) {
	if len(p) > maxResponseRead {
		p = p[:maxResponseRead]
	}
	return s.r.Read(p)
}

const maxResponseRead = 16 << 10

// dropOlder forgets the incoming refs of every session whose remote main
// tip was committed before since (a pull with Since): they are neither
// checked nor taken in. A session whose tip is already here stays, as a
// pull that moves nothing.
func (s *sharer) dropOlder(remoteRefs map[string]hash, since time.Time) (dropped bool, err error) {
	old := map[string]bool{}
	for ref, h := range remoteRefs {
		id := s.SessionOfRef(ref)
		if id == "" || ref != s.SessionMainRef(id) {
			continue
		}
		raw, err := s.ReadTyped(h, object.TypeCommit)
		if err != nil {
			return false, fmt.Errorf("read %s: %w", ref, err)
		}
		if when, ok := committedAt(raw); !ok || when.Before(since) {
			old[id] = true
		}
	}
	for ref := range remoteRefs {
		if id := s.SessionOfRef(ref); id != "" && old[id] {
			delete(remoteRefs, ref)
		}
	}
	return len(old) > 0, nil
}

// committedAt reads the committer time of a raw commit.
func committedAt(raw []byte) (time.Time, bool) {
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" {
			break // the end of the header
		}
		rest, ok := strings.CutPrefix(line, "committer ")
		if !ok {
			continue
		}
		f := strings.Fields(rest[strings.LastIndexByte(rest, '>')+1:])
		if len(f) < 1 {
			return time.Time{}, false
		}
		sec, err := strconv.ParseInt(f[0], 10, 64)
		return time.Unix(sec, 0), err == nil
	}
	return time.Time{}, false
}
