package gitstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// A session of a ledger kept in a code repository (InCode) may have a
// third kind of ref beside its main chain and branches:
// <root>sessions/<id>/links, whose tree holds only links/<commit>.json,
// one file per commit linked to the session (a ledger.CodeLink, pretty
// JSON). Links only add, one commit per batch, so two writers never lose
// each other's links: a lost compare-and-swap is rebuilt on the new tip.
// The ref lives under the session's folder so that delete, restore, push
// (its own group, see kinds.go) and private sessions treat it with
// the session; listing, loading, the index and verify of chains read only
// main and branches/, and leave it alone.

// linksDir is the one folder of a links ref's tree.
const linksDir = "links"

// maxLinkFileBytes bounds one link file, ours and a pull's alike: a link
// lists at most ledger.MaxLinkFiles paths, and a file far past that is
// no link this engine wrote.
const maxLinkFileBytes = 1 << 20

// ErrNoLinks is returned by the link methods of a standalone ledger:
// links name commits of the code repository the ledger lives in.
var ErrNoLinks = errors.New("links to commits are kept only by a ledger inside a code repository")

// linksRef is session id's links ref (InCode only).
func (l Layout) linksRef(id string) string { return l.sessions() + id + "/" + linksLeaf }

// linksOfRef names the session whose links ref ref is ("" for any other).
func (l Layout) linksOfRef(ref string) string {
	if k, id, _ := l.kindOf(ref); k == linksKind {
		return id
	}
	return ""
}

// linkFile is the name of commit's link file in the links folder.
func linkFile(commit string) string { return commit + ".json" }

// AddLinks records links of session id: those whose commit the session
// has no link for yet. It returns how many it added; adding links already
// there changes nothing. The session must exist.
func (s *Store) AddLinks(ctx context.Context, id string, links []ledger.CodeLink) (int, error) {
	if s.lay != InCode {
		return 0, ErrNoLinks
	}
	if err := validSessionID(id); err != nil {
		return 0, fmt.Errorf("%w: %v", ledger.ErrSessionNotFound, err)
	}
	files := map[string][]byte{}
	for i := range links {
		l := links[i]
		l.Session = id
		if len(l.Files) > ledger.MaxLinkFiles {
			l.Files = l.Files[:ledger.MaxLinkFiles]
		}
		if err := l.Check(); err != nil {
			return 0, fmt.Errorf("link %d: %w", i, err)
		}
		data, err := json.MarshalIndent(l, "", "  ")
		if err != nil {
			return 0, err
		}
		if _, dup := files[linkFile(l.Commit)]; !dup {
			files[linkFile(l.Commit)] = append(data, '\n')
		}
	}
	if ok, err := s.HasSession(ctx, id); err != nil {
		return 0, err
	} else if !ok {
		return 0, fmt.Errorf("%w: %s", ledger.ErrSessionNotFound, id)
	}
	var added int
	err := retryCAS(ctx, func(int) error {
		var err error
		added, err = s.addLinksOnce(ctx, id, files)
		return err
	})
	return added, err
}

