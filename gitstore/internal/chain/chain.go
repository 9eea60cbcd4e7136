// Package chain is a chain's state: the trees from the root down to the
// folder a session's thoughts are added to, and its manifest, at the
// chain's tip, kept in memory so that a thought is committed without
// reading its folder back; how a thought's objects are built from it; and
// how it is read back from a commit when it is missing or stale.
//
// It knows a session's folder only by the names it is handed (Folders)
// and reads the repository only through Objects; the store adds the
// commit (Build returns the root tree) and moves the ref.
package chain

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/manifest"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
)

// Objects reads an object of the repository by id: its type and content.
type Objects interface {
	ReadObject(ctx context.Context, id object.Hash) (object.Type, []byte, error)
}

// Folders names the trees between the root and a session's folder that
// the layout spells: the folder of the sessions' area (below it, a
// partition folder or none, then the session's), and the folder of a
// session's branches (below it, one folder a branch).
type Folders struct {
	Area, Branches string
}

// State is the in-memory copy of one chain's trees and manifest at its
// tip, so that a thought is committed without reading the folder back.
//
// Its holder locks it (Lock, Unlock) for as long as it reads or builds on
// it: a build changes it in place.
type State struct {
	sync.Mutex
	valid bool
	tip   object.Hash
	// path holds the trees from the root down to the folder thoughts are
	// added to: root, the sessions' area, [partition], session folder, and
	// on a branch also the branches' folder and the branch's.
	path      []*pathTree
	folder    int // index of the session folder in path
	manifest  *manifest.Manifest
	manBytes  []byte
	manID     object.Hash
	partition string
	// manPrivate says manBytes is ours alone (not the log's data nor a
	// read cache's), so that when it is superseded it can be reused;
	// manSpare is such a superseded buffer. Reusing the two large buffers
	// of a long session (its folder tree and manifest) instead of
	// allocating them anew for every thought keeps garbage, and so the
	// server's memory, down.
	manPrivate bool
	manSpare   []byte
}

type pathTree struct {
	name  string // name in its parent; "" for the root
	t     *object.Tree
	bytes []byte
	id    object.Hash
	// private and spare: as manPrivate and manSpare, for the tree.
	private bool
	spare   []byte
}

// New is the state of a session that has no commit yet: its manifest m
// and the empty trees from the root down to its folder (named m.ID).
func New(m *manifest.Manifest, f Folders, partition string) *State {
	st := &State{manifest: m, partition: partition}
	st.path = []*pathTree{{t: &object.Tree{}}, {name: f.Area, t: &object.Tree{}}}
	if partition != "" {
		st.path = append(st.path, &pathTree{name: partition, t: &object.Tree{}})
	}
	st.path = append(st.path, &pathTree{name: m.ID, t: &object.Tree{}})
	st.folder = len(st.path) - 1
	return st
}

// Adopt replaces st's state with src's — every field but the lock: a
// stale manPrivate would let the next build reuse a buffer that came from
// a read (possibly the pack reader's shared cache).
func (st *State) Adopt(src *State) {
	st.valid, st.tip, st.path, st.folder = src.valid, src.tip, src.path, src.folder
	st.manifest, st.manBytes, st.manID, st.partition = src.manifest, src.manBytes, src.manID, src.partition
	st.manPrivate, st.manSpare = src.manPrivate, src.manSpare
}

// At reports whether the state is valid and that of commit tip.
func (st *State) At(tip object.Hash) bool { return st.valid && st.tip == tip }

// Invalidate marks the state as no commit's: until a batch built on it is
// applied (a build changes it in place), or when its ref moved elsewhere.
func (st *State) Invalidate() { st.valid = false }

// Settle records that the state is that of commit tip, the commit built
// on it, now applied.
func (st *State) Settle(tip object.Hash) { st.tip, st.valid = tip, true }

// Entry looks name up in the folder thoughts are added to (the session's
// folder, or on a branch the branch's).
func (st *State) Entry(name string) (object.TreeEntry, bool) {
	return st.path[len(st.path)-1].t.Get(name)
}

