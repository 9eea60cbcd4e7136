package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
)

// Mem keeps a project in go-git's in-memory storage
// (THOUGHTBOX_STORAGE=memory). Nothing survives the process; the layout,
// commits and refs are exactly those of the on-disk store.
type Mem struct {
	// mu guards st, which is not safe for concurrent use, and makes each
	// batch's compare-and-swap atomic.
	mu sync.Mutex
	st *memory.Storage
	// bySession indexes session refs by session id: loading a session
	// lists its refs, and go-git's in-memory refs are one flat map.
	bySession map[string]map[string]bool
	// sessionPrefix is where session refs live: refs under it are
	// indexed by session id.
	sessionPrefix string
	// edits holds objects as the edit of their base they were built as,
	// not whole: each thought's folder tree is the previous one plus an
	// entry, and keeping every version whole made a session's memory grow
	// with the square of its length (and each append copy the whole tree
	// twice). Every memEditDepth-th version is kept whole, so a read
	// applies a bounded number of edits; rebuilt spares even those for the
	// versions read lately.
	edits   map[object.Hash]*memEdit
	rebuilt rebuiltCache
}

type memEdit struct {
	typ   object.Type
	base  object.Hash
	ed    delta.Edit
	depth int // edits between this object and a whole one
}

// memEditDepth bounds the edits applied to read an object.
const memEditDepth = 32

func NewMem(sessionPrefix string) *Mem {
	return &Mem{st: memory.NewStorage(), sessionPrefix: sessionPrefix, bySession: map[string]map[string]bool{}, edits: map[object.Hash]*memEdit{}}
}

func (m *Mem) ReadObject(_ context.Context, id object.Hash) (object.Type, []byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.readLocked(id)
}

func (m *Mem) readLocked(id object.Hash) (object.Type, []byte, error) {
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

// storeWhole puts an object into go-git's storage, under the id it was
// built with (see knownObject). data becomes the object's: callers pass a
// copy when the buffer is used again.
func (m *Mem) storeWhole(typ object.Type, id object.Hash, data []byte) error {
	_, err := m.st.SetEncodedObject(&knownObject{t: typ, h: id, data: data})
	return err
}

// knownObject is an object stored whole whose id is already known: the
// store computed it to build the commit. go-git's MemoryObject would hash
// it again as it is stored, with the slower collision-detecting SHA-1.
// data is this object's own: no one writes to it once it is stored.
type knownObject struct {
	t    plumbing.ObjectType
	h    plumbing.Hash
	data []byte
}

func (o *knownObject) Hash() plumbing.Hash           { return o.h }
func (o *knownObject) Type() plumbing.ObjectType     { return o.t }
func (o *knownObject) SetType(t plumbing.ObjectType) { o.t = t }
func (o *knownObject) Size() int64                   { return int64(len(o.data)) }

// SetSize is not needed: a knownObject is made whole.
func (o *knownObject) SetSize(int64) {}

func (o *knownObject) Reader() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(o.data)), nil
}

// Writer refuses: a stored object does not change.
func (o *knownObject) Writer() (io.WriteCloser, error) {
	return nil, errors.New("a stored object cannot be written")
}

// flattenLocked stores every object kept as an edit whole, for go-git's
// own code (a received pack's deltas may name them as bases).
func (m *Mem) flattenLocked() error {
	for id, e := range m.edits {
		_, data, err := m.readLocked(id)
		if err != nil {
			return err
		}
		if err := m.storeWhole(e.typ, id, bytes.Clone(data)); err != nil {
			return err
		}
	}
	m.edits = map[object.Hash]*memEdit{}
	return nil
}

func (m *Mem) refLocked(name string) (object.Hash, error) {
	r, err := m.st.Reference(plumbing.ReferenceName(name))
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return object.ZeroHash, nil
	}
	if err != nil {
		return object.ZeroHash, err
	}
	return r.Hash(), nil
}

func (m *Mem) ReadRef(_ context.Context, name string) (object.Hash, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refLocked(name)
}

func (m *Mem) ListRefs(_ context.Context, prefix string) (map[string]object.Hash, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]object.Hash{}
	if id, ok := strings.CutPrefix(prefix, m.sessionPrefix); ok && strings.HasSuffix(id, "/") && strings.Count(id, "/") == 1 {
		for name := range m.bySession[strings.TrimSuffix(id, "/")] {
			if h, err := m.refLocked(name); err == nil && h != object.ZeroHash {
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

func (m *Mem) Apply(_ context.Context, b *wal.Batch) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, u := range b.Updates {
		cur, err := m.refLocked(u.Name)
		if err != nil {
			return err
		}
		if cur != u.Old {
			return ErrConflict
		}
	}
	for _, o := range b.Objects {
		if _, ok := m.edits[o.ID]; ok {
			continue
		}
		data := o.Data
		if o.Base != object.ZeroHash {
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
			// Whole is the builder's buffer, used again for the next
			// version: copied. A batch's Data, like the log's (repo.FS
			// keeps it as its overlay), is not written after Apply.
			if data = bytes.Clone(o.Whole); data == nil {
				_, base, err := m.readLocked(o.Base)
				if err != nil {
					return err
				}
				if data, err = o.Edit.Apply(base); err != nil {
					return err
				}
			}
		}
		if err := m.storeWhole(o.Type, o.ID, data); err != nil {
			return err
		}
	}
	for _, u := range b.Updates {
		if u.New == object.ZeroHash {
			if err := m.st.RemoveReference(plumbing.ReferenceName(u.Name)); err != nil {
				return err
			}
			if rest, ok := strings.CutPrefix(u.Name, m.sessionPrefix); ok {
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
		if rest, ok := strings.CutPrefix(u.Name, m.sessionPrefix); ok {
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

// Flush does nothing: nothing but this process reads the storage.
func (m *Mem) Flush(context.Context) error { return nil }

// Close does nothing; the storage goes with the process.
func (m *Mem) Close() error { return nil }

// IngestPack parses a pack received from a remote into the storage. The
// count of objects is not known: -1.
func (m *Mem) IngestPack(_ context.Context, r io.Reader) (objects int, bytes int64, err error) {
	cr := &countingReader{r: r}
	m.mu.Lock()
	defer m.mu.Unlock()
	// The pack's deltas may name our objects as bases, and go-git
	// finds bases only in its own storage.
	if err := m.flattenLocked(); err != nil {
		return 0, 0, err
	}
	err = packfile.UpdateObjectStorage(m.st, cr)
	return -1, cr.n, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Config returns the repository's Git config.
func (m *Mem) Config() (*gitconfig.Config, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st.Config()
}

// EditConfig changes the config in one step.
func (m *Mem) EditConfig(change func(*gitconfig.Config) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cfg, err := m.st.Config()
	if err != nil {
		return err
	}
	if err := change(cfg); err != nil {
		return err
	}
	return m.st.SetConfig(cfg)
}
