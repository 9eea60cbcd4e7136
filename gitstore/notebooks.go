package gitstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// Each notebook lives on its own ref, refs/heads/notebooks/<id>, whose
// tree holds only notebooks/<id>/: the notebook's history is then its
// ref's log, two agents working different notebooks never contend for a
// ref, and push and pull move a notebook as a unit like a session. What
// the folder holds (notebook.json, cells/NN-<file>) is the notebook
// package's business; the store keeps whatever files it is given, one
// commit per write.

// notebooksDir is the folder of a notebook ref's tree that holds the
// notebook's own folder.
const notebooksDir = "notebooks"

// maxNotebookIDLen bounds a notebook id, and so its ref's file name.
const maxNotebookIDLen = 64

// validNotebookID is the store's own rule for the id in a ref name: the
// notebook package's rule (lowercase letters, digits and '-', 1 to 64),
// re-checked here because a pulled ref name becomes a file name.
func validNotebookID(id string) error {
	if id == "" || len(id) > maxNotebookIDLen {
		return fmt.Errorf("notebook id %q: expected 1 to %d characters", id, maxNotebookIDLen)
	}
	for _, r := range id {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return fmt.Errorf("notebook id %q: expected only lowercase letters, digits and '-'", id)
		}
	}
	return nil
}

// validNotebookPath checks a file name of a notebook's folder: a relative
// path of non-empty components, none of them ".", ".." or ".git" (which
// git fsck refuses in a tree), and no NUL or backslash.
func validNotebookPath(p string) error {
	if p == "" {
		return errors.New("empty file name")
	}
	if strings.ContainsAny(p, "\x00\\") {
		return fmt.Errorf("file %q: a NUL or backslash in the name", p)
	}
	for _, part := range strings.Split(p, "/") {
		switch {
		case part == "":
			return fmt.Errorf("file %q: expected a relative path without empty components", p)
		case part == "." || part == "..":
			return fmt.Errorf("file %q: expected no . or .. components", p)
		case strings.EqualFold(part, ".git"):
			return fmt.Errorf("file %q: .git is not allowed in a tree", p)
		}
	}
	return nil
}

