package gitstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/frontmatter"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// What a pull brings in is checked before any ref of ours moves: a chain
// from a remote is someone else's writing, and once it is a live session
// ref, search, verify and add all trust it. A session whose incoming chain
// fails a check is kept under quarantinePrefix instead, where nothing reads
// it as a session, and the pull reports it.

// quarantinePrefix holds incoming chains that failed the checks:
// refs/thoughtbox/quarantine/<remote>/sessions/<id>/main (and branches).
const quarantinePrefix = "refs/thoughtbox/quarantine/"

// DefaultMaxThoughtBytes is the largest thought text (and critique text)
// a pull accepts when TransferOptions.MaxThoughtBytes is 0: the ledger's
// own default, so that what one ledger accepts from an agent another
// accepts from a pull.
const DefaultMaxThoughtBytes = 1 << 20

// maxIncomingFileRoom is what a file a pull brings in may hold beyond the
// texts the thought limit bounds: the limit is on a thought's text, not
// on the file that stores it. A thought file holds a thought and perhaps a
// critique, each up to the limit, and JSON may write each byte of them as
// six (`<` is written \u003c); the room is for the rest — a long session's
// manifest, an RLM transcript, a knowledge entry's front matter — and
// stops a remote from handing us a file no ledger could have written.
const maxIncomingFileRoom = 64 << 20

// maxIncomingFileBytes is the largest file a pull takes under a thought
// limit of maxThought.
func maxIncomingFileBytes(maxThought int) int64 {
	return 2*6*int64(maxThought) + maxIncomingFileRoom
}

// Quarantined is an incoming chain a pull refused to make live.
type Quarantined struct {
	// Session is the session the chain's ref names ("" for the knowledge
	// zone).
	Session string `json:"session,omitempty"`
	// Notebook is the notebook the ref names ("" for another ref).
	Notebook string `json:"notebook,omitempty"`
	Ref      string `json:"ref"`
	// KeptAs is the ref that holds the remote's chain.
	KeptAs string `json:"keptAs"`
	Tip    string `json:"tip"`
	// Problems say what is wrong, one finding each.
	Problems []string `json:"problems"`
}

func (o TransferOptions) maxThoughtBytes() int {
	if o.MaxThoughtBytes > 0 {
		return o.MaxThoughtBytes
	}
	return DefaultMaxThoughtBytes
}

// checkIncomingSession checks a session's incoming refs (ref -> remote
// tip) with verify's own checks (every new commit carries the session's
// trailers, the tip's manifest parses and names the session, the thought
// files parse and agree with the manifest and with the commits), plus the
// layout of each tip's tree (the session's folder and nothing else) and the
// size limit. Commits we already have are not walked again: the walk stops
// at the session's current tips here, so a pull costs what it brings.
func (s *Store) checkIncomingSession(ctx context.Context, id string, incoming map[string]hash, maxBytes int) ([]string, error) {
	v := &verifier{ctx: ctx, s: s, id: id, status: map[hash]string{}, queued: map[hash]bool{},
		commits: map[hash]commitInfo{}, reported: map[string]bool{}, checkedFiles: map[string]bool{},
		maxText: maxBytes}
	local, err := s.be.ListRefs(ctx, refPrefix+id+"/")
	if err != nil {
		return nil, err
	}
	for _, h := range local {
		v.queued[h] = true
	}
	refs := make([]string, 0, len(incoming))
	for ref := range incoming {
		refs = append(refs, ref)
	}
	sort.Slice(refs, func(i, j int) bool { return refOrder(refs[i]) < refOrder(refs[j]) })
	chains := make([]verifyChain, 0, len(refs))
	for _, ref := range refs {
		c := verifyChain{ref: ref, tip: incoming[ref]}
		if b, ok := strings.CutPrefix(ref, refPrefix+id+"/branches/"); ok {
			c.branch = b
		}
		chains = append(chains, c)
	}
	if _, ok := incoming[mainRef(id)]; !ok && local[mainRef(id)] == zeroHash {
		v.fail("the remote has branch refs of session %s but no main chain", id)
	}
	for i := range chains {
		v.checkTip(&chains[i])
	}
	if err := v.walk(chains); err != nil {
		return nil, err
	}
	for i := range chains {
		if !chains[i].tipOK {
			continue
		}
		if local[chains[i].ref] == chains[i].tip {
			continue
		}
		v.checkChain(&chains[i])
		s.checkSessionLayout(v, &chains[i])
	}
	// The thoughts at the tips were measured by checkChain (their text,
	// as the ledger measures a thought it accepts). Every other file the
	// new commits brought — older versions of thought files included — is
	// bounded too. The walk read them all; the status map names them.
	fileMax := maxIncomingFileBytes(maxBytes)
	for obj, problem := range v.status {
		if problem != "" {
			continue
		}
		if size, err := s.blobSize(obj); err == nil && int64(size) > fileMax {
			v.fail("file %s is %d bytes: more than %d, the most a file may hold under a thought limit of %d bytes (THOUGHTBOX_MAX_THOUGHT_BYTES)", obj, size, fileMax, maxBytes)
		}
	}
	res := v.res
	for _, name := range res.MissingThoughtFiles {
		v.fail("the manifest lists %s, which is not in the tree", name)
	}
	for b, names := range res.MissingBranchFiles {
		for _, name := range names {
			v.fail("the manifest lists %s of branch %s, which is not in the tree", name, b)
		}
	}
	if v.dropped > 0 {
		v.res.Errors = append(v.res.Errors, fmt.Sprintf("… and %d more problems", v.dropped))
	}
	return v.res.Errors, nil
}