// Manifest is the chain's manifest, which the next build writes; the
// holder of the lock may change it.
func (st *State) Manifest() *manifest.Manifest { return st.manifest }

// AddFile lists a thought's file in the manifest: on the main chain
// (branch ""), or on branch, whose manifest keeps only its own list when
// fresh (its first thought: the state was read from main's).
func (st *State) AddFile(branch, name string, fresh bool) {
	m := st.manifest
	if branch == "" {
		m.ThoughtFiles = append(m.ThoughtFiles, name)
		return
	}
	if fresh {
		m.KeepOnlyBranch(branch)
	}
	m.BranchFiles[branch] = append(m.BranchFiles[branch], name)
}

// BranchFiles returns a copy of branch b's file list in the manifest.
func (st *State) BranchFiles(b string) []string {
	return slices.Clone(st.manifest.BranchFiles[b])
}

// Build adds file (if any) to the deepest tree of the path, rewrites the
// manifest and every tree up to the root, and returns the objects and the
// root tree's id. The state is updated in place; the caller drops it if
// the batch is not applied.
func (st *State) Build(file []byte, fileName string) (*wal.Batch, object.Hash) {
	// Room for every object of a thought (blob, manifest, each tree of the
	// path, and the commit the caller adds): growing the slice copied it
	// three times.
	b := &wal.Batch{Objects: make([]wal.Object, 0, len(st.path)+3)}
	if file != nil {
		id := object.HashObject(object.TypeBlob, file)
		b.Objects = append(b.Objects, wal.Object{ID: id, Type: object.TypeBlob, Data: file})
		st.path[len(st.path)-1].t.Set(object.TreeEntry{Name: fileName, ID: id})
	}
	mb := st.manifest.EncodeInto(st.manSpare)
	mid := object.HashObject(object.TypeBlob, mb)
	if mid == st.manID {
		st.manSpare = mb[:0] // unchanged: keep the old bytes, reuse the new
	} else {
		lo := versioned(object.TypeBlob, mid, mb, st.manID, st.manBytes)
		private := lo.Base != object.ZeroHash
		if private {
			lo.Edit = lo.Edit.Detached() // the log must not keep mb alive
			lo.Whole = mb
		}
		b.Objects = append(b.Objects, lo)
		st.manSpare = nil
		if st.manPrivate {
			st.manSpare = st.manBytes[:0]
		}
		st.manBytes, st.manID, st.manPrivate = mb, mid, private
	}
	st.path[st.folder].t.Set(object.TreeEntry{Name: manifest.FileName, ID: mid})
	for i := len(st.path) - 1; i >= 0; i-- {
		pt := st.path[i]
		if i < len(st.path)-1 {
			child := st.path[i+1]
			pt.t.Set(object.TreeEntry{Name: child.name, Dir: true, ID: child.id})
		}
		if pt.id == object.ZeroHash || len(pt.bytes) == 0 {
			tb := pt.t.Encode()
			tid := object.HashObject(object.TypeTree, tb)
			b.Objects = append(b.Objects, wal.Object{ID: tid, Type: object.TypeTree, Data: tb})
			pt.bytes, pt.id, pt.private, pt.spare = tb, tid, false, nil // tb is the log's now
			continue
		}
		tb, ed := pt.t.EncodeFromInto(pt.spare, pt.bytes)
		tid := object.HashObject(object.TypeTree, tb)
		if tid == pt.id {
			pt.spare = tb[:0]
			continue
		}
		b.Objects = append(b.Objects, wal.Object{ID: tid, Type: object.TypeTree, Base: pt.id, Edit: ed, Whole: tb})
		pt.spare = nil
		if pt.private {
			pt.spare = pt.bytes[:0]
		}
		pt.bytes, pt.id, pt.private = tb, tid, true
	}
	return b, st.path[0].id
}

