package gitstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	gitconfig "github.com/go-git/go-git/v5/config"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// The engine's surface for gitstore/remote: what push, pull and the remotes
// configuration need of a store below its ledger-level methods. It is the
// one file of the package that reaches the backend for remote, so a change
// of the backend's methods is answered here. It speaks the types of
// gitstore/internal packages, which packages outside gitstore/ cannot name,
// so in practice only the packages under gitstore/ use it.
//
// None of these methods takes the store's session locks or updates its
// cached chains: a ref moved through Apply is seen by the next read of the
// chain, and a writer holding a stale view of it loses its next
// compare-and-swap and reloads (the same as for a ref moved by plain Git).

// ErrRefMoved is returned by Apply when a ref no longer holds the old value
// an update names; nothing of the batch was applied.
var ErrRefMoved = errConflict

// ErrNoConfig is returned by Config and EditConfig on a store that keeps
// no Git config.
var ErrNoConfig = errors.New("this store keeps no config")

// ReadRef returns the object id name points at, or object.ZeroHash and no
// error when the ref does not exist. It sees refs moved through the log
// and not yet flushed.
func (s *Store) ReadRef(name string) (object.Hash, error) {
	return s.be.ReadRef(context.Background(), name)
}

// ListRefs returns every ref whose name starts with prefix and its id, as
// ReadRef would read each.
func (s *Store) ListRefs(prefix string) (map[string]object.Hash, error) {
	return s.be.ListRefs(context.Background(), prefix)
}

// ReadObject returns an object's type and content; an error wrapping
// object.ErrNotFound when the store does not have it.
func (s *Store) ReadObject(id object.Hash) (object.Type, []byte, error) {
	return s.be.ReadObject(context.Background(), id)
}

// ReadTyped returns an object's content, and an error if it is missing or
// is not of type want.
func (s *Store) ReadTyped(id object.Hash, want object.Type) ([]byte, error) {
	return s.readTyped(id, want)
}

// ReadCommit reads and parses a commit.
func (s *Store) ReadCommit(id object.Hash) (*object.ParsedCommit, error) { return s.readCommit(id) }

// ReadTree reads and parses a tree; it returns its encoded bytes too.
func (s *Store) ReadTree(id object.Hash) (*object.Tree, []byte, error) {
	return s.readTreeBytes(id)
}

// Apply stores a batch's objects and moves its refs, all or nothing, by
// compare-and-swap: each update's Old must be what its ref holds
// (ZeroHash: absent), else ErrRefMoved and nothing is applied. On a disk
// store the batch is durable (in the write-ahead log) when Apply returns.
// The branch listings main's manifest is made from are dropped: a pull's
// batch may move any session's branches.
func (s *Store) Apply(ctx context.Context, b *wal.Batch) error {
	err := s.be.Apply(ctx, b)
	s.branchRefs.clear()
	return err
}

// IsAncestor reports whether anc is tip or one of its ancestors. Every
// commit it walks must be here.
func (s *Store) IsAncestor(anc, tip object.Hash) (bool, error) {
	seen := map[hash]bool{}
	queue := []hash{tip}
	for len(queue) > 0 {
		id := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if id == anc {
			return true, nil
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		c, err := s.readCommit(id)
		if err != nil {
			return false, fmt.Errorf("commit %s: %w", id, err)
		}
		queue = append(queue, c.Parents...)
	}
	return false, nil
}

// MarkAncestors adds tip and its ancestors to set; a commit the store does
// not have is skipped with its ancestors (a remote has it, but it cannot
// be walked here). Commits already in set are not walked again.
func (s *Store) MarkAncestors(tip object.Hash, set map[object.Hash]bool) error {
	queue := []hash{tip}
	for len(queue) > 0 {
		id := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if set[id] {
			continue
		}
		c, err := s.readCommit(id)
		if errors.Is(err, errNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("commit %s: %w", id, err)
		}
		set[id] = true
		queue = append(queue, c.Parents...)
	}
	return nil
}

// markAncestors is MarkAncestors, as the package's own readers call it.
func (s *Store) markAncestors(tip hash, set map[hash]bool) error { return s.MarkAncestors(tip, set) }

// TransferDir is where transfers keep their temporary packs: not
// objects/pack, whose tmp_ files a starting store removes as a killed
// flusher's leftovers; opening a disk store empties it of packs older
// than a killed transfer could still be writing.
func (s *Store) TransferDir() string { return s.tmpDir() }

func (s *Store) tmpDir() string {
	if s.disk != nil {
		return filepath.Join(s.disk.GitDir(), "thoughtbox", "transfer")
	}
	return os.TempDir()
}

// IngestPack stores a pack received from a remote and returns how many
// objects it held (-1 when unknown) and its size. On disk it is written
// whole to a temporary file, indexed, synced, and renamed into
// objects/pack (index last), so that the refs pointing into it — moved
// afterwards, with Apply — never point at objects a crash could lose. In
// memory go-git parses it into the storage.
func (s *Store) IngestPack(ctx context.Context, r io.Reader) (objects int, bytes int64, err error) {
	switch {
	case s.mem != nil:
		return s.mem.IngestPack(ctx, r)
	case s.disk != nil:
		return s.disk.IngestPack(ctx, s.tmpDir(), r)
	}
	return 0, 0, errors.New("this store cannot receive packs")
}

// Config reads the repository's Git config (remotes live there, where git
// keeps them); ErrNoConfig on a store without one.
func (s *Store) Config() (*gitconfig.Config, error) {
	switch be := s.disk; {
	case be != nil:
		data, err := os.ReadFile(filepath.Join(be.GitDir(), "config"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		cfg := gitconfig.NewConfig()
		if err := cfg.Unmarshal(data); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(be.GitDir(), "config"), err)
		}
		return cfg, nil
	case s.mem != nil:
		return s.mem.Config()
	}
	return nil, ErrNoConfig
}

// EditConfig changes the Git config atomically: on disk under git's
// config.lock (failing at once if another git or thoughtbox command holds
// it), written, synced and renamed over the config, its directory synced.
// An error from change leaves the config as it was.
func (s *Store) EditConfig(change func(*gitconfig.Config) error) error {
	switch be := s.disk; {
	case be != nil:
		path := filepath.Join(be.GitDir(), "config")
		lock := path + ".lock"
		f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("lock %s (another git or thoughtbox command may be changing it): %w", path, err)
		}
		done := false
		defer func() {
			if !done {
				f.Close()
				os.Remove(lock)
			}
		}()
		cfg, err := s.Config()
		if err != nil {
			return err
		}
		if err := change(cfg); err != nil {
			return err
		}
		data, err := cfg.Marshal()
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		if err := durable.Rename(lock, path); err != nil {
			return err
		}
		done = true
		return syncDir(be.GitDir())
	case s.mem != nil:
		return s.mem.EditConfig(change)
	}
	return ErrNoConfig
}

