package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/pack"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/refs"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// The built-in file transport runs go-git's Git server in this process.
// Left alone, that server writes a remote's ref files in place and its
// received pack without fsync, so a push killed at the wrong moment leaves
// an empty ref file that breaks every later push and pull. builtinFile puts
// a storer in front of it that does what git's receive-pack does:
//
//   - the received pack and its index are written to a temporary file,
//     fsync'd, renamed into objects/pack and the directory fsync'd before
//     any ref moves (installPack);
//   - a ref moves through <ref>.lock created exclusively, written, fsync'd
//     and renamed, then its directory is fsync'd (writeDiskRefWith), and
//     only if it still holds the value the pusher saw (compare-and-swap
//     under the lock);
//   - refs are listed from loose files and packed-refs by our own reader,
//     which skips *.lock files and damaged ref files rather than failing.
//
// Receivers of ours serialize on an flock on <gitdir>/thoughtbox/receive.flock,
// which the kernel drops if the process dies. Holding it, a receiver may
// conclude that leftovers are dead: it empties its temporary directory, and
// a <ref>.lock it meets belongs either to a receiver of ours that was killed
// or to a git process, which holds a ref lock for milliseconds. So it waits
// for the lock to go and, once the lock file is staleRefLockAge old, removes
// it and carries on. git itself refuses the ref instead; we do not, because
// a killed push of ours would otherwise block that session on the remote
// until someone removed the file by hand.

// staleRefLockAge is how long a <ref>.lock may stand before a receiver
// holding the receive flock takes it for a dead writer's.
const staleRefLockAge = 5 * time.Second

// builtinFile is the transport for file remotes served in-process.
type builtinFile struct{}

func (builtinFile) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	st, err := loadReceiver(ep)
	if err != nil {
		return nil, err
	}
	return server.NewClient(fixedLoader{st}).NewUploadPackSession(ep, auth)
}

func (builtinFile) NewReceivePackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.ReceivePackSession, error) {
	st, err := loadReceiver(ep)
	if err != nil {
		return nil, err
	}
	sess, err := server.NewClient(fixedLoader{st}).NewReceivePackSession(ep, auth)
	if err != nil {
		return nil, err
	}
	return &receiveSession{ReceivePackSession: sess, st: st}, nil
}

type fixedLoader struct{ st storer.Storer }

func (l fixedLoader) Load(*transport.Endpoint) (storer.Storer, error) { return l.st, nil }

// loadReceiver opens the repository at a file endpoint: a bare repository
// or a work tree's .git.
func loadReceiver(ep *transport.Endpoint) (*receiveStorer, error) {
	dir := ep.Path
	if _, err := os.Stat(filepath.Join(dir, "config")); err != nil {
		dir = filepath.Join(dir, ".git")
		if _, err := os.Stat(filepath.Join(dir, "config")); err != nil {
			return nil, transport.ErrRepositoryNotFound
		}
	}
	return &receiveStorer{
		Storage: filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault()),
		gitDir:  dir,
		expect:  map[plumbing.ReferenceName]hash{},
	}, nil
}

// receiveSession takes the receive flock around go-git's ReceivePack and
// tells the storer which old value each ref must still have.
type receiveSession struct {
	transport.ReceivePackSession
	st *receiveStorer
}

func (r *receiveSession) ReceivePack(ctx context.Context, req *packp.ReferenceUpdateRequest) (*packp.ReportStatus, error) {
	release, err := r.st.lock()
	if err != nil {
		return nil, err
	}
	defer release()
	for _, c := range req.Commands {
		r.st.expect[c.Name] = hash(c.Old)
	}
	return r.ReceivePackSession.ReceivePack(ctx, req)
}

// receiveStorer is go-git's filesystem storage with refs and received packs
// handled git's way (see the top of this file).
type receiveStorer struct {
	*filesystem.Storage
	gitDir string
	expect map[plumbing.ReferenceName]hash
}

func (st *receiveStorer) tmpDir() string { return filepath.Join(st.gitDir, "thoughtbox", "receive") }

// lock takes the receive flock and removes what killed receivers left in
// the temporary directory.
func (st *receiveStorer) lock() (func(), error) {
	dir := filepath.Join(st.gitDir, "thoughtbox")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("remote %s: %w", st.gitDir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "receive.flock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("remote %s: %w", st.gitDir, err)
	}
	// Receivers queue here; a killed one's lock goes with its process.
	if err := durable.Lock(context.Background(), f, nil, 2*time.Minute); err != nil {
		f.Close()
		return nil, fmt.Errorf("remote %s: lock %s: %w", st.gitDir, f.Name(), err)
	}
	if entries, err := os.ReadDir(st.tmpDir()); err == nil {
		for _, e := range entries {
			os.Remove(filepath.Join(st.tmpDir(), e.Name()))
		}
	}
	return func() { durable.Unlock(f); f.Close() }, nil
}

