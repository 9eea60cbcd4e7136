package gitstore

import (
	"context"
	"errors"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
)

// The log's units, named as the rest of the package speaks of them.
type (
	batch     = wal.Batch
	logObject = wal.Object
	refUpdate = wal.RefUpdate
)

// errConflict is returned by backend.apply when a ref no longer has the old
// value of an update; nothing of the batch is applied.
var errConflict = errors.New("ref moved")

// errNotFound is returned when an object or ref does not exist.
var errNotFound = object.ErrNotFound

// backend is where objects and refs live: a bare repository on disk, or
// go-git's in-memory storage. Everything above it (layout, manifests,
// commits, loading) is shared by both.
type backend interface {
	readObject(id hash) (objType, []byte, error)
	readRef(name string) (hash, error) // zeroHash, nil when absent
	listRefs(prefix string) (map[string]hash, error)
	apply(ctx context.Context, b *batch) error
	// flush makes everything applied so far visible to plain Git readers.
	flush() error
	close() error
}
