package gitstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
)

// memBackend keeps a project in go-git's in-memory storage
// (THOUGHTBOX_STORAGE=memory). Nothing survives the process; the layout,
// commits and refs are exactly those of the on-disk store.
type memBackend struct {
	// mu guards st, which is not safe for concurrent use, and makes each
	// batch's compare-and-swap atomic.
	mu sync.Mutex
	st *memory.Storage
	// bySession indexes session refs by session id: loading a session
	// lists its refs, and go-git's in-memory refs are one flat map.
	bySession map[string]map[string]bool
	// edits holds objects as the edit of their base they were built as,
	// not whole: each thought's folder tree is the previous one plus an
	// entry, and keeping every version whole made a session's memory grow
	// with the square of its length (and each append copy the whole tree
	// twice). Every memEditDepth-th version is kept whole, so a read
	// applies a bounded number of edits; rebuilt spares even those for the
	// versions read lately.
	edits   map[hash]*memEdit
	rebuilt rebuiltCache
}

type memEdit struct {
	typ   objType
	base  hash
	ed    delta.Edit
	depth int // edits between this object and a whole one
}

// memEditDepth bounds the edits applied to read an object.
const memEditDepth = 32

func newMemBackend() *memBackend {
	return &memBackend{st: memory.NewStorage(), bySession: map[string]map[string]bool{}, edits: map[hash]*memEdit{}}
}

func (m *memBackend) readObject(id hash) (objType, []byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.readLocked(id)
}

func (m *memBackend) readLocked(id hash) (objType, []byte, error) {
	e, ok := m.edits[id]
	if !ok {
		return readEncoded(m.st, id)
	}
	if data, ok := m.rebuilt.get(id); ok {
		return e.typ, data, nil
	}
	_, base, err := m.readLocked(e.base)
	if err != nil {
		return 0, nil, err
	}
	data, err := e.ed.Apply(base)
	if err != nil {
		return 0, nil, err
	}
	m.rebuilt.put(id, data)
	return e.typ, data, nil
}

// storeWhole puts an object into go-git's storage.
func (m *memBackend) storeWhole(typ objType, data []byte) error {
	eo := m.st.NewEncodedObject()
	eo.SetType(typ)
	eo.SetSize(int64(len(data)))
	w, _ := eo.Writer()
	w.Write(data)
	w.Close()
	_, err := m.st.SetEncodedObject(eo)
	return err
}

// flattenLocked stores every object kept as an edit whole, for go-git's
// own code (a received pack's deltas may name them as bases).
func (m *memBackend) flattenLocked() error {
	for id, e := range m.edits {
		_, data, err := m.readLocked(id)
		if err != nil {
			return err
		}
		if err := m.storeWhole(e.typ, data); err != nil {
			return err
		}
	}
	m.edits = map[hash]*memEdit{}
	return nil
}

// readEncoded reads a whole object through go-git's storage (the in-memory
// one, or loose objects on disk), translating its not-found error.
func readEncoded(st storer.EncodedObjectStorer, id hash) (objType, []byte, error) {
	o, err := st.EncodedObject(plumbing.AnyObject, id)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return 0, nil, errNotFound
	}
	if err != nil {
		return 0, nil, err
	}
	r, err := o.Reader()
	if err != nil {
		return 0, nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	return o.Type(), data, err
}

func (m *memBackend) refLocked(name string) (hash, error) {
	r, err := m.st.Reference(plumbing.ReferenceName(name))
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return zeroHash, nil
	}
	if err != nil {
		return zeroHash, err
	}
	return r.Hash(), nil
}

func (m *memBackend) readRef(name string) (hash, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refLocked(name)
}

func (m *memBackend) listRefs(prefix string) (map[string]hash, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]hash{}
	if id, ok := strings.CutPrefix(prefix, refPrefix); ok && strings.HasSuffix(id, "/") && strings.Count(id, "/") == 1 {
		for name := range m.bySession[strings.TrimSuffix(id, "/")] {
			if h, err := m.refLocked(name); err == nil && h != zeroHash {
				out[name] = h
			}
		}
		return out, nil
	}
	for name, r := range m.st.ReferenceStorage {
		if strings.HasPrefix(string(name), prefix) && r.Type() == plumbing.HashReference {
			out[string(name)] = r.Hash()
		}
	}
	return out, nil
}

func (m *memBackend) apply(_ context.Context, b *batch) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, u := range b.Updates {
		cur, err := m.refLocked(u.Name)
		if err != nil {
			return err
		}
		if cur != u.Old {
			return errConflict
		}
	}
	for _, o := range b.Objects {
		if _, ok := m.edits[o.ID]; ok {
			continue
		}
		data := o.Data
		if o.Base != zeroHash {
			depth := 1
			if be, ok := m.edits[o.Base]; ok {
				depth = be.depth + 1
			} else if _, err := m.st.EncodedObject(plumbing.AnyObject, o.Base); err != nil {
				return fmt.Errorf("object %s: base %s: %w", o.ID, o.Base, err)
			}
			if depth < memEditDepth {
				m.edits[o.ID] = &memEdit{typ: o.Type, base: o.Base, ed: o.Edit, depth: depth}
				continue
			}
			if data = o.Whole; data == nil {
				_, base, err := m.readLocked(o.Base)
				if err != nil {
					return err
				}
				if data, err = o.Edit.Apply(base); err != nil {
					return err
				}
			}
		}
		if err := m.storeWhole(o.Type, data); err != nil {
			return err
		}
	}
	for _, u := range b.Updates {
		if u.New == zeroHash {
			if err := m.st.RemoveReference(plumbing.ReferenceName(u.Name)); err != nil {
				return err
			}
			if rest, ok := strings.CutPrefix(u.Name, refPrefix); ok {
				if id, _, ok := strings.Cut(rest, "/"); ok {
					delete(m.bySession[id], u.Name)
				}
			}
			continue
		}
		ref := plumbing.NewHashReference(plumbing.ReferenceName(u.Name), u.New)
		if err := m.st.SetReference(ref); err != nil {
			return err
		}
		if rest, ok := strings.CutPrefix(u.Name, refPrefix); ok {
			if id, _, ok := strings.Cut(rest, "/"); ok {
				if m.bySession[id] == nil {
					m.bySession[id] = map[string]bool{}
				}
				m.bySession[id][u.Name] = true
			}
		}
	}
	return nil
}

func (m *memBackend) flush() error { return nil }
func (m *memBackend) close() error { return nil }
