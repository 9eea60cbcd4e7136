package gitstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/frontmatter"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// The knowledge zone lives on its own ref, refs/heads/knowledge, so that it
// is pushed and pulled like the sessions and read with plain Git:
//
//	patterns/<id>.md    one pattern
//	notes/<id>.md       one scratchpad note
//
// Each file is Markdown with front matter (see encodeKnowledge); each
// change is one commit whose message names it, with a
// "Thoughtbox-Knowledge: pattern/<id>" trailer. People may edit these files
// by hand and push them back, so reading is lenient (parseKnowledge).

func knowledgeDir(kind ledger.KnowledgeKind) (string, error) {
	switch kind {
	case ledger.KindPattern:
		return "patterns", nil
	case ledger.KindNote:
		return "notes", nil
	}
	return "", fmt.Errorf("unknown knowledge kind %q", kind)
}

// knowledgeTip is the zone as of one commit of its ref.
type knowledgeTip struct {
	tip  hash // zeroHash: the ref does not exist yet
	when time.Time
	root *object.Tree
}

func (s *Store) readKnowledgeTip() (*knowledgeTip, error) {
	tip, err := s.be.ReadRef(context.Background(), s.lay.knowledge())
	if err != nil {
		return nil, err
	}
	k := &knowledgeTip{tip: tip, root: &object.Tree{}}
	if tip == zeroHash {
		return k, nil
	}
	raw, err := s.readTyped(tip, typeCommit)
	if err != nil {
		return nil, fmt.Errorf("%s at %s: %w", s.lay.knowledge(), tip, err)
	}
	c, err := object.ParseCommit(raw)
	if err != nil {
		return nil, fmt.Errorf("%s at %s: %w", s.lay.knowledge(), tip, err)
	}
	k.when = committerTime(raw)
	if k.root, _, err = s.readTreeBytes(c.Tree); err != nil {
		return nil, err
	}
	return k, nil
}

// knowledgeFolder returns a folder of the zone ("patterns", "notes"), empty
// if absent.
func (s *Store) knowledgeFolder(k *knowledgeTip, name string) (*object.Tree, error) {
	e, ok := k.root.Get(name)
	if !ok {
		return &object.Tree{}, nil
	}
	if !e.Dir {
		return nil, fmt.Errorf("%s: %s is a file, expected a folder", s.lay.knowledge(), name)
	}
	t, _, err := s.readTreeBytes(e.ID)
	return t, err
}

// ListKnowledge implements ledger.KnowledgeStore. Files whose names are not
// "<id>.md" with a valid id (a README, say) are not entries and are
// skipped.
func (s *Store) ListKnowledge(ctx context.Context, kind ledger.KnowledgeKind) ([]ledger.KnowledgeEntry, error) {
	name, err := knowledgeDir(kind)
	if err != nil {
		return nil, err
	}
	k, err := s.readKnowledgeTip()
	if err != nil {
		return nil, err
	}
	dir, err := s.knowledgeFolder(k, name)
	if err != nil {
		return nil, err
	}
	var out []ledger.KnowledgeEntry
	for _, e := range dir.Entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id, ok := strings.CutSuffix(e.Name, ".md")
		if e.Dir || !ok || !ledger.ValidKnowledgeID(id) {
			continue
		}
		data, err := s.readBlob(e.ID)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", name, e.Name, err)
		}
		out = append(out, knowledgeEntry(kind, id, e.ID, data, k.when))
	}
	return out, nil
}

