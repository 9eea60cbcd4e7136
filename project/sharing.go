package project

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/sharing"
)

// ErrCodeRepository is returned by remote add, remove and list for a
// ledger kept in a code repository: there the repository's remotes are
// the user's code remotes, managed with git; reasoning goes only to the
// URL bound with Bind (see bound.go).
var ErrCodeRepository = errors.New("the ledger is kept in a code repository; its remotes are the code's (see 'git remote'), and reasoning goes only to the remote bound with 'thoughtbox remote bind'")

// checkSharing refuses remote management for a ledger kept in a code
// repository.
func checkSharing(cfg *config.Config) error {
	if cfg.Code != nil {
		return ErrCodeRepository
	}
	return nil
}

// ValidRemoteName checks a remote's name (letters, digits, '.', '_', '-').
func ValidRemoteName(name string) error { return remote.ValidRemoteName(name) }

// Remotes lists the project's remotes by name.
func (p *Project) Remotes() ([]sharing.Remote, error) {
	if err := checkSharing(p.cfg); err != nil {
		return nil, err
	}
	return remote.Remotes(p.store)
}

// AddRemote adds a remote, checking its name and URL.
func (p *Project) AddRemote(name, url string) (sharing.Remote, error) {
	if err := checkSharing(p.cfg); err != nil {
		return sharing.Remote{}, err
	}
	return remote.AddRemote(p.store, name, url)
}

// RemoveRemote forgets a remote; chains kept from it stay.
func (p *Project) RemoveRemote(name string) error {
	if err := checkSharing(p.cfg); err != nil {
		return err
	}
	return remote.RemoveRemote(p.store, name)
}

// PushOptions choose what a push sends.
type PushOptions struct {
	// Sessions limits the push to these sessions (the knowledge zone and
	// the notebooks go too); nil pushes everything.
	Sessions []string
	// SessionsOnly, with Sessions, sends those sessions' refs and
	// nothing else (see remote.TransferOptions.SessionsOnly).
	SessionsOnly bool
	// Force lists sessions whose chains on the remote are replaced even
	// though they diverged.
	Force []string
	// Progress, when set, receives progress lines.
	Progress io.Writer
}

// Push sends the project to remote (a name, URL or path; "" for the only
// remote, or origin), with the credentials and transport of the
// configuration.
func (p *Project) Push(ctx context.Context, name string, o PushOptions) (*sharing.PushResult, error) {
	to, err := transferOptions(p.cfg, o.Progress)
	if err != nil {
		return nil, err
	}
	to.Sessions, to.Force, to.SessionsOnly = o.Sessions, o.Force, o.SessionsOnly
	r := codeRepo(p)
	if r != nil {
		if name, err = boundTarget(ctx, r, name, "push"); err != nil {
			return nil, err
		}
		if to.Exclude, err = r.PrivateSessions(); err != nil {
			return nil, err
		}
	}
	res, err := remote.Push(ctx, p.store, name, to)
	if err == nil && r != nil {
		// What a pre-push hook queued has reached the bound remote now,
		// unless it was rejected there.
		done := o.Sessions
		if done == nil {
			done, err = r.PushQueue()
		}
		if err == nil {
			err = r.Unqueue(notRejected(done, res))
		}
	}
	return res, err
}

// notRejected is ids less the sessions a push rejected.
func notRejected(ids []string, res *sharing.PushResult) []string {
	rejected := map[string]bool{}
	for _, r := range res.Rejected {
		rejected[r.Session] = true
	}
	out := []string{}
	for _, id := range ids {
		if !rejected[id] {
			out = append(out, id)
		}
	}
	return out
}

// Pull brings remote's sessions, knowledge and notebooks in, then has the
// ledger forget its views of the sessions the pull moved, so that its next
// read shows them as they are now.
func (p *Project) Pull(ctx context.Context, name string, progress io.Writer) (*sharing.PullResult, error) {
	to, err := transferOptions(p.cfg, progress)
	if err != nil {
		return nil, err
	}
	if r := codeRepo(p); r != nil {
		if name, err = boundTarget(ctx, r, name, "pull"); err != nil {
			return nil, err
		}
	}
	return p.pull(ctx, name, to)
}

func (p *Project) pull(ctx context.Context, name string, to remote.TransferOptions) (*sharing.PullResult, error) {
	if r := codeRepo(p); r != nil {
		// A pull or a fetch may bring links: why's index of them is
		// rebuilt.
		defer r.ForgetLinkIndex()
	}
	// From the moment refs move until the ledger has caught up, its reads
	// come from the store: a listing and a read of one session agree
	// while the refs move. The fetch before that leaves reads alone.
	var done func()
	defer func() {
		if done != nil {
			done()
		}
	}()
	to.BeforeRefsMove = func() { done = p.ledger.Pulling() }
	res, err := remote.Pull(ctx, p.store, name, to)
	if err != nil {
		return nil, err
	}
	if err := p.converge(ctx, res); err != nil {
		return res, err
	}
	// Sharing goes through the ledger: it reloads the sessions it holds
	// that the pull moved and announces what they gained. A failed reload
	// only drops that view (the next read loads it again).
	if err := p.ledger.Pulled(ctx, pulledSessions(res)); err != nil {
		return res, fmt.Errorf("reading pulled sessions again: %w", err)
	}
	return res, nil
}