// ListNotebooks implements ledger.NotebookStore: one head per notebook
// ref, by id. Refs whose names are not ours (written by hand) are skipped.
func (s *Store) ListNotebooks(ctx context.Context) ([]ledger.NotebookHead, error) {
	refs, err := s.be.ListRefs(ctx, s.lay.notebooks())
	if err != nil {
		return nil, err
	}
	out := make([]ledger.NotebookHead, 0, len(refs))
	for ref, tip := range refs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id := s.lay.notebookOfRef(ref)
		if id == "" {
			continue
		}
		raw, err := s.readTyped(tip, typeCommit)
		if err != nil {
			return nil, fmt.Errorf("%s at %s: %w", ref, tip, err)
		}
		out = append(out, ledger.NotebookHead{ID: id, Tip: ledger.CommitID(tip.String()), UpdatedAt: committerTime(raw)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// ReadNotebook implements ledger.NotebookStore.
func (s *Store) ReadNotebook(ctx context.Context, id string) (map[string][]byte, ledger.CommitID, error) {
	if err := validNotebookID(id); err != nil {
		return nil, "", fmt.Errorf("%v: %w", err, ledger.ErrNotebookNotFound)
	}
	tip, err := s.be.ReadRef(ctx, s.lay.notebookRef(id))
	if err != nil {
		return nil, "", err
	}
	if tip == zeroHash {
		return nil, "", fmt.Errorf("notebook %q: %w", id, ledger.ErrNotebookNotFound)
	}
	folder, err := s.notebookFolder(tip, id)
	if err != nil {
		return nil, "", err
	}
	files := map[string][]byte{}
	if folder != nil {
		if err := s.readFolderFiles(ctx, folder, "", files); err != nil {
			return nil, "", fmt.Errorf("notebook %s at %s: %w", id, tip, err)
		}
	}
	return files, ledger.CommitID(tip.String()), nil
}

// notebookFolder returns the tree of notebooks/<id>/ at a commit, nil if
// the commit has none (every file was removed).
func (s *Store) notebookFolder(tip hash, id string) (*object.Tree, error) {
	c, err := s.readCommit(tip)
	if err != nil {
		return nil, fmt.Errorf("%s at %s: %w", s.lay.notebookRef(id), tip, err)
	}
	t, _, err := s.readTreeBytes(c.Tree)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{notebooksDir, id} {
		e, ok := t.Get(name)
		if !ok || !e.Dir {
			return nil, nil
		}
		if t, _, err = s.readTreeBytes(e.ID); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (s *Store) readFolderFiles(ctx context.Context, t *object.Tree, prefix string, out map[string][]byte) error {
	for _, e := range t.Entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.Dir {
			sub, _, err := s.readTreeBytes(e.ID)
			if err != nil {
				return fmt.Errorf("%s%s/: %w", prefix, e.Name, err)
			}
			if err := s.readFolderFiles(ctx, sub, prefix+e.Name+"/", out); err != nil {
				return err
			}
			continue
		}
		data, err := s.readBlob(e.ID)
		if err != nil {
			return fmt.Errorf("%s%s: %w", prefix, e.Name, err)
		}
		out[prefix+e.Name] = data
	}
	return nil
}

// WriteNotebook implements ledger.NotebookStore: the folder is built from
// w.Files alone (whatever the previous commit held is not carried over),
// committed on the notebook's ref and published by compare-and-swap
// through the write-ahead log, like a thought. Unlike the knowledge zone
// it does not retry a lost swap: the caller computed Files from
// ExpectedTip, so a moved ref means its change is stale.
func (s *Store) WriteNotebook(ctx context.Context, w ledger.NotebookWrite) (ledger.CommitID, error) {
	if err := validNotebookID(w.ID); err != nil {
		return "", err
	}
	var expected hash
	if w.ExpectedTip != "" {
		h, err := object.ParseHash(string(w.ExpectedTip))
		if err != nil {
			return "", fmt.Errorf("notebook %s: expected tip %q: %w", w.ID, w.ExpectedTip, err)
		}
		expected = h
	}
	ref := s.lay.notebookRef(w.ID)
	cur, err := s.be.ReadRef(ctx, ref)
	if err != nil {
		return "", err
	}
	if cur != expected {
		return "", notebookMoved(w.ID, cur, expected)
	}

	b := &batch{}
	folder, err := folderTree(b, w.Files)
	if err != nil {
		return "", fmt.Errorf("notebook %s: %w", w.ID, err)
	}
	root := &object.Tree{}
	if folder != zeroHash {
		nb := &object.Tree{}
		nb.Set(object.TreeEntry{Name: w.ID, Dir: true, ID: folder})
		root.Set(object.TreeEntry{Name: notebooksDir, Dir: true, ID: addTree(b, nb)})
	}
	when := w.When
	if when.IsZero() {
		when = time.Now()
	}
	message := w.Message
	if strings.TrimSpace(message) == "" {
		message = "Update notebook " + w.ID
	}
	cid := commitRoot(b, ref, cur, root, notebookMessage(w.ID, message), w.Author, when)
	err = s.be.Apply(ctx, b)
	if errors.Is(err, errConflict) {
		now, rerr := s.be.ReadRef(ctx, ref)
		if rerr != nil {
			return "", rerr
		}
		return "", notebookMoved(w.ID, now, expected)
	}
	if err != nil {
		return "", err
	}
	return ledger.CommitID(cid.String()), nil
}

func notebookMoved(id string, cur, expected hash) error {
	switch {
	case expected == zeroHash:
		return fmt.Errorf("notebook %s already exists (at %s): %w", id, cur, ledger.ErrConflict)
	case cur == zeroHash:
		return fmt.Errorf("notebook %s: %w", id, ledger.ErrNotebookNotFound)
	}
	return fmt.Errorf("notebook %s is at %s, not %s: another writer changed it: %w", id, cur, expected, ledger.ErrConflict)
}

// notebookMessage ends the caller's message with a Thoughtbox-Notebook
// trailer, so that a commit pulled or cherry-picked elsewhere still names
// its notebook.
func notebookMessage(id, message string) string {
	return strings.TrimRight(message, "\n") + "\n\nThoughtbox-Notebook: " + id + "\n"
}

// folderTree logs the blobs and trees of a folder given as path -> content
// and returns the folder's tree id (zeroHash for no files: Git keeps no
// empty folders).
func folderTree(b *batch, files map[string][]byte) (hash, error) {
	if len(files) == 0 {
		return zeroHash, nil
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		if err := validNotebookPath(p); err != nil {
			return zeroHash, err
		}
		paths = append(paths, p)
	}
	sort.Strings(paths)
	// A folder and a file of the same name cannot both be in a tree.
	for _, p := range paths {
		for i := strings.IndexByte(p, '/'); i >= 0; i = nextSlash(p, i) {
			if _, ok := files[p[:i]]; ok {
				return zeroHash, fmt.Errorf("file %q: %s is also a file", p, p[:i])
			}
		}
	}
	return buildFolder(b, files, paths, "", map[hash]bool{}), nil
}

// buildFolder builds the tree of the paths (sorted, all under prefix).
func buildFolder(b *batch, files map[string][]byte, paths []string, prefix string, logged map[hash]bool) hash {
	t := &object.Tree{}
	for i := 0; i < len(paths); {
		rest := strings.TrimPrefix(paths[i], prefix)
		name, _, isDir := strings.Cut(rest, "/")
		if !isDir {
			data := files[paths[i]]
			id := object.HashObject(typeBlob, data)
			if !logged[id] {
				logged[id] = true
				b.Objects = append(b.Objects, logObject{ID: id, Type: typeBlob, Data: data})
			}
			t.Set(object.TreeEntry{Name: name, ID: id})
			i++
			continue
		}
		sub := prefix + name + "/"
		j := i
		for j < len(paths) && strings.HasPrefix(paths[j], sub) {
			j++
		}
		t.Set(object.TreeEntry{Name: name, Dir: true, ID: buildFolder(b, files, paths[i:j], sub, logged)})
		i = j
	}
	return addTree(b, t)
}

// nextSlash is the index of the next '/' in p after i, or -1.
func nextSlash(p string, i int) int {
	j := strings.IndexByte(p[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// DeleteNotebook implements ledger.NotebookStore: one batch through the
// log removes the notebook's ref and points deletedNotebookRef at a record
// commit (the notebook's last tree, first parent its tip, second parent
// the record it replaces), so `git log` of the record reads the whole
// notebook and a later notebook of the same id can be deleted too.
// Deletion is local: a remote keeps the notebook.
func (s *Store) DeleteNotebook(ctx context.Context, id string, expectedTip ledger.CommitID, author ledger.Author, at time.Time) (ledger.DeletedNotebook, error) {
	if err := validNotebookID(id); err != nil {
		return ledger.DeletedNotebook{}, fmt.Errorf("%v: %w", err, ledger.ErrNotebookNotFound)
	}
	ref, kept := s.lay.notebookRef(id), s.lay.deletedNotebookRef(id)
	tip, err := s.be.ReadRef(ctx, ref)
	if err != nil {
		return ledger.DeletedNotebook{}, err
	}
	if tip == zeroHash {
		return ledger.DeletedNotebook{}, fmt.Errorf("notebook %q: %w", id, ledger.ErrNotebookNotFound)
	}
	if expectedTip != "" && ledger.CommitID(tip.String()) != expectedTip {
		return ledger.DeletedNotebook{}, fmt.Errorf("notebook %s is at %s, not %s: another writer changed it: %w", id, tip, expectedTip, ledger.ErrConflict)
	}
	prev, err := s.be.ReadRef(ctx, kept)
	if err != nil {
		return ledger.DeletedNotebook{}, err
	}
	c, err := s.readCommit(tip)
	if err != nil {
		return ledger.DeletedNotebook{}, fmt.Errorf("%s at %s: %w", ref, tip, err)
	}
	msg := fmt.Sprintf("Delete notebook %s\n\n%s %s\n\nThoughtbox-Notebook: %s\n%s: %s\n%s: %s\n", id, tip, ref,
		id, trailerDeleted, at.UTC().Format(time.RFC3339), trailerDeletedBy, firstLine(author.Name, 100))
	b := &batch{}
	rid := addCommit(b, commitSpec{tree: c.Tree, parents: []hash{tip, prev}, message: msg, author: &author, when: at})
	b.Updates = append(b.Updates, refUpdate{Name: ref, Old: tip}, refUpdate{Name: kept, Old: prev, New: rid})
	if err := s.be.Apply(ctx, b); err != nil {
		if errors.Is(err, errConflict) {
			return ledger.DeletedNotebook{}, fmt.Errorf("notebook %s changed while it was being deleted: %w", id, ledger.ErrConflict)
		}
		return ledger.DeletedNotebook{}, err
	}
	return ledger.DeletedNotebook{ID: id, Ref: ref, Tip: ledger.CommitID(tip.String()), Kept: kept}, nil
}

// checkIncomingNotebookRef checks what a pull would move of notebook id:
// the tip's tree, then every commit it brings.
func (s *Store) checkIncomingNotebookRef(ctx context.Context, id string, moving map[string]hash, maxBytes int) ([]string, error) {
	ref := s.lay.notebookRef(id)
	if problems := s.checkIncomingNotebook(id, moving[ref], maxBytes); len(problems) > 0 {
		return problems, nil
	}
	local, err := s.ReadRef(ref)
	if err != nil {
		return nil, err
	}
	return s.checkNotebookHistory(ctx, moving[ref], local, maxBytes)
}

// checkIncomingNotebook checks a notebook's incoming tip as
// checkSessionLayout does a session's: the tree holds notebooks/<id>/ and
// nothing else (another notebook's folder would make it appear twice),
// with a notebook.json that is a JSON object, and every file is UTF-8 text
// within the size limit.
func (s *Store) checkIncomingNotebook(id string, tip hash, maxBytes int) []string {
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	cm, err := s.ReadCommit(tip)
	if err != nil {
		return []string{fmt.Sprintf("commit %s: %v", tip, err)}
	}
	root, _, err := s.ReadTree(cm.Tree)
	if err != nil {
		return []string{fmt.Sprintf("the root tree of commit %s: %v", tip, err)}
	}
	want := notebooksDir + "/" + id + "/"
	for _, e := range root.Entries {
		if e.Name != notebooksDir || !e.Dir {
			fail("%s is outside %s: a notebook's ref holds only its own folder", e.Name, want)
		}
	}
	ne, ok := root.Get(notebooksDir)
	if !ok || !ne.Dir {
		return append(problems, fmt.Sprintf("commit %s has no folder %s", tip, want))
	}
	nbs, _, err := s.ReadTree(ne.ID)
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
	folder, _, err := s.ReadTree(fe.ID)
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
				sub, _, err := s.ReadTree(e.ID)
				if err != nil {
					fail("%s/: %v", path, err)
					continue
				}
				walk(sub, path+"/", depth+1)
				continue
			}
			t, data, err := s.ReadObject(e.ID)
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
		t, _, err := s.ReadTree(id)
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
			size, err := s.BlobSize(e.ID)
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
		c, err := s.ReadCommit(id)
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
