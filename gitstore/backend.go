package gitstore

import (
	"context"
	"errors"
)

// logObject is an object as the store produces it: whole, or as an edit of
// an earlier version of the same path (base).
type logObject struct {
	id   hash
	typ  objType
	base hash // zeroHash: data holds the whole object
	data []byte
	ed   edit
	// whole is the content of an object logged as an edit, when its
	// builder has it at hand; it lets the in-memory backend store a
	// version whole without rebuilding it from its edit chain. It is
	// only read during apply: the builder reuses the buffer afterwards.
	whole []byte
}

// refUpdate moves a ref by compare-and-swap: from old (zeroHash: the ref must
// not exist) to new (zeroHash: the ref is deleted).
type refUpdate struct {
	name     string
	old, new hash
}

// batch is one atomic, durable change: its objects and the ref moves that
// publish them.
type batch struct {
	objects []logObject
	updates []refUpdate
}

// errConflict is returned by backend.apply when a ref no longer has the old
// value of an update; nothing of the batch is applied.
var errConflict = errors.New("ref moved")

// errNotFound is returned when an object or ref does not exist.
var errNotFound = errors.New("not found")

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
