package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/pack"
	"github.com/thoughtbox/thoughtbox/sharing"
)

// push sends the project's sessions and knowledge to a remote (a remote
// name, or a URL or path). A ref moves only forward: if the remote's tip is
// not an ancestor of ours, the ref — and the rest of its session — is
// rejected and reported, unless the session is listed in o.Force.
func (s *sharer) push(ctx context.Context, remote string, o TransferOptions) (*sharing.PushResult, error) {
	link, session, err := s.connect(ctx, remote, o, func(tr transport.Transport, ep *transport.Endpoint, auth transport.AuthMethod) (transport.Session, error) {
		return tr.NewReceivePackSession(ep, auth)
	})
	if err != nil {
		return nil, err
	}
	defer session.Close()
	sess := session.(transport.ReceivePackSession)
	ar, u := link.adv, link.url
	res := &sharing.PushResult{Remote: link.name, URL: redactURL(u), Updated: []sharing.RefChange{}, Rejected: []sharing.Rejection{}}
	remoteRefs := map[string]hash{}
	for n, h := range ar.References {
		remoteRefs[n] = h
	}

	local, err := s.pushLocalRefs(o)
	if err != nil {
		return nil, err
	}
	names, groups, withheld := s.pushGroups(local, remoteRefs, o)
	res.Withheld = withheld
	cmds, sendTips, sendRefs, err := s.pushCommands(res, names, groups, local, remoteRefs, o)
	if err != nil {
		return nil, err
	}
	if len(cmds) == 0 {
		return res, nil
	}

	// What the remote has: everything reachable from its tips that we have
	// here too (a session's history we fetched or pushed before).
	known, err := s.remoteKnown(cmds, remoteRefs)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	pack, err := pack.NewStream(s.TransferDir())
	if err != nil {
		return nil, err
	}
	defer pack.Discard()
	pw := &packWalker{s: s.Store, pack: pack, known: known}
	for i, tip := range sendTips {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := pw.addHistory(tip, s.GroupOfRef(sendRefs[i])); err != nil {
			return nil, fmt.Errorf("pack %s: %w", sendRefs[i], err)
		}
	}
	f, size, err := pack.Finish()
	if err != nil {
		return nil, err
	}
	res.Objects, res.Bytes = pack.Count, size
	progress := o.Progress
	if progress != nil && (pack.Count >= 1000 || time.Since(start) > time.Second) {
		fmt.Fprintf(progress, "Sending %d objects (%s) for %d refs to %s\n", pack.Count, byteSize(size), len(cmds), redactURL(u))
	} else {
		progress = nil
	}

	if pushPlanned != nil {
		pushPlanned()
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	req.Commands = cmds
	req.Packfile = io.NopCloser(f)
	rs, err := sess.ReceivePack(ctx, req)
	if err != nil && (rs == nil || len(rs.CommandStatuses) == 0) {
		// With a report, a refused ref is an error too; the report says
		// which, below.
		return nil, describeDialError(u, err)
	}
	if err := s.readPushReport(ctx, remote, o, u, rs, cmds, res); err != nil {
		return nil, err
	}
	if progress != nil {
		fmt.Fprintf(progress, "Sent in %s\n", time.Since(start).Round(time.Millisecond))
	}
	return res, nil
}

// pushLocalRefs lists the refs a push may send: each listed session's
// folder alone when it sends nothing else (a pre-push hook's push costs
// what its sessions hold, not what the ledger holds), else every shared
// ref.
func (s *sharer) pushLocalRefs(o TransferOptions) (map[string]hash, error) {
	if !o.SessionsOnly || o.Sessions == nil {
		return s.ListRefs(s.SharedRefRoot())
	}
	local := map[string]hash{}
	for _, id := range o.Sessions {
		if id == "" || strings.ContainsAny(id, "/.") {
			continue // no session folder has such a name
		}
		refs, err := s.ListRefs(s.SessionRefFolder(id))
		if err != nil {
			return nil, err
		}
		maps.Copy(local, refs)
	}
	return local, nil
}

// pushGroups picks the shared refs to push (only o.Sessions' when it is
// set) and groups them by session, each group main chain first so that
// its commits precede a branch's; names lists the groups in order.
func (s *sharer) pushGroups(local, remoteRefs map[string]hash, o TransferOptions) (names []string, groups map[string][]string, withheld []string) {
	only, exclude, left := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, id := range o.Sessions {
		only[id] = true
	}
	for _, id := range o.Exclude {
		exclude[id] = true
	}
	groups = map[string][]string{}
	for ref := range local {
		if !s.SharedRef(ref) {
			continue
		}
		if id := s.SessionOfRef(ref); id != "" && o.Sessions != nil && !only[id] {
			continue
		} else if id == "" && o.SessionsOnly {
			continue
		} else if exclude[id] {
			if !left[id] {
				left[id] = true
				withheld = append(withheld, id)
			}
			continue
		}
		if ref == "refs/heads/main" {
			// Every ledger starts its own main (a README); only a remote
			// without one gets ours.
			if r, ok := remoteRefs[ref]; ok && r != local[ref] {
				continue
			}
		}
		g := s.GroupOfRef(ref)
		groups[g] = append(groups[g], ref)
	}
	names = make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
		sort.Slice(groups[g], func(i, j int) bool { return gitstore.RefOrder(groups[g][i]) < gitstore.RefOrder(groups[g][j]) })
	}
	sort.Strings(names)
	sort.Strings(withheld)
	return names, groups, withheld
}