// ReadKnowledge implements ledger.KnowledgeStore.
func (s *Store) ReadKnowledge(_ context.Context, kind ledger.KnowledgeKind, id string) (ledger.KnowledgeEntry, error) {
	name, err := knowledgeDir(kind)
	if err != nil {
		return ledger.KnowledgeEntry{}, err
	}
	if !ledger.ValidKnowledgeID(id) {
		return ledger.KnowledgeEntry{}, fmt.Errorf("%s id %q: %w", kind, id, ledger.ErrKnowledgeNotFound)
	}
	k, err := s.readKnowledgeTip()
	if err != nil {
		return ledger.KnowledgeEntry{}, err
	}
	dir, err := s.knowledgeFolder(k, name)
	if err != nil {
		return ledger.KnowledgeEntry{}, err
	}
	e, ok := dir.Get(id + ".md")
	if !ok || e.Dir {
		return ledger.KnowledgeEntry{}, fmt.Errorf("%s %q: %w", kind, id, ledger.ErrKnowledgeNotFound)
	}
	data, err := s.readBlob(e.ID)
	if err != nil {
		return ledger.KnowledgeEntry{}, fmt.Errorf("%s/%s: %w", name, e.Name, err)
	}
	return knowledgeEntry(kind, id, e.ID, data, k.when), nil
}

// knowledgeEntry decodes a file. The file name gives the id (an id in the
// front matter that disagrees is ignored: the name is what addresses the
// entry); missing dates fall back to the zone's latest commit, the latest
// the file can have changed.
func knowledgeEntry(kind ledger.KnowledgeKind, id string, blob hash, data []byte, fallback time.Time) ledger.KnowledgeEntry {
	e := parseKnowledge(data)
	e.Kind, e.ID, e.Version = kind, id, ledger.KnowledgeVersion(blob.String())
	if e.CreatedAt.IsZero() {
		e.CreatedAt = e.UpdatedAt
	}
	if e.UpdatedAt.IsZero() {
		e.UpdatedAt = e.CreatedAt
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt, e.UpdatedAt = fallback, fallback
	}
	if kind == ledger.KindNote {
		e.Description, e.Tags, e.DerivedFromSessions, e.CreatedBy = "", nil, nil, ""
	}
	return e
}

// WriteKnowledge implements ledger.KnowledgeStore: one commit on
// refs/heads/knowledge, moved by compare-and-swap from the tip it was built
// on. It is one attempt: a write whose own entry is not at w.Expected is
// refused with ErrKnowledgeChanged; one that lost the swap because another
// writer committed first (possibly to another entry) gets ErrConflict, and
// the ledger's one retry loop builds it again on the new tip. Retrying here
// too would nest two loops (64 attempts inside each of the ledger's 128).
func (s *Store) WriteKnowledge(ctx context.Context, w ledger.KnowledgeWrite) (ledger.KnowledgeVersion, error) {
	e := w.Entry
	dirName, err := knowledgeDir(e.Kind)
	if err != nil {
		return "", err
	}
	if !ledger.ValidKnowledgeID(e.ID) {
		return "", fmt.Errorf("%s id %q: expected ^[a-z0-9-]+$", e.Kind, e.ID)
	}
	fileName := e.ID + ".md"
	var file []byte
	var blob hash
	if !w.Delete {
		file = encodeKnowledge(e)
		blob = object.HashObject(typeBlob, file)
	}
	when := w.When
	if when.IsZero() {
		when = time.Now()
	}
	err = func() error {
		k, err := s.readKnowledgeTip()
		if err != nil {
			return err
		}
		dir, err := s.knowledgeFolder(k, dirName)
		if err != nil {
			return err
		}
		cur, exists := dir.Get(fileName)
		var curVersion ledger.KnowledgeVersion
		if exists {
			curVersion = ledger.KnowledgeVersion(cur.ID.String())
		}
		if curVersion != w.Expected {
			return fmt.Errorf("%s %s is at version %q, not %q: %w", e.Kind, e.ID, curVersion, w.Expected, ledger.ErrKnowledgeChanged)
		}
		if w.Delete && !exists {
			return fmt.Errorf("%s %q: %w", e.Kind, e.ID, ledger.ErrKnowledgeNotFound)
		}

		b := &batch{}
		if w.Delete {
			removeEntry(dir, fileName)
		} else {
			b.Objects = append(b.Objects, logObject{ID: blob, Type: typeBlob, Data: file})
			dir.Set(object.TreeEntry{Name: fileName, ID: blob})
		}
		// Git keeps no empty folders: the last note deleted takes notes/
		// with it.
		if len(dir.Entries) == 0 {
			removeEntry(k.root, dirName)
		} else {
			k.root.Set(object.TreeEntry{Name: dirName, Dir: true, ID: addTree(b, dir)})
		}
		commitRoot(b, s.lay.knowledge(), k.tip, k.root, knowledgeMessage(w, exists), w.Author, when)
		return s.be.Apply(ctx, b)
	}()
	if errors.Is(err, errConflict) {
		return "", fmt.Errorf("%s moved while the write was built: %w", s.lay.knowledge(), ledger.ErrConflict)
	}
	if err != nil || w.Delete {
		return "", err
	}
	return ledger.KnowledgeVersion(blob.String()), nil
}

