// Package remote shares a project's ledger through ordinary Git remotes:
// the remotes configuration, push, pull, the transports (go-git's clients,
// and the built-in file receive-pack that writes a remote's refs and packs
// the way git does), and the checks of what a pull brings in. It works on a
// *gitstore.Store through the store's engine surface (gitstore/engine.go)
// and is, with gitstore, the only importer of go-git's transports.
//
// Outcomes are package sharing's types (PushResult, PullResult, Rejection
// with a RejectReason) and the failures a caller may tell apart are sentinels
// matched with errors.Is; the text of every error is the full sentence the
// user reads.
package remote

import (
	"context"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"

	"github.com/thoughtbox/thoughtbox/sharing"
)

// Short names for what every file of the package speaks in, as gitstore
// names them.
type (
	hash      = object.Hash
	objType   = object.Type
	batch     = wal.Batch
	refUpdate = wal.RefUpdate
)

const (
	typeCommit = object.TypeCommit
	typeTree   = object.TypeTree
	typeBlob   = object.TypeBlob
)

var zeroHash = object.ZeroHash

// sharer is a store seen from the remote side: the methods of this
// package's files hang on it, and reach the store only through its
// exported (engine) surface.
type sharer struct{ *gitstore.Store }

// Push sends the project's sessions, knowledge zone and notebooks to a
// remote (a remote name, or a URL or path; "" for the only remote, or
// origin). A ref moves only forward: if the remote's tip is not an
// ancestor of ours, the ref — and the rest of its session — is rejected
// and reported, unless the session is listed in o.Force.
func Push(ctx context.Context, st *gitstore.Store, remote string, o TransferOptions) (*sharing.PushResult, error) {
	return (&sharer{st}).push(ctx, remote, o)
}

// Pull fetches a remote's sessions, knowledge and notebooks and integrates
// them: a ref we lack is created, one we are behind on is fast-forwarded,
// one we are ahead on is left for push, and one that diverged is left as
// it is here while the remote's chain is kept under
// refs/thoughtbox/diverged/<remote>/ (a session moves whole: if any of its
// refs diverged, none is changed). Incoming chains that fail the checks of
// incoming.go are kept under refs/thoughtbox/quarantine/<remote>/ instead.
// Nothing stored here is ever overwritten.
func Pull(ctx context.Context, st *gitstore.Store, remote string, o TransferOptions) (*sharing.PullResult, error) {
	return (&sharer{st}).pull(ctx, remote, o)
}

// Remotes lists the project's remotes by name.
func Remotes(st *gitstore.Store) ([]sharing.Remote, error) { return (&sharer{st}).remotes() }

// AddRemote records a remote, checking its name and URL. A path is stored
// as an absolute path, so that the remote does not depend on the directory
// a command ran in.
func AddRemote(st *gitstore.Store, name, rawURL string) (sharing.Remote, error) {
	return (&sharer{st}).addRemote(name, rawURL)
}

// RemoveRemote forgets a remote. Chains kept from it after a divergence
// stay (refs/thoughtbox/diverged/<name>/...): they may hold the only local
// copy of someone's thoughts.
func RemoveRemote(st *gitstore.Store, name string) error { return (&sharer{st}).removeRemote(name) }
