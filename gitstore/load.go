package gitstore

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/manifest"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// LoadSession implements ledger.Store. Damage short of a missing session is
// reported in the result's Integrity, with whatever could still be read.
func (s *Store) LoadSession(ctx context.Context, id string) (*ledger.StoredSession, error) {
	if err := validSessionID(id); err != nil {
		return nil, fmt.Errorf("%w: %v", ledger.ErrSessionNotFound, err)
	}
	refs, err := s.be.ListRefs(ctx, s.lay.sessions()+id+"/")
	if err != nil {
		return nil, err
	}
	return s.loadSessionAt(id, refs)
}

// HasSession implements ledger.SessionChecker: one lookup of the
// session's main ref (a bisect of packed-refs), not a listing.
func (s *Store) HasSession(ctx context.Context, id string) (bool, error) {
	if validSessionID(id) != nil {
		return false, nil
	}
	refs, err := s.be.ListRefs(ctx, s.lay.sessions()+id+"/")
	if err != nil {
		return false, err
	}
	_, ok := refs[s.lay.mainRef(id)]
	return ok, nil
}

// loadSessionAt is LoadSession at the given refs of the session (the
// index reads a session at exactly the refs it keys the record by).
func (s *Store) loadSessionAt(id string, refs map[string]hash) (*ledger.StoredSession, error) {
	tip, ok := refs[s.lay.mainRef(id)]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ledger.ErrSessionNotFound, id)
	}
	ss := &ledger.StoredSession{MainTip: ledger.CommitID(tip.String())}
	ig := &ss.Integrity
	ig.SessionExists = true
	fail := func(format string, a ...any) { ig.Errors = append(ig.Errors, fmt.Sprintf(format, a...)) }

	main, err := s.readChainFiles(tip, id, "")
	if err != nil {
		fail("main chain: %v", err)
		ss.Meta = ledger.SessionMeta{ID: id}
		return ss, nil
	}
	// The commit walk and the thought files are independent: a second
	// goroutine walks the commits, then helps decode the files.
	var commits *chainCommits
	var walkErr error
	var next atomic.Int64
	walked := make(chan struct{})
	go func() {
		defer close(walked)
		commits, walkErr = s.walkChain(tip, id, "")
		s.decodeFiles(main, &next)
	}()
	s.decodeFiles(main, &next)
	<-walked
	ig.ManifestExists, ig.ManifestValid = main.manifestExists, main.manifest != nil
	if main.manifestErr != nil {
		fail("%v", main.manifestErr)
	}
	if main.manifest != nil {
		ss.Meta = metaFrom(main.manifest, main.partition)
	} else {
		ss.Meta = ledger.SessionMeta{ID: id, PartitionPath: main.partition}
	}
	if walkErr != nil {
		fail("main chain history: %v", walkErr)
	}
	ss.Main = main.thoughts(commits, fail)
	ig.MissingThoughtFiles = main.missing

	var names []string
	for ref := range refs {
		if b, ok := strings.CutPrefix(ref, s.lay.sessions()+id+"/branches/"); ok {
			names = append(names, b)
		}
	}
	sort.Strings(names)
	for _, bid := range names {
		btip := refs[s.lay.branchRef(id, bid)]
		bf, err := s.readChainFiles(btip, id, bid)
		if err != nil {
			fail("branch %s: %v", bid, err)
			continue
		}
		if bf.manifestErr != nil {
			fail("branch %s: %v", bid, bf.manifestErr)
		}
		var bnext atomic.Int64
		s.decodeFiles(bf, &bnext)
		bcommits, err := s.walkChain(btip, id, bid)
		if err != nil {
			fail("branch %s history: %v", bid, err)
		}
		sb := ledger.StoredBranch{ID: bid, Tip: ledger.CommitID(btip.String()), Thoughts: bf.thoughts(bcommits, fail)}
		if bcommits.fork != zeroHash {
			sb.ForkCommit = ledger.CommitID(bcommits.fork.String())
		}
		if len(bf.missing) > 0 {
			if ig.MissingBranchFiles == nil {
				ig.MissingBranchFiles = map[string][]string{}
			}
			ig.MissingBranchFiles[bid] = bf.missing
		}
		if bf.manifest != nil && bf.manifest.Metadata.UpdatedAt.After(ss.Meta.UpdatedAt) {
			ss.Meta.UpdatedAt = bf.manifest.Metadata.UpdatedAt
		}
		ss.Branches = append(ss.Branches, sb)
	}
	ig.Valid = len(ig.Errors) == 0 && len(ig.MissingThoughtFiles) == 0 && len(ig.MissingBranchFiles) == 0 &&
		ig.ManifestExists && ig.ManifestValid
	return ss, nil
}

