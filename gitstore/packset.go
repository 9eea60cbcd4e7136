package gitstore

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// packSet reads objects from the repository's packs. go-git's storage can
// only forget all its pack indexes and reload every one (with unbuffered
// reads) when a pack appears; the flusher adds a pack every fraction of a
// second, so this set loads each new index once and keeps the rest.
type packSet struct {
	dir string
	// mu guards packs and the go-git packfiles, which are not safe for
	// concurrent use.
	mu    sync.Mutex
	packs map[string]*packEntry
	order []*packEntry // newest first: recent objects are read most
	cache cache.Object
}

type packEntry struct {
	name string
	idx  *idxfile.MemoryIndex
	pf   *packfile.Packfile
	size int64
}

func newPackSet(dir string) *packSet {
	return &packSet{dir: dir, packs: map[string]*packEntry{}, cache: cache.NewObjectLRU(32 * cache.MiByte)}
}

// refresh picks up packs added (by us or another process) and drops removed
// ones.
func (ps *packSet) refresh() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	entries, err := os.ReadDir(ps.dir)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	fs := osfs.New(ps.dir)
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".idx")
		if !ok || !strings.HasPrefix(name, "pack-") {
			continue
		}
		seen[name] = true
		if ps.packs[name] != nil {
			continue
		}
		idx, err := readIdx(filepath.Join(ps.dir, name+".idx"))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // removed by a repack meanwhile
			}
			return err
		}
		f, err := fs.Open(name + ".pack")
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return err
		}
		fi, _ := os.Stat(filepath.Join(ps.dir, name+".pack"))
		pe := &packEntry{name: name, idx: idx, pf: packfile.NewPackfileWithCache(idx, nil, f, ps.cache, 0)}
		if fi != nil {
			pe.size = fi.Size()
		}
		ps.packs[name] = pe
		ps.order = append([]*packEntry{pe}, ps.order...)
	}
	kept := ps.order[:0]
	for _, pe := range ps.order {
		if seen[pe.name] {
			kept = append(kept, pe)
		} else {
			pe.pf.Close()
			delete(ps.packs, pe.name)
		}
	}
	ps.order = kept
	return nil
}

func readIdx(path string) (*idxfile.MemoryIndex, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bufio.NewReaderSize(f, 64*1024)).Decode(idx); err != nil {
		return nil, err
	}
	return idx, nil
}

// read returns an object from the packs, or errNotFound.
func (ps *packSet) read(id hash) (objType, []byte, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, pe := range ps.order {
		off, err := pe.idx.FindOffset(id)
		if err != nil {
			continue
		}
		o, err := pe.pf.GetByOffset(off)
		if err != nil {
			return 0, nil, err
		}
		r, err := o.Reader()
		if err != nil {
			return 0, nil, err
		}
		data, err := io.ReadAll(r)
		r.Close()
		return o.Type(), data, err
	}
	return 0, nil, errNotFound
}

func (ps *packSet) has(id hash) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, pe := range ps.order {
		if ok, _ := pe.idx.Contains(id); ok {
			return true
		}
	}
	return false
}

func (ps *packSet) count() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.order)
}

func (ps *packSet) close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, pe := range ps.order {
		pe.pf.Close()
	}
	ps.order, ps.packs = nil, map[string]*packEntry{}
}

