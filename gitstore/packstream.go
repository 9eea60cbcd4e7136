package gitstore

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing/format/packfile"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/pack"
)

// tmpDir is where transfers keep their temporary packs: not objects/pack,
// whose tmp_ files a starting store removes as a killed flusher's leftovers.
func (s *Store) tmpDir() string {
	if be, ok := s.be.(*fsBackend); ok {
		return filepath.Join(be.gitDir, "thoughtbox", "transfer")
	}
	return os.TempDir()
}

// ingestPack stores a pack received from a remote. On disk it is written
// whole to a temporary file, indexed, synced, and renamed into objects/pack
// (index last), so that the refs pointing into it — moved afterwards — never
// point at objects a crash could lose. In memory go-git parses it into the
// storage.
func (s *Store) ingestPack(ctx context.Context, r io.Reader) (objects int, bytes int64, err error) {
	switch be := s.be.(type) {
	case *memBackend:
		cr := &countingReader{r: r}
		be.mu.Lock()
		defer be.mu.Unlock()
		// The pack's deltas may name our objects as bases, and go-git
		// finds bases only in its own storage.
		if err := be.flattenLocked(); err != nil {
			return 0, 0, err
		}
		err := packfile.UpdateObjectStorage(be.st, cr)
		return -1, cr.n, err
	case *fsBackend:
		return be.ingestPack(ctx, s.tmpDir(), r)
	}
	return 0, 0, errors.New("this store cannot receive packs")
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

func (b *fsBackend) ingestPack(ctx context.Context, tmpDir string, r io.Reader) (int, int64, error) {
	count, n, err := pack.Install(tmpDir, filepath.Join(b.gitDir, "objects", "pack"), r)
	if err != nil || n == 0 {
		return count, n, err
	}
	return count, n, b.packs.Refresh()
}
