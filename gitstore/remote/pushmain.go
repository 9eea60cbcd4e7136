package remote

import (
	"context"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// pushPlanned, when set (by tests), runs after a push read the remote's
// refs and chose its commands, before it sends them.
var pushPlanned func()

// readmeTime dates the README commit of refs/heads/main. It is fixed, not
// the time a ledger was made, so that every ledger starts the same main:
// two servers of a team that push to an empty remote at once then offer
// the same commit, and neither ledger's main differs from the remote's.
var readmeTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// remoteMain reads the remote's refs/heads/main again, after a push of
// ours was refused it: when two ledgers push to an empty remote at once,
// both offer to create main and the later one is refused because the
// other's now exists — which is what "only a remote without a main gets
// ours" asks for, not a failure. zeroHash if the remote still has none.
func (s *sharer) remoteMain(ctx context.Context, remote string, o TransferOptions) (hash, error) {
	link, sess, err := s.connect(ctx, remote, o, func(tr transport.Transport, ep *transport.Endpoint, auth transport.AuthMethod) (transport.Session, error) {
		return tr.NewUploadPackSession(ep, auth)
	})
	if err != nil {
		return zeroHash, err
	}
	defer sess.Close()
	return link.adv.References["refs/heads/main"], nil
}