func metaFrom(m *manifest.Manifest, partition string) ledger.SessionMeta {
	meta := ledger.SessionMeta{ID: m.ID, Title: m.Metadata.Title, Tags: append([]string{}, m.Metadata.Tags...),
		PartitionPath: partition, CreatedAt: m.Metadata.CreatedAt, UpdatedAt: m.Metadata.UpdatedAt}
	if m.Metadata.Description != nil {
		meta.Description = *m.Metadata.Description
	}
	return meta
}

// chainFiles is what one ref's tree says about a chain.
type chainFiles struct {
	manifestExists bool
	manifest       *manifest.Manifest
	manifestErr    error
	partition      string
	files          []fileRef // in manifest order
	missing        []string
}

type fileRef struct {
	name       string
	id         hash
	td         ledger.ThoughtData
	ok         bool
	unreadable bool
	err        error
}

// readChainFiles reads the manifest and the chain's thought files at tip.
func (s *Store) readChainFiles(tip hash, id, branch string) (*chainFiles, error) {
	folder, partition, err := s.readChainPath(tip, id)
	if err != nil {
		return nil, err
	}
	cf := &chainFiles{partition: partition}
	dir := folder
	if branch != "" {
		dir = &object.Tree{}
		if e, ok := folder.Get("branches"); ok && e.Dir {
			bt, _, err := s.readTreeBytes(e.ID)
			if err != nil {
				return nil, err
			}
			if be, ok := bt.Get(branch); ok && be.Dir {
				if dir, _, err = s.readTreeBytes(be.ID); err != nil {
					return nil, err
				}
			}
		}
	}
	var names []string
	if me, ok := folder.Get(manifest.FileName); ok {
		cf.manifestExists = true
		data, err := s.readBlob(me.ID)
		if err != nil {
			cf.manifestErr = fmt.Errorf("manifest.json unreadable: %v", err)
		} else if cf.manifest, err = manifest.Parse(data); err != nil {
			cf.manifestErr = err
		} else if cf.manifest.ID != id {
			cf.manifestErr = fmt.Errorf("manifest.json names session %q", cf.manifest.ID)
			cf.manifest = nil
		}
	} else {
		cf.manifestErr = fmt.Errorf("manifest.json is missing")
	}
	if cf.manifest != nil {
		if branch == "" {
			names = cf.manifest.ThoughtFiles
		} else {
			names = cf.manifest.BranchFiles[branch]
		}
	} else {
		// Without a manifest, fall back to the files present, by number.
		for _, e := range dir.Entries {
			if !e.Dir && strings.HasSuffix(e.Name, ".json") && e.Name != manifest.FileName {
				names = append(names, e.Name)
			}
		}
		sort.Slice(names, func(i, j int) bool { return fileNumber(names[i]) < fileNumber(names[j]) })
	}
	for _, n := range names {
		e, ok := dir.Get(n)
		if !ok {
			cf.missing = append(cf.missing, n)
			continue
		}
		cf.files = append(cf.files, fileRef{name: n, id: e.ID})
	}
	return cf, nil
}