// pulledSessions sorts the sessions whose refs a pull created or moved
// into those new here (their main chain was created) and the others.
func pulledSessions(res *sharing.PullResult) ledger.PulledSessions {
	var p ledger.PulledSessions
	seen := map[string]bool{}
	for _, c := range res.Created {
		if c.Session != "" && !seen[c.Session] && strings.HasSuffix(c.Ref, "/main") {
			seen[c.Session] = true
			p.New = append(p.New, c.Session)
		}
	}
	for _, list := range [][]sharing.RefChange{res.Created, res.Updated} {
		for _, c := range list {
			if c.Session != "" && !seen[c.Session] {
				seen[c.Session] = true
				p.Moved = append(p.Moved, c.Session)
			}
		}
	}
	return p
}

// Diverged lists the chains a pull kept aside because a remote extended
// them differently: of one session, or of all when sessionID is "".
func (p *Project) Diverged(sessionID string) ([]sharing.DivergedChain, error) {
	return p.store.Diverged(sessionID)
}

// DivergedThoughts reads a kept chain: the number of the last thought it
// shares with this ledger's chain, and the thoughts it has after it.
func (p *Project) DivergedThoughts(sessionID, keptAs string) (since int, thoughts []ledger.ThoughtData, err error) {
	return p.store.DivergedThoughts(sessionID, keptAs)
}

// DropDiverged forgets a kept chain (the remote keeps it).
func (p *Project) DropDiverged(ctx context.Context, keptAs string) error {
	return p.store.DropDiverged(ctx, keptAs)
}

// transferOptions reads the credentials, transport choice and thought
// limit of push and pull from the configuration.
func transferOptions(cfg *config.Config, progress io.Writer) (remote.TransferOptions, error) {
	o := remote.TransferOptions{
		Progress:         progress,
		Token:            cfg.Getenv(config.EnvGitToken),
		User:             cfg.Getenv(config.EnvGitUser),
		SSHKeyFile:       cfg.Getenv(config.EnvSSHKey),
		SSHKeyPassphrase: cfg.Getenv(config.EnvSSHKeyPassphrase),
		// What a pull brings in obeys the same thought limit as what is
		// written here.
		MaxThoughtBytes: cfg.MaxThoughtBytes,
	}
	switch v := cfg.Getenv(config.EnvFileTransport); v {
	case "", "git":
	case "builtin":
		o.BuiltinFile = true
	default:
		return o, &config.SettingError{Name: config.EnvFileTransport, Value: v, Reason: "expected git or builtin"}
	}
	return o, nil
}

// Status is what Inspect reads of a project without opening it.
type Status struct {
	// Exists says the repository is on disk.
	Exists bool
	// Sessions counts the sessions whose main ref is published.
	Sessions int
	// PendingRecords and PendingBytes measure what waits in the
	// write-ahead log for the next flush.
	PendingRecords int
	PendingBytes   int64
	// Remotes are the remotes named in the repository's Git config.
	Remotes []sharing.Remote
}

// Inspect reads the project cfg names straight from disk, without opening
// it: no lock, no log replay, nothing created or written, so it answers
// even while another process holds every lock. Before the project's
// first use it reports a project that does not exist.
func Inspect(cfg *config.Config) Status {
	repo := cfg.RepoPath()
	if _, err := os.Stat(repo); err != nil {
		return Status{}
	}
	if cfg.Code != nil {
		// The repository's remotes are the code's, not the ledger's.
		s := Status{Exists: true, Sessions: len(gitstore.PeekSessionIDs(repo, gitstore.InCode))}
		s.PendingRecords, s.PendingBytes = gitstore.PeekLog(repo)
		return s
	}
	s := Status{Exists: true, Sessions: len(gitstore.PeekSessionIDs(repo, gitstore.Standalone)), Remotes: remote.PeekConfig(repo)}
	s.PendingRecords, s.PendingBytes = gitstore.PeekLog(repo)
	return s
}

// The Peek functions read names from the repository at repo (a project's
// RepoPath) as Inspect does, for shell completion, which must answer at
// once and never change anything. They see what is published to plain
// Git: a session created in the last fraction of a second may still be
// only in the log.

// PeekSessionIDs lists the ids of the repository's sessions, sorted.
func PeekSessionIDs(repo string) []string { return gitstore.PeekSessionIDs(repo, gitstore.Standalone) }

// PeekBranches lists the reasoning branches of a session, sorted.
func PeekBranches(repo, sessionID string) []string {
	return gitstore.PeekBranches(repo, gitstore.Standalone, sessionID)
}

// PeekRemotes lists the names of the repository's remotes.
func PeekRemotes(repo string) []string { return remote.PeekRemotes(repo) }

// RepairLog salvages the project's damaged write-ahead log before it is
// opened (a damaged log stops the opening): every record that checks out
// is kept, the original is copied aside. It needs file storage and the
// log to exist (see gitstore.RepairLog).
func RepairLog(cfg *config.Config) (*gitstore.LogRepair, error) {
	return gitstore.RepairLog(cfg.RepoPath())
}
