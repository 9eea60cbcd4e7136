package gitstore

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/repo"
)

// tmpDir is where transfers keep their temporary packs: not objects/pack,
// whose tmp_ files a starting store removes as a killed flusher's leftovers.
func (s *Store) tmpDir() string {
	if be, ok := s.be.(*repo.FS); ok {
		return filepath.Join(be.GitDir(), "thoughtbox", "transfer")
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
	case *repo.Mem:
		return be.IngestPack(ctx, r)
	case *repo.FS:
		return be.IngestPack(ctx, s.tmpDir(), r)
	}
	return 0, 0, errors.New("this store cannot receive packs")
}