// blobSize returns the size of a blob (-1 for another type).
func (s *Store) blobSize(id hash) (int, error) {
	t, data, err := s.be.ReadObject(context.Background(), id)
	if err != nil {
		return 0, err
	}
	if t != typeBlob {
		return -1, nil
	}
	return len(data), nil
}

// checkSessionLayout checks that a chain's tip holds the session's folder
// and nothing else: a root with only sessions/, which holds only <id>/ or
// one partition folder holding only <id>/. Another session's folder in a
// session's chain would make that session appear twice.
func (s *Store) checkSessionLayout(v *verifier, c *verifyChain) {
	at := fmt.Sprintf("%s (commit %s)", c.label(), c.tip)
	cm, err := s.readCommit(c.tip)
	if err != nil {
		return // reported by the walk
	}
	root, _, err := s.readTreeBytes(cm.Tree)
	if err != nil {
		return
	}
	for _, e := range root.Entries {
		if e.Name != "sessions" || !e.Dir {
			v.fail("%s: %s is outside sessions/%s/: a session's chain holds only its own folder", at, e.Name, v.id)
		}
	}
	se, ok := root.Get("sessions")
	if !ok || !se.Dir {
		return // checkChain reported it
	}
	sessions, _, err := s.readTreeBytes(se.ID)
	if err != nil {
		return
	}
	if len(sessions.Entries) != 1 || !sessions.Entries[0].Dir {
		v.fail("%s: sessions/ holds %d entries: expected only the folder of session %s", at, len(sessions.Entries), v.id)
		return
	}
	e := sessions.Entries[0]
	if e.Name == v.id {
		return
	}
	part, _, err := s.readTreeBytes(e.ID)
	if err != nil {
		return
	}
	if len(part.Entries) != 1 || part.Entries[0].Name != v.id || !part.Entries[0].Dir {
		v.fail("%s: sessions/%s/ holds something other than the folder of session %s", at, e.Name, v.id)
	}
}

// checkIncomingKnowledge checks the knowledge zone's incoming tip: only
// patterns/ and notes/ folders of .md entries, each valid UTF-8 with its
// front matter and content no longer than the knowledge service accepts
// (ledger.MaxKnowledgeContentBytes, which the thought limit does not
// change).
func (s *Store) checkIncomingKnowledge(tip hash, maxBytes int) ([]string, error) {
	var problems []string
	cm, err := s.readCommit(tip)
	if err != nil {
		return []string{fmt.Sprintf("commit %s: %v", tip, err)}, nil
	}
	root, _, err := s.readTreeBytes(cm.Tree)
	if err != nil {
		return []string{fmt.Sprintf("the root tree of commit %s: %v", tip, err)}, nil
	}
	for _, e := range root.Entries {
		if !e.Dir || (e.Name != "patterns" && e.Name != "notes") {
			problems = append(problems, fmt.Sprintf("%s: expected only the folders patterns/ and notes/", e.Name))
			continue
		}
		dir, _, err := s.readTreeBytes(e.ID)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s/: %v", e.Name, err))
			continue
		}
		for _, f := range dir.Entries {
			path := e.Name + "/" + f.Name
			if f.Dir || !strings.HasSuffix(f.Name, ".md") {
				problems = append(problems, fmt.Sprintf("%s: expected a .md file", path))
				continue
			}
			t, data, err := s.be.ReadObject(context.Background(), f.ID)
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("%s: %v", path, err))
			case t != typeBlob:
				problems = append(problems, fmt.Sprintf("%s: a %s, not a file", path, t))
			case int64(len(data)) > maxIncomingFileBytes(maxBytes):
				problems = append(problems, fmt.Sprintf("%s is %d bytes: more than %d, the most a file may hold", path, len(data), maxIncomingFileBytes(maxBytes)))
			case !utf8.Valid(data):
				problems = append(problems, fmt.Sprintf("%s is not UTF-8 text", path))
			default:
				_, content, ok := frontmatter.Split(data)
				if !ok {
					problems = append(problems, fmt.Sprintf("%s has no front matter (--- … ---)", path))
				} else if n := len(frontmatter.TrimContent(content)); n > ledger.MaxKnowledgeContentBytes {
					problems = append(problems, fmt.Sprintf("%s has %d bytes of content: more than the limit of %d", path, n, ledger.MaxKnowledgeContentBytes))
				}
			}
		}
	}
	return problems, nil
}