// versioned logs a new version of an object as an edit of the previous one
// when there is one.
func versioned(t object.Type, id object.Hash, data []byte, prevID object.Hash, prev []byte) wal.Object {
	if prevID == object.ZeroHash || len(prev) == 0 {
		return wal.Object{ID: id, Type: t, Data: data}
	}
	return wal.Object{ID: id, Type: t, Base: prevID, Edit: delta.Diff(prev, data)}
}

// Read rebuilds the in-memory state of a chain from the commit it will
// grow from, tip. For a new branch that is the main-chain commit it forks
// from; branch "" is the main chain.
func Read(ctx context.Context, objs Objects, f Folders, tip object.Hash, sessionID, branch string) (*State, error) {
	r := reader{ctx: ctx, objs: objs}
	data, err := r.typed(tip, object.TypeCommit)
	var c *object.ParsedCommit
	if err == nil {
		c, err = object.ParseCommit(data)
	}
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", sessionID, err)
	}
	st := &State{tip: tip}
	root, err := r.pathTree("", c.Tree)
	if err != nil {
		return nil, err
	}
	st.path = []*pathTree{root}
	area, err := r.child(root, f.Area)
	if err != nil {
		return nil, err
	}
	st.path = append(st.path, area)
	if _, ok := area.t.Get(sessionID); !ok {
		if len(area.t.Entries) != 1 {
			return nil, fmt.Errorf("session %s: no partition folder in commit %s", sessionID, tip)
		}
		part, err := r.child(area, area.t.Entries[0].Name)
		if err != nil {
			return nil, err
		}
		st.partition = part.name
		st.path = append(st.path, part)
	}
	folder, err := r.child(st.path[len(st.path)-1], sessionID)
	if err != nil {
		return nil, err
	}
	st.path = append(st.path, folder)
	st.folder = len(st.path) - 1
	me, ok := folder.t.Get(manifest.FileName)
	if !ok {
		return nil, fmt.Errorf("session %s: commit %s has no %s", sessionID, tip, manifest.FileName)
	}
	if st.manBytes, err = r.typed(me.ID, object.TypeBlob); err != nil {
		return nil, err
	}
	st.manID = me.ID
	if st.manifest, err = manifest.Parse(st.manBytes); err != nil {
		return nil, err
	}
	if branch != "" {
		branches, err := r.childOrNew(folder, f.Branches)
		if err != nil {
			return nil, err
		}
		bf, err := r.childOrNew(branches, branch)
		if err != nil {
			return nil, err
		}
		st.path = append(st.path, branches, bf)
	}
	st.valid = true
	return st, nil
}

// reader reads the trees of a chain's path.
type reader struct {
	ctx  context.Context
	objs Objects
}

func (r reader) pathTree(name string, id object.Hash) (*pathTree, error) {
	data, err := r.typed(id, object.TypeTree)
	if err != nil {
		return nil, err
	}
	t, err := object.ParseTree(data)
	if err != nil {
		return nil, err
	}
	return &pathTree{name: name, t: t, bytes: data, id: id}, nil
}

func (r reader) child(parent *pathTree, name string) (*pathTree, error) {
	e, ok := parent.t.Get(name)
	if !ok || !e.Dir {
		return nil, fmt.Errorf("folder %q missing from tree %s", name, parent.id)
	}
	return r.pathTree(name, e.ID)
}

// childOrNew is the folder name of parent, or a new empty one when parent
// has no entry of that name.
func (r reader) childOrNew(parent *pathTree, name string) (*pathTree, error) {
	if _, ok := parent.t.Get(name); !ok {
		return &pathTree{name: name, t: &object.Tree{}}, nil
	}
	return r.child(parent, name)
}

func (r reader) typed(id object.Hash, want object.Type) ([]byte, error) {
	t, data, err := r.objs.ReadObject(r.ctx, id)
	if err != nil {
		return nil, err
	}
	if t != want {
		return nil, fmt.Errorf("object %s is a %s, expected a %s", id, t, want)
	}
	return data, nil
}