// decodeFiles reads and decodes the thought files; several goroutines may
// call it at once, each taking the next file.
func (s *Store) decodeFiles(cf *chainFiles, next *atomic.Int64) {
	for {
		i := int(next.Add(1)) - 1
		if i >= len(cf.files) {
			return
		}
		f := &cf.files[i]
		data, err := s.readBlob(f.id)
		if err != nil {
			f.err = fmt.Errorf("%s unreadable: %v", f.name, err)
			f.unreadable = true
			continue
		}
		if err := decodeThoughtFile(data, &f.td); err != nil {
			f.err = fmt.Errorf("%s: %v", f.name, err)
			continue
		}
		f.ok = true
	}
}

func fileNumber(name string) int {
	n, _ := strconv.Atoi(strings.TrimSuffix(name, ".json"))
	return n
}

// readChainPath reads the trees from a commit down to the session folder
// and returns the folder and the partition it is in ("" for none).
func (s *Store) readChainPath(tip hash, id string) (*object.Tree, string, error) {
	c, err := s.readCommit(tip)
	if err != nil {
		return nil, "", err
	}
	root, _, err := s.readTreeBytes(c.Tree)
	if err != nil {
		return nil, "", err
	}
	sessions, sessionsID, err := s.subfolder(root, c.Tree, "sessions")
	if err != nil {
		return nil, "", err
	}
	parent, parentID, partition := sessions, sessionsID, ""
	if _, ok := sessions.Get(id); !ok {
		for _, e := range sessions.Entries {
			if !e.Dir {
				continue
			}
			p, pid, err := s.subfolder(sessions, sessionsID, e.Name)
			if err != nil {
				return nil, "", err
			}
			if _, ok := p.Get(id); ok {
				parent, parentID, partition = p, pid, e.Name
				break
			}
		}
	}
	folder, _, err := s.subfolder(parent, parentID, id)
	if err != nil {
		return nil, "", fmt.Errorf("session folder: %w", err)
	}
	return folder, partition, nil
}

// subfolder reads the folder name of tree parent, whose id is parentID.
func (s *Store) subfolder(parent *object.Tree, parentID hash, name string) (*object.Tree, hash, error) {
	e, ok := parent.Get(name)
	if !ok || !e.Dir {
		return nil, zeroHash, fmt.Errorf("folder %q missing from tree %s", name, parentID)
	}
	t, _, err := s.readTreeBytes(e.ID)
	return t, e.ID, err
}

func (cf *chainFiles) thoughts(commits *chainCommits, fail func(string, ...any)) []ledger.StoredThought {
	out := make([]ledger.StoredThought, 0, len(cf.files))
	for _, f := range cf.files {
		if f.unreadable {
			cf.missing = append(cf.missing, f.name)
		}
		if !f.ok {
			if !f.unreadable && f.err != nil {
				fail("%v", f.err)
			}
			continue
		}
		st := ledger.StoredThought{Data: f.td}
		if commits != nil {
			if c, ok := commits.byNumber[f.td.ThoughtNumber]; ok {
				st.Commit = ledger.CommitID(c.String())
			}
		}
		out = append(out, st)
	}
	return out
}

// chainCommits maps thought numbers to the commits that recorded them.
type chainCommits struct {
	byNumber map[int]hash
	fork     hash // for a branch: the main-chain commit it grew from
}

// walkChain follows first parents from tip back to the start of the chain:
// the session's first commit for the main chain, the fork point for a
// branch. When a thought's file was rewritten later (a critique), the oldest
// commit naming the thought is the one that recorded it.
func (s *Store) walkChain(tip hash, id, branch string) (*chainCommits, error) {
	cc := &chainCommits{byNumber: map[int]hash{}}
	for cur := tip; cur != zeroHash; {
		data, err := s.readTyped(cur, typeCommit)
		if err != nil {
			return cc, err
		}
		ct, err := scanCommit(data)
		if err != nil {
			return cc, fmt.Errorf("commit %s: %w", cur, err)
		}
		if string(ct.session) != id {
			break
		}
		if branch != "" && string(ct.branch) != branch {
			cc.fork = cur
			break
		}
		if n, err := strconv.Atoi(string(ct.thought)); err == nil {
			cc.byNumber[n] = cur
		}
		if ct.parent == zeroHash {
			break
		}
		cur = ct.parent
	}
	return cc, nil
}

