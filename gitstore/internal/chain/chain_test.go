package chain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/manifest"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
)

var folders = Folders{Area: "sessions", Branches: "branches"}

// objects is a repository in a map: what the builds logged, every edit
// applied to its base as the store's backends do.
type objects map[object.Hash]stored

type stored struct {
	t    object.Type
	data []byte
}

var errMissing = errors.New("no such object")

func (o objects) ReadObject(_ context.Context, id object.Hash) (object.Type, []byte, error) {
	s, ok := o[id]
	if !ok {
		return 0, nil, fmt.Errorf("object %s: %w", id, errMissing)
	}
	return s.t, bytes.Clone(s.data), nil
}

// apply stores b's objects, checking each one's id against its content.
func (o objects) apply(t *testing.T, b *wal.Batch) {
	t.Helper()
	for _, lo := range b.Objects {
		data := lo.Data
		if lo.Base != object.ZeroHash {
			var err error
			if data, err = lo.Edit.Apply(o[lo.Base].data); err != nil {
				t.Fatalf("object %s: edit of %s: %v", lo.ID, lo.Base, err)
			}
		}
		if id := object.HashObject(lo.Type, data); id != lo.ID {
			t.Fatalf("object logged as %s hashes to %s", lo.ID, id)
		}
		o[lo.ID] = stored{lo.Type, bytes.Clone(data)}
	}
}

// commit builds on st as the store does (the commit of the root tree on
// parent), stores the objects and settles st at the commit.
func (o objects) commit(t *testing.T, st *State, file []byte, name string, parent object.Hash) object.Hash {
	t.Helper()
	b, tree := st.Build(file, name)
	when := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	c := &object.Commit{Tree: tree, Author: object.Signature{Name: "a", Email: "a@b", When: when},
		Committer: object.Signature{Name: "a", Email: "a@b", When: when}, Message: "m\n"}
	if parent != object.ZeroHash {
		c.Parents = []object.Hash{parent}
	}
	data := c.Encode()
	id := object.HashObject(object.TypeCommit, data)
	b.Objects = append(b.Objects, wal.Object{ID: id, Type: object.TypeCommit, Data: data})
	o.apply(t, b)
	st.Settle(id)
	return id
}

// treeAt returns the tree at path (folders separated by "/") in commit c.
func (o objects) treeAt(t *testing.T, c object.Hash, path string) *object.Tree {
	t.Helper()
	pc, err := object.ParseCommit(o[c].data)
	if err != nil {
		t.Fatal(err)
	}
	id := pc.Tree
	for _, name := range strings.Split(path, "/") {
		tr, err := object.ParseTree(o[id].data)
		if err != nil {
			t.Fatal(err)
		}
		e, ok := tr.Get(name)
		if !ok {
			t.Fatalf("commit %s has no %s", c, path)
		}
		id = e.ID
	}
	tr, err := object.ParseTree(o[id].data)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// A state kept in memory and one read back from its commit build the same
// next commit, on the main chain and on a branch forked from it, in a
// partition folder or none; the manifest lists each file where it was
// added.
func TestReadBuildsWhatMemoryBuilds(t *testing.T) {
	for _, partition := range []string{"", "2026-11"} {
		t.Run("partition="+partition, func(t *testing.T) {
			o := objects{}
			const id = "s1"
			mem := New(manifest.New(id), folders, partition)
			tip := o.commit(t, mem, nil, "", object.ZeroHash)
			for n := 1; n <= 3; n++ {
				name := fmt.Sprintf("%03d.json", n)
				mem.AddFile("", name, false)
				tip = o.commit(t, mem, []byte(fmt.Sprintf("{\"n\":%d}\n", n)), name, tip)
			}
			read, err := Read(context.Background(), o, folders, tip, id, "")
			if err != nil {
				t.Fatal(err)
			}
			if !read.At(tip) || read.Manifest().ID != id {
				t.Fatalf("read state at %v, manifest of %q; want valid at %s, of %q", read.tip, read.Manifest().ID, tip, id)
			}
			for _, st := range []*State{mem, read} {
				st.AddFile("", "004.json", false)
			}
			memTip := o.commit(t, mem, []byte("{\"n\":4}\n"), "004.json", tip)
			readTip := o.commit(t, read, []byte("{\"n\":4}\n"), "004.json", tip)
			if memTip != readTip {
				t.Fatalf("the state read back built commit %s, the one in memory %s", readTip, memTip)
			}

			fork, err := Read(context.Background(), o, folders, memTip, id, "alt")
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := fork.Entry("001.json"); ok {
				t.Fatalf("a new branch's folder already holds main's 001.json")
			}
			fork.AddFile("alt", "005.json", true)
			branchTip := o.commit(t, fork, []byte("{\"n\":5}\n"), "005.json", memTip)
			folder := id
			if partition != "" {
				folder = partition + "/" + id
			}
			if _, ok := o.treeAt(t, branchTip, "sessions/"+folder+"/branches/alt").Get("005.json"); !ok {
				t.Fatalf("the branch's file is not in its folder")
			}
			if got := fork.BranchFiles("alt"); len(got) != 1 || got[0] != "005.json" {
				t.Fatalf("branch alt lists %v, want [005.json]", got)
			}
			m := read.Manifest()
			if len(m.ThoughtFiles) != 4 || m.ThoughtFiles[3] != "004.json" {
				t.Fatalf("main lists %v, want 001 to 004", m.ThoughtFiles)
			}
		})
	}
}

// A commit whose tree lacks the session's folder or its manifest is
// refused with an error naming what is missing, and a read error of the
// repository reaches the caller.
func TestReadRefusesWhatIsMissing(t *testing.T) {
	o := objects{}
	st := New(manifest.New("s1"), folders, "")
	tip := o.commit(t, st, nil, "", object.ZeroHash)
	if _, err := Read(context.Background(), o, folders, tip, "s2", ""); err == nil || !strings.Contains(err.Error(), `folder "s2" missing`) {
		t.Fatalf("reading another session's chain: %v, want its folder missing", err)
	}
	if _, err := Read(context.Background(), o, folders, object.HashObject(object.TypeBlob, []byte("x")), "s1", ""); !errors.Is(err, errMissing) {
		t.Fatalf("reading a missing commit: %v, want the repository's error", err)
	}

	// A root holding sessions/s1/ with nothing in it.
	rid := o.tree(&object.Tree{})
	for _, name := range []string{"s1", "sessions"} {
		parent := &object.Tree{}
		parent.Set(object.TreeEntry{Name: name, Dir: true, ID: rid})
		rid = o.tree(parent)
	}
	if _, err := Read(context.Background(), o, folders, o.commitOf(rid), "s1", ""); err == nil || !strings.Contains(err.Error(), "has no manifest.json") {
		t.Fatalf("reading a folder without a manifest: %v, want it named", err)
	}
}

// tree stores t and returns its id.
func (o objects) tree(t *object.Tree) object.Hash {
	data := t.Encode()
	id := object.HashObject(object.TypeTree, data)
	o[id] = stored{object.TypeTree, data}
	return id
}

// commitOf stores a commit of tree and returns its id.
func (o objects) commitOf(tree object.Hash) object.Hash {
	when := time.Unix(0, 0).UTC()
	c := &object.Commit{Tree: tree, Author: object.Signature{Name: "a", Email: "a@b", When: when}, Committer: object.Signature{Name: "a", Email: "a@b", When: when}, Message: "m\n"}
	data := c.Encode()
	id := object.HashObject(object.TypeCommit, data)
	o[id] = stored{object.TypeCommit, data}
	return id
}