// pushCommands decides, group by group, which refs move: one that may not
// move forward (and is not forced) is rejected, and holds back the rest
// of its group, since a session moves whole. It counts the refs already
// up to date and the rejections in res, and returns the update commands
// with each one's tip and ref name, in order.
func (s *sharer) pushCommands(res *sharing.PushResult, names []string, groups map[string][]string, local, remoteRefs map[string]hash, o TransferOptions) (cmds []*packp.Command, sendTips []hash, sendRefs []string, err error) {
	force := map[string]bool{}
	for _, id := range o.Force {
		force[id] = true
	}
	for _, g := range names {
		var gcmds []*packp.Command
		var rejected []sharing.Rejection
		for _, ref := range groups[g] {
			l, r := local[ref], remoteRefs[ref]
			id := s.SessionOfRef(ref)
			switch {
			case l == r:
				res.UpToDate++
				continue
			case r == zeroHash || (id != "" && force[id]):
			default:
				reason, msg, err := s.pushCheck(ref, l, r)
				if err != nil {
					return nil, nil, nil, err
				}
				if reason != "" {
					rejected = append(rejected, sharing.Rejection{Ref: ref, Session: id, Reason: reason, Message: msg})
					continue
				}
			}
			gcmds = append(gcmds, &packp.Command{Name: plumbing.ReferenceName(ref), Old: r, New: l})
		}
		if len(rejected) > 0 {
			res.Rejected = append(res.Rejected, rejected...)
			for _, c := range gcmds {
				res.Rejected = append(res.Rejected, sharing.Rejection{Ref: c.Name.String(), Session: s.SessionOfRef(c.Name.String()), Reason: sharing.RejectHeld,
					Message: "not pushed: another ref of this session was rejected, and a session moves whole"})
			}
			continue
		}
		for _, c := range gcmds {
			cmds = append(cmds, c)
			sendTips = append(sendTips, c.New)
			sendRefs = append(sendRefs, c.Name.String())
		}
	}
	return cmds, sendTips, sendRefs, nil
}

// readPushReport records in res what the remote did with each command:
// updated, or refused with the remote's reason. A main refused because
// the remote got one meanwhile is not a rejection. An error means the
// remote could not store the pack at all.
func (s *sharer) readPushReport(ctx context.Context, remote string, o TransferOptions, u string, rs *packp.ReportStatus, cmds []*packp.Command, res *sharing.PushResult) error {
	failed := map[string]string{}
	if rs != nil {
		if rs.UnpackStatus != "" && rs.UnpackStatus != "ok" {
			return fmt.Errorf("%s could not store the pack: %s", redactURL(u), rs.UnpackStatus)
		}
		for _, cs := range rs.CommandStatuses {
			if cs.Status != "ok" {
				failed[cs.ReferenceName.String()] = cs.Status
			}
		}
	}
	for _, c := range cmds {
		ref := c.Name.String()
		if msg, bad := failed[ref]; bad {
			if ref == "refs/heads/main" {
				// Lost the race of two first pushes: the remote has a
				// main now, and only a remote without one gets ours.
				if m, err := s.remoteMain(ctx, remote, o); err == nil && m != zeroHash {
					if m == c.New {
						res.UpToDate++
					}
					continue
				}
			}
			res.Rejected = append(res.Rejected, sharing.Rejection{Ref: ref, Session: s.SessionOfRef(ref), Reason: sharing.RejectRefused, Message: msg})
			continue
		}
		ch := sharing.RefChange{Ref: ref, Session: s.SessionOfRef(ref), New: c.New.String()}
		if c.Old != zeroHash {
			ch.Old = c.Old.String()
		}
		res.Updated = append(res.Updated, ch)
	}
	return nil
}

// pushCheck says whether our tip l may replace the remote's r.
func (s *sharer) pushCheck(ref string, l, r hash) (reason sharing.RejectReason, msg string, err error) {
	if _, _, err := s.ReadObject(r); err != nil {
		if errors.Is(err, object.ErrNotFound) {
			return sharing.RejectAhead, "the remote is ahead: it has thoughts this ledger has not seen; pull first", nil
		}
		return "", "", err
	}
	ok, err := s.IsAncestor(r, l)
	if err != nil || ok {
		return "", "", err
	}
	behind, err := s.IsAncestor(l, r)
	if err != nil {
		return "", "", err
	}
	if behind {
		return sharing.RejectBehind, "the remote is ahead of this ledger: pull to catch up", nil
	}
	return sharing.RejectDiverged, "this session was extended differently here and on the remote: pull first, which records this ledger's new thoughts as a branch of the session; then push again", nil
}