// commitTrailers is what walking a chain needs from a commit.
type commitTrailers struct {
	parent                   hash
	session, thought, branch []byte
}

// scanCommit reads a commit's first parent and its Thoughtbox trailers
// without building strings: a session load walks every commit of the chain.
func scanCommit(data []byte) (commitTrailers, error) {
	var ct commitTrailers
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			return ct, fmt.Errorf("truncated commit header")
		}
		line := data[:nl]
		data = data[nl+1:]
		if len(line) == 0 {
			break
		}
		if ct.parent == zeroHash && bytes.HasPrefix(line, []byte("parent ")) && len(line) == 47 {
			if _, err := hex.Decode(ct.parent[:], line[7:]); err != nil {
				return ct, fmt.Errorf("bad parent")
			}
		}
	}
	// The trailers are the message's last paragraph.
	msg := bytes.TrimRight(data, "\n")
	if i := bytes.LastIndex(msg, []byte("\n\n")); i >= 0 {
		msg = msg[i+2:]
	}
	for len(msg) > 0 {
		line := msg
		if nl := bytes.IndexByte(msg, '\n'); nl >= 0 {
			line, msg = msg[:nl], msg[nl+1:]
		} else {
			msg = nil
		}
		if v, ok := bytes.CutPrefix(line, []byte("Thoughtbox-Session: ")); ok {
			ct.session = bytes.TrimSpace(v)
		} else if v, ok := bytes.CutPrefix(line, []byte("Thoughtbox-Thought: ")); ok {
			ct.thought = bytes.TrimSpace(v)
		} else if v, ok := bytes.CutPrefix(line, []byte("Thoughtbox-Branch: ")); ok {
			ct.branch = bytes.TrimSpace(v)
		}
	}
	return ct, nil
}

// ListSessions implements ledger.Store, over the session index (see
// index.go), so only sessions written since the last listing are read.
func (s *Store) ListSessions(ctx context.Context) ([]ledger.SessionSummary, error) {
	return s.indexedSummaries(ctx)
}

type branchTip struct {
	name string
	tip  hash
}

type sessionRefs struct {
	main     hash
	branches []branchTip
}

// key identifies the exact state of a session's refs.
func (c *sessionRefs) key() string {
	var b strings.Builder
	b.WriteString(c.main.String())
	for _, br := range c.branches {
		b.WriteString(" " + br.name + "=" + br.tip.String())
	}
	return b.String()
}

// summary reads one session's manifests (main and branches) for listing.
func (s *Store) summary(id string, c *sessionRefs) (ledger.SessionSummary, error) {
	m, part, err := s.manifestAt(c.main, id)
	if err != nil {
		return ledger.SessionSummary{}, err
	}
	sum := ledger.SessionSummary{Meta: metaFrom(m, part), ThoughtCount: len(m.ThoughtFiles)}
	for _, br := range c.branches {
		sum.BranchCount++
		if bm, _, err := s.manifestAt(br.tip, id); err == nil {
			sum.ThoughtCount += len(bm.BranchFiles[br.name])
			if bm.Metadata.UpdatedAt.After(sum.Meta.UpdatedAt) {
				sum.Meta.UpdatedAt = bm.Metadata.UpdatedAt
			}
		}
	}
	return sum, nil
}

func (s *Store) manifestAt(tip hash, id string) (*manifest.Manifest, string, error) {
	folder, partition, err := s.readChainPath(tip, id)
	if err != nil {
		return nil, "", err
	}
	me, ok := folder.Get(manifest.FileName)
	if !ok {
		return nil, "", fmt.Errorf("manifest.json is missing")
	}
	data, err := s.readBlob(me.ID)
	if err != nil {
		return nil, "", err
	}
	m, err := manifest.Parse(data)
	return m, partition, err
}
