package gitstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

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
	for _, name := range []string{"notebooks", id} {
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
		root.Set(object.TreeEntry{Name: "notebooks", Dir: true, ID: addTree(b, nb)})
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