// packWalker adds to a pack what commits unknown to the remote bring: each
// commit and the trees and blobs that differ from its first parent's. Each
// path's previous version is kept as the delta base of its next one, so a
// session's growing folder tree and manifest travel as small deltas.
type packWalker struct {
	s     *gitstore.Store
	pack  *pack.Stream
	known map[hash]bool
	group string
	prev  map[string]version
}

type version struct {
	id    hash
	data  []byte
	depth int
}

func (w *packWalker) addHistory(tip hash, group string) error {
	if group != w.group {
		w.group, w.prev = group, map[string]version{}
		w.pack.NewGroup()
	}
	commits, err := w.newCommits(tip)
	if err != nil {
		return err
	}
	for _, c := range commits {
		var parentTree hash
		if len(c.parsed.Parents) > 0 {
			pc, err := w.s.ReadCommit(c.parsed.Parents[0])
			if err != nil {
				return fmt.Errorf("commit %s: %w", c.parsed.Parents[0], err)
			}
			parentTree = pc.Tree
		}
		if err := w.addTree("", c.parsed.Tree, parentTree); err != nil {
			return err
		}
		if err := w.pack.Add(c.id, typeCommit, c.data, zeroHash, nil); err != nil {
			return err
		}
	}
	return nil
}

type walkedCommit struct {
	id     hash
	data   []byte
	parsed *object.ParsedCommit
}

// newCommits lists the commits reachable from tip that the remote lacks
// and the pack does not hold yet, parents before children.
func (w *packWalker) newCommits(tip hash) ([]walkedCommit, error) {
	type frame struct {
		c walkedCommit
		i int
	}
	var out []walkedCommit
	visited := map[hash]bool{}
	var stack []frame
	visit := func(id hash) error {
		if visited[id] || w.known[id] || w.pack.Has(id) {
			return nil
		}
		visited[id] = true
		data, err := w.s.ReadTyped(id, typeCommit)
		if err != nil {
			return fmt.Errorf("commit %s: %w", id, err)
		}
		pc, err := object.ParseCommit(data)
		if err != nil {
			return fmt.Errorf("commit %s: %w", id, err)
		}
		stack = append(stack, frame{c: walkedCommit{id: id, data: data, parsed: pc}})
		return nil
	}
	if err := visit(tip); err != nil {
		return nil, err
	}
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		if f.i < len(f.c.parsed.Parents) {
			p := f.c.parsed.Parents[f.i]
			f.i++
			if err := visit(p); err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, f.c)
		stack = stack[:len(stack)-1]
	}
	return out, nil
}

// addTree adds the tree id at path and whatever in it differs from old.
func (w *packWalker) addTree(path string, id, old hash) error {
	if id == old || w.pack.Has(id) {
		return nil
	}
	data, err := w.s.ReadTyped(id, typeTree)
	if err != nil {
		return fmt.Errorf("tree %s at %q: %w", id, path, err)
	}
	t, err := object.ParseTree(data)
	if err != nil {
		return fmt.Errorf("tree %s at %q: %w", id, path, err)
	}
	var oldTree *object.Tree
	if old != zeroHash {
		od, err := w.s.ReadTyped(old, typeTree)
		if err != nil {
			return fmt.Errorf("tree %s at %q: %w", old, path, err)
		}
		if oldTree, err = object.ParseTree(od); err != nil {
			return fmt.Errorf("tree %s at %q: %w", old, path, err)
		}
	}
	for _, e := range t.Entries {
		var oe object.TreeEntry
		var had bool
		if oldTree != nil {
			oe, had = oldTree.Get(e.Name)
		}
		if had && oe.ID == e.ID && oe.Dir == e.Dir {
			continue
		}
		sub := path + "/" + e.Name
		if e.Dir {
			base := zeroHash
			if had && oe.Dir {
				base = oe.ID
			}
			if err := w.addTree(sub, e.ID, base); err != nil {
				return err
			}
			continue
		}
		if w.pack.Has(e.ID) {
			continue
		}
		blob, err := w.s.ReadTyped(e.ID, typeBlob)
		if err != nil {
			return fmt.Errorf("file %s (%s): %w", sub, e.ID, err)
		}
		if err := w.addVersion(sub, e.ID, typeBlob, blob); err != nil {
			return err
		}
	}
	return w.addVersion(path+"/", id, typeTree, data)
}

func (w *packWalker) addVersion(path string, id hash, typ objType, data []byte) error {
	pv, ok := w.prev[path]
	base, baseData, depth := zeroHash, []byte(nil), 0
	if ok && pv.depth < pack.SendDeltaDepth && w.pack.Has(pv.id) {
		base, baseData, depth = pv.id, pv.data, pv.depth+1
	}
	if err := w.pack.Add(id, typ, data, base, baseData); err != nil {
		return err
	}
	if len(data) >= pack.MinDeltaSize {
		w.prev[path] = version{id: id, data: data, depth: depth}
	}
	return nil
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