// addLinksOnce builds one commit of the files the links folder lacks on
// the ref's current tip and swaps it in.
func (s *Store) addLinksOnce(ctx context.Context, id string, files map[string][]byte) (int, error) {
	ref := s.lay.linksRef(id)
	tip, err := s.be.ReadRef(ctx, ref)
	if err != nil {
		return 0, err
	}
	root, dir := &object.Tree{}, &object.Tree{}
	if tip != zeroHash {
		if root, dir, err = s.linksTrees(tip); err != nil {
			return 0, fmt.Errorf("%s: %w", ref, err)
		}
	}
	b := &batch{}
	var names []string
	for name, data := range files {
		if _, ok := dir.Get(name); ok {
			continue
		}
		blob := object.HashObject(typeBlob, data)
		b.Objects = append(b.Objects, logObject{ID: blob, Type: typeBlob, Data: data})
		dir.Set(object.TreeEntry{Name: name, ID: blob})
		names = append(names, strings.TrimSuffix(name, ".json"))
	}
	if len(names) == 0 {
		return 0, nil
	}
	sort.Strings(names)
	root.Set(object.TreeEntry{Name: linksDir, Dir: true, ID: addTree(b, dir)})
	var msg strings.Builder
	if len(names) == 1 {
		fmt.Fprintf(&msg, "Link commit %s\n\n", names[0])
	} else {
		fmt.Fprintf(&msg, "Link %d commits\n\n", len(names))
		for _, n := range names {
			msg.WriteString(n + "\n")
		}
		msg.WriteString("\n")
	}
	fmt.Fprintf(&msg, "%s: %s\n", trailerSession, id)
	cid := addCommit(b, commitSpec{tree: addTree(b, root), parents: []hash{tip}, message: msg.String(), when: time.Now()})
	b.Updates = append(b.Updates, refUpdate{Name: ref, Old: tip, New: cid})
	if err := s.be.Apply(ctx, b); err != nil {
		return 0, err
	}
	return len(names), nil
}

// linksTrees reads the root tree and the links folder at a links commit.
func (s *Store) linksTrees(tip hash) (root, dir *object.Tree, err error) {
	c, err := s.readCommit(tip)
	if err != nil {
		return nil, nil, err
	}
	if root, _, err = s.readTreeBytes(c.Tree); err != nil {
		return nil, nil, err
	}
	e, ok := root.Get(linksDir)
	if !ok || !e.Dir {
		return root, &object.Tree{}, nil
	}
	if dir, _, err = s.readTreeBytes(e.ID); err != nil {
		return nil, nil, err
	}
	return root, dir, nil
}

// ReadLinks returns session id's links, by commit, and the links ref's
// tip ("" and no links when it has none). A file that does not parse is
// reported by Verify and skipped here.
func (s *Store) ReadLinks(ctx context.Context, id string) ([]ledger.CodeLink, string, error) {
	if s.lay != InCode || validSessionID(id) != nil {
		return nil, "", nil
	}
	tip, err := s.be.ReadRef(ctx, s.lay.linksRef(id))
	if err != nil || tip == zeroHash {
		return nil, "", err
	}
	_, dir, err := s.linksTrees(tip)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", s.lay.linksRef(id), err)
	}
	out := make([]ledger.CodeLink, 0, len(dir.Entries))
	for _, e := range dir.Entries {
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		if l, err := s.readLinkFile(id, e); err == nil {
			out = append(out, l)
		}
	}
	return out, tip.String(), nil
}

// readLinkFile reads and checks one file of a links folder.
func (s *Store) readLinkFile(id string, e object.TreeEntry) (ledger.CodeLink, error) {
	var l ledger.CodeLink
	commit, ok := strings.CutSuffix(e.Name, ".json")
	if e.Dir || !ok {
		return l, fmt.Errorf("links/%s: expected only <commit>.json files", e.Name)
	}
	n, err := s.blobSize(e.ID)
	if err != nil {
		return l, fmt.Errorf("links/%s: %w", e.Name, err)
	}
	if n < 0 || n > maxLinkFileBytes {
		return l, fmt.Errorf("links/%s: expected a file of at most %d bytes", e.Name, maxLinkFileBytes)
	}
	data, err := s.readBlob(e.ID)
	if err != nil {
		return l, fmt.Errorf("links/%s: %w", e.Name, err)
	}
	if err := json.Unmarshal(data, &l); err != nil {
		return l, fmt.Errorf("links/%s: expected a JSON link: %v", e.Name, err)
	}
	if err := l.Check(); err != nil {
		return l, fmt.Errorf("links/%s: %v", e.Name, err)
	}
	if l.Commit != commit || l.Session != id {
		return l, fmt.Errorf("links/%s: it links commit %s to session %s, expected %s to %s", e.Name, l.Commit, l.Session, commit, id)
	}
	return l, nil
}