// checkIncomingNotebook checks a notebook's incoming tip as
// checkSessionLayout does a session's: the tree holds notebooks/<id>/ and
// nothing else (another notebook's folder would make it appear twice),
// with a notebook.json that is a JSON object, and every file is UTF-8 text
// within the size limit.
func (s *Store) checkIncomingNotebook(id string, tip hash, maxBytes int) []string {
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	cm, err := s.readCommit(tip)
	if err != nil {
		return []string{fmt.Sprintf("commit %s: %v", tip, err)}
	}
	root, _, err := s.readTreeBytes(cm.Tree)
	if err != nil {
		return []string{fmt.Sprintf("the root tree of commit %s: %v", tip, err)}
	}
	want := "notebooks/" + id + "/"
	for _, e := range root.Entries {
		if e.Name != "notebooks" || !e.Dir {
			fail("%s is outside %s: a notebook's ref holds only its own folder", e.Name, want)
		}
	}
	ne, ok := root.Get("notebooks")
	if !ok || !ne.Dir {
		return append(problems, fmt.Sprintf("commit %s has no folder %s", tip, want))
	}
	nbs, _, err := s.readTreeBytes(ne.ID)
	if err != nil {
		return append(problems, fmt.Sprintf("notebooks/: %v", err))
	}
	for _, e := range nbs.Entries {
		if e.Name != id || !e.Dir {
			fail("notebooks/%s is not the folder of notebook %s", e.Name, id)
		}
	}
	fe, ok := nbs.Get(id)
	if !ok || !fe.Dir {
		return append(problems, fmt.Sprintf("commit %s has no folder %s", tip, want))
	}
	folder, _, err := s.readTreeBytes(fe.ID)
	if err != nil {
		return append(problems, fmt.Sprintf("%s: %v", want, err))
	}
	var walk func(t *object.Tree, prefix string, depth int)
	walk = func(t *object.Tree, prefix string, depth int) {
		for _, e := range t.Entries {
			path := prefix + e.Name
			if err := validNotebookPath(e.Name); err != nil {
				fail("%s: %v", path, err)
				continue
			}
			if e.Dir {
				if depth >= 8 {
					fail("%s/: folders nested more than 8 deep", path)
					continue
				}
				sub, _, err := s.readTreeBytes(e.ID)
				if err != nil {
					fail("%s/: %v", path, err)
					continue
				}
				walk(sub, path+"/", depth+1)
				continue
			}
			t, data, err := s.be.ReadObject(context.Background(), e.ID)
			switch {
			case err != nil:
				fail("%s: %v", path, err)
			case t != typeBlob:
				fail("%s: a %s, not a file", path, t)
			case len(data) > maxBytes:
				fail("%s is %d bytes: more than the limit of %d (MaxThoughtBytes)", path, len(data), maxBytes)
			case !utf8.Valid(data):
				fail("%s is not UTF-8 text", path)
			case path == want+"notebook.json" && !isJSONObject(data):
				fail("%s is not a JSON object", path)
			}
		}
	}
	walk(folder, want, 0)
	if e, ok := folder.Get("notebook.json"); !ok || e.Dir {
		fail("%snotebook.json is missing", want)
	}
	return problems
}

