package remote

import (
	"errors"

	"github.com/thoughtbox/thoughtbox/gitstore"
)

// The failures of sharing a caller may tell apart. Each is matched with
// errors.Is; the error's text stays the full sentence the user reads.
var (
	// ErrNoRemote is returned for a remote name the project does not have.
	ErrNoRemote = errors.New("no such remote")
	// ErrRemoteExists is returned when adding a remote under a name
	// already taken.
	ErrRemoteExists = errors.New("remote already exists")
	// ErrInvalidRemoteName is returned for a name git would not take for
	// a remote (or that could not be a file name).
	ErrInvalidRemoteName = errors.New("invalid remote name")
	// ErrInvalidRemoteURL is returned for a remote URL that is empty, does
	// not parse, or names a protocol other than file, git, http(s), ssh.
	ErrInvalidRemoteURL = errors.New("invalid remote url")
	// ErrNoRepository is returned when the remote has no Git repository
	// at the URL; it wraps go-git's transport.ErrRepositoryNotFound too.
	ErrNoRepository = errors.New("no Git repository at the remote")
	// ErrCredentials is returned when the remote refused the credentials
	// (or wanted some); it wraps go-git's transport error too.
	ErrCredentials = errors.New("the remote refused our credentials")
	// ErrNoConfig is returned by remote configuration on a store that
	// keeps no Git config (the store's own sentinel).
	ErrNoConfig = gitstore.ErrNoConfig
)

// kindError gives err a sentinel kind for errors.Is without changing the
// text the user reads.
type kindError struct {
	kind, err error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

// withKind marks err as being of kind (one of the sentinels above).
func withKind(kind, err error) error { return &kindError{kind: kind, err: err} }