// The layout of what a transfer moves, as layout.go spells it.
const (
	// SessionRefPrefix starts every session's refs:
	// refs/heads/sessions/<id>/main and .../branches/<b>.
	SessionRefPrefix = "refs/heads/" + sessionsArea
	// KnowledgeRef is the knowledge zone's one ref.
	KnowledgeRef = "refs/heads/" + knowledgeArea
	// DivergedPrefix is where a pull keeps a remote's chain that was
	// extended differently here.
	DivergedPrefix = divergedPrefix
	// QuarantinePrefix is where a pull keeps incoming chains that failed
	// its checks.
	QuarantinePrefix = quarantinePrefix
)

// SessionOfRef names the session a ref belongs to ("" for another ref).
func SessionOfRef(ref string) string { return Standalone.sessionOfRef(ref) }

// NotebookOfRef names the notebook a ref holds ("" for another ref, or an
// invalid notebook id).
func NotebookOfRef(ref string) string { return Standalone.notebookOfRef(ref) }

// SharedRef reports whether push and pull move ref: a session's, a
// notebook's, the knowledge zone's or main.
func SharedRef(ref string) bool { return Standalone.shared(ref) }

// ValidSharedRef reports whether name is a ref this store would write
// itself, of the knowledge zone, a notebook or a session: what a pull
// takes from a remote, whose ref names become file names here.
func ValidSharedRef(name string) bool { return Standalone.validSharedRef(name) }

// RefOrder is a sort key that puts a session's main chain before its
// branches.
func RefOrder(ref string) string { return refOrder(ref) }

// ValidNotebookPath says why p cannot be a file or folder name in a
// notebook, or nil.
func ValidNotebookPath(p string) error { return validNotebookPath(p) }

// Slug makes s a name fit for a ref component and a file name:
// lower-case letters, digits, '-' and '.', other runs of characters made
// one '-' ("agent" when nothing is left).
func Slug(s string) string { return slug(s) }

// BlobSize returns the size of a blob, -1 for an object of another type.
func (s *Store) BlobSize(id object.Hash) (int, error) { return s.blobSize(id) }

// The same questions asked of the store's own layout: a ledger kept in a
// code repository shares the refs under refs/thoughtbox/v1/ instead, and
// never the code's branches.

// SharedRefRoot is the folder every ref a transfer moves lives under:
// refs/heads/ or refs/thoughtbox/v1/.
func (s *Store) SharedRefRoot() string { return s.lay.refRoot() }

// SessionOfRef names the session a ref of the store's layout belongs to.
func (s *Store) SessionOfRef(ref string) string { return s.lay.sessionOfRef(ref) }

// NotebookOfRef names the notebook a ref of the store's layout holds.
func (s *Store) NotebookOfRef(ref string) string { return s.lay.notebookOfRef(ref) }

// SharedRef reports whether push and pull move ref in the store's layout
// (main only in a standalone one).
func (s *Store) SharedRef(ref string) bool { return s.lay.shared(ref) }

// ValidSharedRef is ValidSharedRef in the store's layout.
func (s *Store) ValidSharedRef(name string) bool { return s.lay.validSharedRef(name) }