func removeEntry(t *object.Tree, name string) {
	if i, ok := t.Find(name); ok {
		t.Entries = slices.Delete(t.Entries, i, i+1)
	}
}

// knowledgeMessage is "Create pattern <id>: <title>" (or Update, Delete),
// the description as body, and the Thoughtbox-Knowledge trailer.
func knowledgeMessage(w ledger.KnowledgeWrite, existed bool) string {
	e := w.Entry
	verb := "Create"
	switch {
	case w.Delete:
		verb = "Delete"
	case existed:
		verb = "Update"
	}
	subject := fmt.Sprintf("%s %s %s", verb, e.Kind, e.ID)
	if t := firstLine(e.Title, 72); t != "" {
		subject += ": " + t
	}
	var m strings.Builder
	m.WriteString(firstLine(subject, 100) + "\n")
	if d := strings.TrimSpace(e.Description); d != "" && !w.Delete {
		m.WriteString("\n" + d + "\n")
	}
	fmt.Fprintf(&m, "\nThoughtbox-Knowledge: %s/%s\n", e.Kind, e.ID)
	return m.String()
}

// committerTime reads the committer date of a raw commit; zero if absent.
func committerTime(raw []byte) time.Time {
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		if len(line) == 0 {
			break // end of the header
		}
		rest, ok := bytes.CutPrefix(line, []byte("committer "))
		if !ok {
			continue
		}
		f := strings.Fields(string(rest))
		if len(f) < 2 {
			return time.Time{}
		}
		sec, err := strconv.ParseInt(f[len(f)-2], 10, 64)
		if err != nil {
			return time.Time{}
		}
		return time.Unix(sec, 0).UTC()
	}
	return time.Time{}
}

// encodeKnowledge renders an entry as its file:
//
//	---
//	id: self-test-bisect-a-regression
//	title: "Self-test: bisect a regression"
//	description: Find the commit that broke a test by halving the range
//	tags: [self-test, debugging]
//	derivedFromSessions: []
//	createdBy: claude-code 1.0
//	createdAt: 2026-11-22T10:00:00Z
//	updatedAt: 2026-11-22T10:00:00Z
//	---
//
//	<content>
//
// The front matter is YAML that any YAML reader accepts: a value is written
// plain when that is unambiguous and otherwise as a JSON string (a YAML
// double-quoted scalar). A blank line follows the front matter and a
// newline ends the file; parseKnowledge removes exactly those, so the
// content comes back byte for byte. Notes have only id, title and dates.
func encodeKnowledge(e ledger.KnowledgeEntry) []byte {
	fields := []frontmatter.Field{{Key: "id", Value: e.ID}, {Key: "title", Value: e.Title}}
	if e.Kind == ledger.KindPattern {
		fields = append(fields,
			frontmatter.Field{Key: "description", Value: e.Description},
			frontmatter.Field{Key: "tags", List: e.Tags, IsList: true},
			frontmatter.Field{Key: "derivedFromSessions", List: e.DerivedFromSessions, IsList: true})
		if e.CreatedBy != "" {
			fields = append(fields, frontmatter.Field{Key: "createdBy", Value: e.CreatedBy})
		}
	}
	fields = append(fields,
		frontmatter.Field{Key: "createdAt", Value: e.CreatedAt.UTC().Format(time.RFC3339Nano), Raw: true},
		frontmatter.Field{Key: "updatedAt", Value: e.UpdatedAt.UTC().Format(time.RFC3339Nano), Raw: true})
	return frontmatter.Encode(fields, e.Content)
}