// LinkTips lists the tip of every session's links ref, by session.
func (s *Store) LinkTips(ctx context.Context) (map[string]string, error) {
	if s.lay != InCode {
		return map[string]string{}, nil
	}
	refs, err := s.be.ListRefs(ctx, s.lay.sessions())
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for ref, tip := range refs {
		if id := s.lay.linksOfRef(ref); id != "" {
			out[id] = tip.String()
		}
	}
	return out, nil
}

// checkLinksTree checks a links commit's tree: a root holding only the
// links folder, which holds only readable link files of the session.
func (s *Store) checkLinksTree(id string, tip hash) []string {
	root, dir, err := s.linksTrees(tip)
	if err != nil {
		return []string{fmt.Sprintf("links commit %s: %v", tip, err)}
	}
	var problems []string
	for _, e := range root.Entries {
		if e.Name != linksDir || !e.Dir {
			problems = append(problems, fmt.Sprintf("links commit %s: %s is outside links/: a links ref holds only link files", tip, e.Name))
		}
	}
	for _, e := range dir.Entries {
		if _, err := s.readLinkFile(id, e); err != nil {
			problems = append(problems, fmt.Sprintf("links commit %s: %v", tip, err))
		}
		if len(problems) > 20 {
			problems = append(problems, "… and more")
			break
		}
	}
	return problems
}

// checkIncomingLinks checks a pull's new tip of session id's links ref:
// every commit the pull brings (up to what we have) holds a links tree of
// the session, and nothing else.
func (s *Store) checkIncomingLinks(ctx context.Context, id string, tip hash) ([]string, error) {
	local, err := s.be.ReadRef(ctx, s.lay.linksRef(id))
	if err != nil {
		return nil, err
	}
	have := map[hash]bool{}
	if local != zeroHash {
		if err := s.markAncestors(local, have); err != nil {
			return nil, err
		}
	}
	var problems []string
	seen := map[hash]bool{}
	for queue := []hash{tip}; len(queue) > 0 && len(problems) == 0; {
		h := queue[0]
		queue = queue[1:]
		if have[h] || seen[h] {
			continue
		}
		seen[h] = true
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := s.readCommit(h)
		if err != nil {
			return append(problems, fmt.Sprintf("links commit %s: %v", h, err)), nil
		}
		problems = append(problems, s.checkLinksTree(id, h)...)
		queue = append(queue, c.Parents...)
	}
	return problems, nil
}

// verifyLinks adds to a verify the problems of the session's links ref,
// if it has one.
func (s *Store) verifyLinks(ctx context.Context, id string, fail func(string, ...any)) {
	if s.lay != InCode {
		return
	}
	tip, err := s.be.ReadRef(ctx, s.lay.linksRef(id))
	if err != nil || tip == zeroHash {
		return
	}
	for _, p := range s.checkLinksTree(id, tip) {
		fail("%s", p)
	}
}

// MergeLinks merges two tips of one session's links ref that went apart
// (links added on two clones): the union of both folders, ours kept where
// both linked the same commit. It returns the batch of the merge commit
// (parents: ours, then theirs) with no ref move, and the commit's id; it
// writes nothing. Links only add, so the merge never conflicts.
func (s *Store) MergeLinks(ours, theirs hash, remote string) (*batch, hash, error) {
	root, mine, err := s.linksTrees(ours)
	if err != nil {
		return nil, zeroHash, err
	}
	_, their, err := s.linksTrees(theirs)
	if err != nil {
		return nil, zeroHash, err
	}
	for _, e := range their.Entries {
		if _, ok := mine.Get(e.Name); !ok {
			mine.Set(e)
		}
	}
	b := &batch{}
	root.Set(object.TreeEntry{Name: linksDir, Dir: true, ID: addTree(b, mine)})
	cid := addCommit(b, commitSpec{tree: addTree(b, root), parents: []hash{ours, theirs},
		message: "Merge links from " + remote + "\n", when: time.Now().UTC().Truncate(time.Second)})
	return b, cid, nil
}