// checkRefName refuses a ref name that could name a file outside refs/ or
// that git would not accept (git check-ref-format's rules, simplified to
// refuse more, never less).
func checkRefName(name string) error {
	bad := func(why string) error { return fmt.Errorf("ref name %q: %s", name, why) }
	if !strings.HasPrefix(name, "refs/") {
		return bad("expected a name under refs/")
	}
	for _, part := range strings.Split(name, "/") {
		switch {
		case part == "":
			return bad("empty path component")
		case strings.HasPrefix(part, "."), strings.HasSuffix(part, ".lock"):
			return bad("a component starts with '.' or ends with '.lock'")
		}
	}
	if strings.Contains(name, "..") || strings.Contains(name, "@{") {
		return bad("contains '..' or '@{'")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return bad("contains a character git refuses in ref names")
		}
	}
	return nil
}

func (st *receiveStorer) Reference(name plumbing.ReferenceName) (*plumbing.Reference, error) {
	if name == plumbing.HEAD {
		return st.Storage.Reference(name)
	}
	if err := checkRefName(name.String()); err != nil {
		return nil, plumbing.ErrReferenceNotFound
	}
	h, err := refs.Read(st.gitDir, name.String())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if h == zeroHash {
		return nil, plumbing.ErrReferenceNotFound
	}
	return plumbing.NewHashReference(name, plumbing.Hash(h)), nil
}

func (st *receiveStorer) IterReferences() (storer.ReferenceIter, error) {
	refs, err := refs.List(st.gitDir, "refs/")
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(refs))
	for n := range refs {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*plumbing.Reference, 0, len(names)+1)
	if head, err := st.Storage.Reference(plumbing.HEAD); err == nil {
		out = append(out, head)
	}
	for _, n := range names {
		out = append(out, plumbing.NewHashReference(plumbing.ReferenceName(n), plumbing.Hash(refs[n])))
	}
	return storer.NewReferenceSliceIter(out), nil
}

// busyRef waits for a ref lock held by someone else to go, and removes it
// once it is staleRefLockAge old (the caller holds the receive flock).
func (st *receiveStorer) busyRef(lock string) error {
	fi, err := os.Stat(lock)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if time.Since(fi.ModTime()) >= staleRefLockAge {
		if err := os.Remove(lock); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove stale ref lock %s: %w", lock, err)
		}
		return nil
	}
	time.Sleep(50 * time.Millisecond)
	return nil
}

// moveRef points name at id if it still holds old, under its lock file.
func (st *receiveStorer) moveRef(name plumbing.ReferenceName, id, old hash) error {
	if err := checkRefName(name.String()); err != nil {
		return err
	}
	dirs, err := refs.WriteWith(st.gitDir, name.String(), id, refs.LockPolicy{
		Busy: st.busyRef,
		Check: func() error {
			cur, err := refs.Read(st.gitDir, name.String())
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if cur != old {
				return fmt.Errorf("%s moved meanwhile (expected %s, found %s): fetch first", name, old, cur)
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if err := durable.SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

func (st *receiveStorer) SetReference(ref *plumbing.Reference) error {
	if ref.Type() != plumbing.HashReference {
		return fmt.Errorf("ref %s: the built-in receiver writes only refs that hold an object id", ref.Name())
	}
	return st.moveRef(ref.Name(), hash(ref.Hash()), st.expect[ref.Name()])
}

func (st *receiveStorer) CheckAndSetReference(ref, old *plumbing.Reference) error {
	if ref.Type() != plumbing.HashReference {
		return fmt.Errorf("ref %s: the built-in receiver writes only refs that hold an object id", ref.Name())
	}
	want := st.expect[ref.Name()]
	if old != nil {
		want = hash(old.Hash())
	}
	return st.moveRef(ref.Name(), hash(ref.Hash()), want)
}

// RemoveReference deletes a ref git's way (refs.DeleteWith): under
// <ref>.lock, packed-refs is rewritten without it through
// packed-refs.lock, then the loose file goes.
func (st *receiveStorer) RemoveReference(name plumbing.ReferenceName) error {
	if err := checkRefName(name.String()); err != nil {
		return err
	}
	dir, err := refs.DeleteWith(st.gitDir, name.String(), refs.LockPolicy{
		Busy: st.busyRef,
		Check: func() error {
			want, ok := st.expect[name]
			if !ok {
				return nil
			}
			cur, err := refs.Read(st.gitDir, name.String())
			if err != nil {
				return err
			}
			if cur != want {
				return fmt.Errorf("%s moved meanwhile (expected %s, found %s): fetch first", name, want, cur)
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	return durable.SyncDir(dir)
}

// PackfileWriter receives a pushed pack into a temporary file; Close
// installs it (installPack) before go-git's server moves any ref.
func (st *receiveStorer) PackfileWriter() (io.WriteCloser, error) {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, _, err := pack.Install(st.tmpDir(), filepath.Join(st.gitDir, "objects", "pack"), pr)
		pr.CloseWithError(err)
		done <- err
	}()
	return &receivePackWriter{pw: pw, done: done}, nil
}

type receivePackWriter struct {
	pw   *io.PipeWriter
	done chan error
}

func (w *receivePackWriter) Write(p []byte) (int, error) { return w.pw.Write(p) }

func (w *receivePackWriter) Close() error {
	w.pw.Close()
	return <-w.done
}