// parseKnowledge reads a knowledge file leniently, because people edit them
// by hand: front matter between "---" lines is optional (without it the
// whole file is content); keys may be written createdAt, created_at or
// created-at; values may be plain, 'single' or "double" quoted, lists
// [a, b] or "- item" lines or a comma-separated string, and text blocks
// "|" or ">"; unknown keys and lines it cannot read are ignored, and an
// unreadable date is left zero. It never fails.
func parseKnowledge(data []byte) ledger.KnowledgeEntry {
	doc := frontmatter.Read(data)
	e := ledger.KnowledgeEntry{Content: doc.Content}
	for _, kv := range doc.Values {
		switch frontmatter.NormalizeKey(kv.Key) {
		case "title":
			e.Title = kv.Scalar()
		case "description":
			e.Description = kv.Scalar()
		case "tags":
			e.Tags = kv.List()
		case "derivedfromsessions":
			e.DerivedFromSessions = kv.List()
		case "createdby":
			e.CreatedBy = kv.Scalar()
		case "createdat":
			e.CreatedAt = frontmatter.ParseDate(kv.Scalar())
		case "updatedat":
			e.UpdatedAt = frontmatter.ParseDate(kv.Scalar())
		}
	}
	return e
}

// MergeKnowledge joins two histories of the knowledge zone that went apart
// (a pull's, whose remote names the merge commit): a file changed on one
// side only takes that side's version; a file changed on both sides
// differently is a conflict, and then nothing is merged and the conflicting
// paths are returned. On success it returns the batch of the merge commit
// (parents: ours, then theirs) and the objects it needs, with no ref moves
// (the caller adds the one it makes), and the commit's id. It writes
// nothing.
func (s *Store) MergeKnowledge(ours, theirs hash, remote string) (*batch, hash, []string, error) {
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

// checkIncomingKnowledge checks the knowledge zone's incoming tip: only
// patterns/ and notes/ folders of .md entries, each valid UTF-8 with its
// front matter and content no longer than the knowledge service accepts
// (ledger.MaxKnowledgeContentBytes, which the thought limit does not
// change).
func (s *Store) checkIncomingKnowledge(tip hash, maxBytes int) ([]string, error) {
	var problems []string
	cm, err := s.ReadCommit(tip)
	if err != nil {
		return []string{fmt.Sprintf("commit %s: %v", tip, err)}, nil
	}
	root, _, err := s.ReadTree(cm.Tree)
	if err != nil {
		return []string{fmt.Sprintf("the root tree of commit %s: %v", tip, err)}, nil
	}
	for _, e := range root.Entries {
		if !e.Dir || (e.Name != "patterns" && e.Name != "notes") {
			problems = append(problems, fmt.Sprintf("%s: expected only the folders patterns/ and notes/", e.Name))
			continue
		}
		dir, _, err := s.ReadTree(e.ID)
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
			t, data, err := s.ReadObject(f.ID)
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("%s: %v", path, err))
			case t != typeBlob:
				problems = append(problems, fmt.Sprintf("%s: a %s, not a file", path, t))
			case int64(len(data)) > MaxIncomingFileBytes(maxBytes):
				problems = append(problems, fmt.Sprintf("%s is %d bytes: more than %d, the most a file may hold", path, len(data), MaxIncomingFileBytes(maxBytes)))
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