// checkNotebookHistory checks the commits a pull brings for a notebook,
// from tip down to the notebook's tip here (all of them for a notebook new
// to us): each must be a commit whose files are within the size limit, so
// that no oversized file enters the repository through an older commit
// that the tip no longer shows. Trees and blobs are looked at once.
func (s *Store) checkNotebookHistory(ctx context.Context, tip, local hash, maxBytes int) ([]string, error) {
	var problems []string
	seen := map[hash]bool{local: true}
	var walkTree func(id hash, path string) error
	walkTree = func(id hash, path string) error {
		if seen[id] || len(problems) >= 20 {
			return nil
		}
		seen[id] = true
		t, _, err := s.readTreeBytes(id)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", path, err))
			return nil
		}
		for _, e := range t.Entries {
			if e.Dir {
				if err := walkTree(e.ID, path+e.Name+"/"); err != nil {
					return err
				}
				continue
			}
			if seen[e.ID] {
				continue
			}
			seen[e.ID] = true
			size, err := s.blobSize(e.ID)
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("%s%s: %v", path, e.Name, err))
			case size > maxBytes:
				problems = append(problems, fmt.Sprintf("%s%s is %d bytes: more than the limit of %d (MaxThoughtBytes)", path, e.Name, size, maxBytes))
			}
		}
		return nil
	}
	queue := []hash{tip}
	for len(queue) > 0 && len(problems) < 20 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		c, err := s.readCommit(id)
		if err != nil {
			problems = append(problems, fmt.Sprintf("commit %s: %v", id, err))
			continue
		}
		if err := walkTree(c.Tree, ""); err != nil {
			return nil, err
		}
		queue = append(queue, c.Parents...)
	}
	return problems, nil
}

func isJSONObject(data []byte) bool {
	var v map[string]json.RawMessage
	return json.Unmarshal(data, &v) == nil && v != nil
}

// quarantineIncoming checks every group (a session, or the knowledge zone)
// whose refs a pull would move, and takes each that fails out of groups:
// its remote tips are kept under quarantinePrefix and reported in res.
func (s *Store) quarantineIncoming(ctx context.Context, remote string, groups map[string][]string, remoteRefs map[string]hash, maxBytes int, res *PullResult) error {
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	kept := &batch{}
	for _, g := range names {
		moving := map[string]hash{}
		for _, ref := range groups[g] {
			l, err := s.be.ReadRef(ctx, ref)
			if err != nil {
				return err
			}
			r := remoteRefs[ref]
			if l == r {
				continue
			}
			if l != zeroHash {
				ahead, err := s.isAncestor(r, l)
				if err != nil {
					return err
				}
				if ahead {
					continue
				}
			}
			moving[ref] = r
		}
		if len(moving) == 0 {
			continue
		}
		var problems []string
		var err error
		id := sessionOfRef(groups[g][0])
		switch {
		case id != "":
			problems, err = s.checkIncomingSession(ctx, id, moving, maxBytes)
		case groups[g][0] == knowledgeRef:
			problems, err = s.checkIncomingKnowledge(moving[knowledgeRef], maxBytes)
		case notebookOfRef(groups[g][0]) != "":
			ref := groups[g][0]
			problems = s.checkIncomingNotebook(notebookOfRef(ref), moving[ref], maxBytes)
			if len(problems) == 0 {
				local, rerr := s.be.ReadRef(ctx, ref)
				if rerr != nil {
					return rerr
				}
				problems, err = s.checkNotebookHistory(ctx, moving[ref], local, maxBytes)
			}
		}
		if err != nil {
			return fmt.Errorf("check %s: %w", g, err)
		}
		if len(problems) == 0 {
			continue
		}
		delete(groups, g)
		refs := make([]string, 0, len(moving))
		for ref := range moving {
			refs = append(refs, ref)
		}
		sort.Slice(refs, func(i, j int) bool { return refOrder(refs[i]) < refOrder(refs[j]) })
		for _, ref := range refs {
			keep := quarantinePrefix + remote + "/" + strings.TrimPrefix(ref, "refs/heads/")
			cur, err := s.be.ReadRef(ctx, keep)
			if err != nil {
				return err
			}
			if cur != moving[ref] {
				kept.Updates = append(kept.Updates, refUpdate{Name: keep, Old: cur, New: moving[ref]})
			}
			res.Quarantined = append(res.Quarantined, Quarantined{Session: id, Notebook: notebookOfRef(ref), Ref: ref, KeptAs: keep,
				Tip: moving[ref].String(), Problems: problems})
		}
	}
	if len(kept.Updates) == 0 {
		return nil
	}
	return s.be.Apply(ctx, kept)
}
