package gitstore

// A chain's state: the trees and manifest at its tip, kept in memory so
// that a thought is committed without reading its folder back, how a
// thought's objects are built from it, and how it is read back from a
// commit when it is missing or stale.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/manifest"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// chainState is the in-memory copy of one chain's trees and manifest at its
// tip, so that a thought is committed without reading the folder back.
//
// Its holder locks it (Lock, Unlock) for as long as it reads or builds
// on it: a build changes it in place.
type chainState struct {
	sync.Mutex
	valid bool
	tip   hash
	// path holds the trees from the root down to the folder thoughts are
	// added to: root, sessions, [partition], session folder, and on a branch
	// also branches and the branch folder.
	path      []*pathTree
	folder    int // index of the session folder in path
	manifest  *manifest.Manifest
	manBytes  []byte
	manID     hash
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
	id    hash
	// private and spare: as manPrivate and manSpare, for the tree.
	private bool
	spare   []byte
}

func (s *Store) chain(ref string) *chainState {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.chains[ref]
	if !ok {
		c = &chainState{}
		s.chains[ref] = c
	}
	return c
}

// newChainState is the state of a session that has no commit yet: its
// manifest m and the empty trees from the root down to its folder.
func newChainState(m *manifest.Manifest, partition string) *chainState {
	st := &chainState{manifest: m, partition: partition}
	st.path = []*pathTree{{t: &object.Tree{}}, {name: "sessions", t: &object.Tree{}}}
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
func (st *chainState) Adopt(src *chainState) {
	st.valid, st.tip, st.path, st.folder = src.valid, src.tip, src.path, src.folder
	st.manifest, st.manBytes, st.manID, st.partition = src.manifest, src.manBytes, src.manID, src.partition
	st.manPrivate, st.manSpare = src.manPrivate, src.manSpare
}

// At reports whether the state is valid and that of commit tip.
func (st *chainState) At(tip hash) bool { return st.valid && st.tip == tip }

// Invalidate marks the state as no commit's: until a batch built on it is
// applied (a build changes it in place), or when its ref moved elsewhere.
func (st *chainState) Invalidate() { st.valid = false }

// Settle records that the state is that of commit tip, the commit built
// on it, now applied.
func (st *chainState) Settle(tip hash) { st.tip, st.valid = tip, true }

// Entry looks name up in the folder thoughts are added to (the session's
// folder, or on a branch the branch's).
func (st *chainState) Entry(name string) (object.TreeEntry, bool) {
	return st.path[len(st.path)-1].t.Get(name)
}

// Manifest is the chain's manifest, which the next build writes; the
// holder of the lock may change it.
func (st *chainState) Manifest() *manifest.Manifest { return st.manifest }

// AddFile lists a thought's file in the manifest: on the main chain
// (branch ""), or on branch, whose manifest keeps only its own list when
// fresh (its first thought: the state was read from main's).
func (st *chainState) AddFile(branch, name string, fresh bool) {
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
func (st *chainState) BranchFiles(b string) []string {
	return slices.Clone(st.manifest.BranchFiles[b])
}

// buildCommit builds on st (see Build) and adds the commit of its root
// tree on parent.
func buildCommit(st *chainState, file []byte, fileName string, author ledger.Author, when time.Time, message string, parent hash) (*batch, hash) {
	b, tree := st.Build(file, fileName)
	return b, addCommit(b, commitSpec{tree: tree, parents: []hash{parent}, message: message, author: &author, when: when})
}

// Build adds file (if any) to the deepest tree of the path, rewrites the
// manifest and every tree up to the root, and returns the objects and the
// root tree's id. The state is updated in place; the caller drops it if
// the batch is not applied.
func (st *chainState) Build(file []byte, fileName string) (*batch, hash) {
	// Room for every object of a thought (blob, manifest, each tree of the
	// path, and the commit the caller adds): growing the slice copied it
	// three times.
	b := &batch{Objects: make([]logObject, 0, len(st.path)+3)}
	if file != nil {
		id := object.HashObject(typeBlob, file)
		b.Objects = append(b.Objects, logObject{ID: id, Type: typeBlob, Data: file})
		st.path[len(st.path)-1].t.Set(object.TreeEntry{Name: fileName, ID: id})
	}
	mb := st.manifest.EncodeInto(st.manSpare)
	mid := object.HashObject(typeBlob, mb)
	if mid == st.manID {
		st.manSpare = mb[:0] // unchanged: keep the old bytes, reuse the new
	} else {
		lo := versioned(typeBlob, mid, mb, st.manID, st.manBytes)
		private := lo.Base != zeroHash
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
	st.path[st.folder].t.Set(object.TreeEntry{Name: "manifest.json", ID: mid})
	for i := len(st.path) - 1; i >= 0; i-- {
		pt := st.path[i]
		if i < len(st.path)-1 {
			child := st.path[i+1]
			pt.t.Set(object.TreeEntry{Name: child.name, Dir: true, ID: child.id})
		}
		if pt.id == zeroHash || len(pt.bytes) == 0 {
			tb := pt.t.Encode()
			tid := object.HashObject(typeTree, tb)
			b.Objects = append(b.Objects, logObject{ID: tid, Type: typeTree, Data: tb})
			pt.bytes, pt.id, pt.private, pt.spare = tb, tid, false, nil // tb is the log's now
			continue
		}
		tb, ed := pt.t.EncodeFromInto(pt.spare, pt.bytes)
		tid := object.HashObject(typeTree, tb)
		if tid == pt.id {
			pt.spare = tb[:0]
			continue
		}
		b.Objects = append(b.Objects, logObject{ID: tid, Type: typeTree, Base: pt.id, Edit: ed, Whole: tb})
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
func versioned(t objType, id hash, data []byte, prevID hash, prev []byte) logObject {
	if prevID == zeroHash || len(prev) == 0 {
		return logObject{ID: id, Type: t, Data: data}
	}
	return logObject{ID: id, Type: t, Base: prevID, Edit: delta.Diff(prev, data)}
}

// readChain rebuilds the in-memory state of a chain from the commit it will
// grow from. For a new branch that is the main-chain commit it forks from.
func (s *Store) readChain(tip hash, sessionID, branch string) (*chainState, error) {
	c, err := s.readCommit(tip)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", sessionID, err)
	}
	st := &chainState{tip: tip}
	root, err := s.readPathTree("", c.Tree)
	if err != nil {
		return nil, err
	}
	st.path = []*pathTree{root}
	sessions, err := s.childTree(root, "sessions")
	if err != nil {
		return nil, err
	}
	st.path = append(st.path, sessions)
	if _, ok := sessions.t.Get(sessionID); !ok {
		if len(sessions.t.Entries) != 1 {
			return nil, fmt.Errorf("session %s: no partition folder in commit %s", sessionID, tip)
		}
		part, err := s.childTree(sessions, sessions.t.Entries[0].Name)
		if err != nil {
			return nil, err
		}
		st.partition = part.name
		st.path = append(st.path, part)
	}
	folder, err := s.childTree(st.path[len(st.path)-1], sessionID)
	if err != nil {
		return nil, err
	}
	st.path = append(st.path, folder)
	st.folder = len(st.path) - 1
	me, ok := folder.t.Get("manifest.json")
	if !ok {
		return nil, fmt.Errorf("session %s: commit %s has no manifest.json", sessionID, tip)
	}
	if st.manBytes, err = s.readBlob(me.ID); err != nil {
		return nil, err
	}
	st.manID = me.ID
	if st.manifest, err = manifest.Parse(st.manBytes); err != nil {
		return nil, err
	}
	if branch != "" {
		var branches *pathTree
		if _, ok := folder.t.Get("branches"); ok {
			if branches, err = s.childTree(folder, "branches"); err != nil {
				return nil, err
			}
		} else {
			branches = &pathTree{name: "branches", t: &object.Tree{}}
		}
		var bf *pathTree
		if _, ok := branches.t.Get(branch); ok {
			if bf, err = s.childTree(branches, branch); err != nil {
				return nil, err
			}
		} else {
			bf = &pathTree{name: branch, t: &object.Tree{}}
		}
		st.path = append(st.path, branches, bf)
	}
	st.valid = true
	return st, nil
}

func (s *Store) readPathTree(name string, id hash) (*pathTree, error) {
	t, data, err := s.readTreeBytes(id)
	if err != nil {
		return nil, err
	}
	return &pathTree{name: name, t: t, bytes: data, id: id}, nil
}

func (s *Store) childTree(parent *pathTree, name string) (*pathTree, error) {
	e, ok := parent.t.Get(name)
	if !ok || !e.Dir {
		return nil, fmt.Errorf("folder %q missing from tree %s", name, parent.id)
	}
	return s.readPathTree(name, e.ID)
}

func (s *Store) readTyped(id hash, want objType) ([]byte, error) {
	t, data, err := s.be.ReadObject(context.Background(), id)
	if err != nil {
		return nil, err
	}
	if t != want {
		return nil, fmt.Errorf("object %s is a %s, expected a %s", id, t, want)
	}
	return data, nil
}

func (s *Store) readCommit(id hash) (*object.ParsedCommit, error) {
	data, err := s.readTyped(id, typeCommit)
	if err != nil {
		return nil, err
	}
	return object.ParseCommit(data)
}

func (s *Store) readTreeBytes(id hash) (*object.Tree, []byte, error) {
	data, err := s.readTyped(id, typeTree)
	if err != nil {
		return nil, nil, err
	}
	t, err := object.ParseTree(data)
	return t, data, err
}

func (s *Store) readBlob(id hash) ([]byte, error) { return s.readTyped(id, typeBlob) }

// chainAt reports whether this store's state of the chain ref is valid
// and at tip.
func (s *Store) chainAt(ref string, tip hash) bool {
	s.mu.Lock()
	c := s.chains[ref]
	s.mu.Unlock()
	if c == nil {
		return false
	}
	c.Lock()
	defer c.Unlock()
	return c.At(tip)
}
