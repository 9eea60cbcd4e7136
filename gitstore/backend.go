package gitstore

import (
	"github.com/thoughtbox/thoughtbox/gitstore/internal/repo"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// The log's units, named as the rest of the package speaks of them.
type (
	batch     = wal.Batch
	logObject = wal.Object
	refUpdate = wal.RefUpdate
)

// errConflict is returned by Repo.Apply when a ref no longer has the old
// value of an update; nothing of the batch is applied.
var errConflict = repo.ErrConflict

// errNotFound is returned when an object or ref does not exist.
var errNotFound = repo.ErrNotFound

// ErrReadOnly is returned by a write to a ledger whose files this process
// cannot write; reading it works.
var ErrReadOnly = repo.ErrReadOnly

func syncDir(dir string) error { return durable.SyncDir(dir) }
