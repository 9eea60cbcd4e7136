// Package repo is where a store's objects and refs live: a bare repository
// on disk (FS: packs, refs and the write-ahead log with its overlay and
// flusher) or go-git's in-memory storage (Mem). Everything above it — the
// layout, manifests, commits, loading — is shared by both and lives in
// gitstore.
package repo

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// ErrConflict is returned by Apply when a ref no longer has the old value
// of an update; nothing of the batch is applied.
var ErrConflict = errors.New("ref moved")

// ErrNotFound is returned when an object does not exist.
var ErrNotFound = object.ErrNotFound

// ErrReadOnly is returned by a write to a ledger whose files this process
// cannot write; reading it works.
var ErrReadOnly = errors.New("the ledger's files are read-only here: commands that read it work, writing needs write access to the data directory")

// Repo is a repository's objects and refs. Its methods are safe for
// concurrent use.
type Repo interface {
	ReadObject(ctx context.Context, id object.Hash) (object.Type, []byte, error)
	// ReadRef returns ZeroHash and no error when the ref does not exist.
	ReadRef(ctx context.Context, name string) (object.Hash, error)
	ListRefs(ctx context.Context, prefix string) (map[string]object.Hash, error)
	// Apply stores a batch's objects and moves its refs by compare-and-
	// swap, atomically and durably; ErrConflict when a ref moved.
	Apply(ctx context.Context, b *wal.Batch) error
	// Flush makes everything applied so far visible to plain Git readers.
	Flush(ctx context.Context) error
	Close() error
}

var (
	_ Repo = (*FS)(nil)
	_ Repo = (*Mem)(nil)
)

// readEncoded reads a whole object through go-git's storage (the in-memory
// one, or loose objects on disk), translating its not-found error.
func readEncoded(st storer.EncodedObjectStorer, id object.Hash) (object.Type, []byte, error) {
	o, err := st.EncodedObject(plumbing.AnyObject, id)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return 0, nil, ErrNotFound
	}
	if err != nil {
		return 0, nil, err
	}
	if k, ok := o.(*knownObject); ok {
		return k.t, bytes.Clone(k.data), nil
	}
	r, err := o.Reader()
	if err != nil {
		return 0, nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	return o.Type(), data, err
}

// rebuiltCache holds recently rebuilt objects, at most about max bytes, in
// two generations: when the newer one fills, the older is dropped. That
// keeps what was used lately without bookkeeping per entry.
type rebuiltCache struct {
	cur, old map[object.Hash][]byte
	curBytes int
}

// rebuiltMax bounds the cache; a folder tree of 10,000 thoughts is about
// 400 KB, so this holds the latest versions of a few dozen busy sessions.
const rebuiltMax = 16 << 20

// rebuiltMin is the size below which rebuilding is cheaper than caching.
const rebuiltMin = 4 << 10

func (c *rebuiltCache) get(id object.Hash) ([]byte, bool) {
	if d, ok := c.cur[id]; ok {
		return d, true
	}
	d, ok := c.old[id]
	if ok {
		c.put(id, d)
	}
	return d, ok
}

func (c *rebuiltCache) put(id object.Hash, data []byte) {
	if len(data) < rebuiltMin || len(data) > rebuiltMax/4 {
		return
	}
	if c.curBytes+len(data) > rebuiltMax/2 {
		c.old, c.cur, c.curBytes = c.cur, nil, 0
	}
	if c.cur == nil {
		c.cur = map[object.Hash][]byte{}
	}
	if _, ok := c.cur[id]; !ok {
		c.cur[id] = data
		c.curBytes += len(data)
	}
}

// initBareRepo creates a bare repository the way `git init --bare` lays it
// out, if there is none.
func initBareRepo(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return nil
	}
	for _, d := range []string{"objects/pack", "objects/info", "refs/heads", "refs/tags", "info"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		"config":      "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n",
		"description": "Thoughtbox reasoning ledger\n",
		"HEAD":        "ref: refs/heads/main\n",
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if n == "HEAD" {
			continue // written last: its presence marks a finished init
		}
		if err := os.WriteFile(filepath.Join(dir, n), []byte(files[n]), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte(files["HEAD"]), 0o644); err != nil {
		return err
	}
	return durable.SyncDir(dir)
}
