// Package gitstore keeps Thoughtbox ledgers in Git repositories. It is the
// only package that imports go-git.
//
// Each session owns its refs (refs/heads/sessions/<id>/main and one
// refs/heads/sessions/<id>/branches/<branchId> per reasoning branch); every
// thought is one commit. Writes are made durable by a write-ahead log with a
// single fsync and reach the Git object store in packs a fraction of a second
// later; see doc/architecture.md for the whole write path.
package gitstore

import "github.com/thoughtbox/thoughtbox/gitstore/internal/object"

// Short names for what every file of the package speaks in.
type (
	hash    = object.Hash
	objType = object.Type
)

const (
	typeCommit = object.TypeCommit
	typeTree   = object.TypeTree
	typeBlob   = object.TypeBlob
)

var zeroHash = object.ZeroHash
