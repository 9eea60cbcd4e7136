package gitstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/pack"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/refs"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/repo"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// What a pull receives stays out of the ledger's objects until the pull
// has checked it: a remote's objects that fail the checks (a tree entry
// named .git, a commit no ledger could have written) would otherwise sit in
// objects/, where `git fsck --strict` reports them although no live ref
// reaches them. So a pull stages the pack it receives in a directory of its
// own, readable through the store while it checks, then moves into the
// ledger only what the chains it accepts reach, and keeps the rest — with
// the refs of the refused chains — in a quarantine repository inside the
// ledger's Git directory, where plain git can still read it.
//
// On a memory store the pack goes straight into the storage and the
// quarantine refs stay beside the ledger's: there is no repository for git
// fsck to read.

// QuarantineDir is the quarantine repository of a ledger in gitDir: a bare
// repository whose objects/info/alternates names the ledger's objects, so
// that `git --git-dir <it> log <kept ref>` reads a refused chain down to
// the commits the ledger already had.
func QuarantineDir(gitDir string) string {
	return filepath.Join(gitDir, "thoughtbox", "quarantine.git")
}

// Staging is a pack a pull received and has not yet taken in.
type Staging struct {
	s    *Store
	fs   *repo.FS // nil on a memory store, where the pack went straight in
	dir  string
	lock *os.File
	set  *pack.Set
	name string // pack-<checksum>, "" for an empty pack
}

// StagePack receives a pack from a remote into a staging directory under
// the transfer directory and makes its objects readable through the store
// (ReadObject and every reader above it) without making them part of the
// repository. The caller ends with Accept and, if it refused anything,
// Quarantine, then always Close.
func (s *Store) StagePack(ctx context.Context, r io.Reader) (*Staging, int, int64, error) {
	fs := s.disk
	if fs == nil {
		objects, bytes, err := s.IngestPack(ctx, r)
		return &Staging{s: s}, objects, bytes, err
	}
	cleanStages(s.tmpDir())
	if err := os.MkdirAll(s.tmpDir(), 0o755); err != nil {
		return nil, 0, 0, err
	}
	dir, err := os.MkdirTemp(s.tmpDir(), "stage-")
	if err != nil {
		return nil, 0, 0, err
	}
	st := &Staging{s: s, fs: fs, dir: dir}
	// Held while the pull runs: another process's cleanStages leaves a
	// locked staging directory alone.
	if st.lock, err = os.Create(filepath.Join(dir, "lock")); err == nil {
		err = durable.Lock(ctx, st.lock, nil, 0)
	}
	if err != nil {
		st.Close()
		return nil, 0, 0, err
	}
	objects, bytes, err := pack.Install(dir, dir, r)
	if err != nil {
		st.Close()
		return nil, objects, bytes, err
	}
	if bytes > 0 {
		st.set = pack.NewSet(dir)
		if err := st.set.Refresh(); err != nil {
			st.Close()
			return nil, objects, bytes, err
		}
		for _, e := range st.set.Packs() {
			st.name = e.Name()
		}
		fs.Stage(st.set)
	}
	return st, objects, bytes, nil
}

// NoStaging is the Staging of a pull that received no pack: what it
// refuses is kept all the same, in the quarantine repository.
func (s *Store) NoStaging() *Staging {
	fs := s.disk
	return &Staging{s: s, fs: fs}
}

// cleanStages removes staging directories that killed pulls left: those
// old enough whose lock nobody holds.
func cleanStages(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "stage-") {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < pack.TransferLeftoverAge {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if f, err := os.Open(filepath.Join(path, "lock")); err == nil {
			ok, _ := durable.TryLock(f, nil)
			f.Close()
			if !ok {
				continue
			}
		}
		os.RemoveAll(path)
	}
}

// Accept makes part of the ledger what the pull takes in: with whole, the
// pack as it came (nothing was refused); else the objects reachable from
// tips that the ledger lacks, written into a pack of their own, so that
// nothing only a refused chain reaches enters objects/. Only then may refs
// point at tips.
func (st *Staging) Accept(ctx context.Context, tips []object.Hash, whole bool) error {
	if st.fs == nil || st.set == nil {
		return nil
	}
	packDir := filepath.Join(st.fs.GitDir(), "objects", "pack")
	if whole {
		// Unstaged and closed first: Windows does not rename open files.
		// Nothing reads the staged objects meanwhile but this pull.
		st.fs.Unstage(st.set)
		st.set.Close()
		st.set = nil
		for _, ext := range []string{".pack", ".idx"} { // the index last
			if err := durable.Rename(filepath.Join(st.dir, st.name+ext), filepath.Join(packDir, st.name+ext)); err != nil {
				return err
			}
		}
		if err := durable.SyncDir(packDir); err != nil {
			return err
		}
		st.name = ""
		return st.fs.Packs().Refresh()
	}
	stream, err := pack.NewStream(st.s.tmpDir())
	if err != nil {
		return err
	}
	defer stream.Discard()
	seen := map[object.Hash]bool{}
	var add func(id object.Hash) error
	add = func(id object.Hash) error {
		if seen[id] {
			return nil
		}
		seen[id] = true
		if st.fs.Has(id) {
			return nil // the ledger has it, and what it reaches
		}
		t, data, err := st.s.ReadObject(id)
		if err != nil {
			return fmt.Errorf("object %s: %w", id, err)
		}
		var next []object.Hash
		switch t {
		case typeCommit:
			c, err := object.ParseCommit(data)
			if err != nil {
				return fmt.Errorf("commit %s: %w", id, err)
			}
			next = append(append(next, c.Tree), c.Parents...)
		case typeTree:
			tr, err := object.ParseTree(data)
			if err != nil {
				return fmt.Errorf("tree %s: %w", id, err)
			}
			for _, e := range tr.Entries {
				next = append(next, e.ID)
			}
		}
		if err := stream.Add(id, t, data, zeroHash, nil); err != nil {
			return err
		}
		for _, n := range next {
			if err := add(n); err != nil {
				return err
			}
		}
		return ctx.Err()
	}
	for _, tip := range tips {
		if err := add(tip); err != nil {
			return err
		}
	}
	if stream.Count == 0 {
		return nil
	}
	f, _, err := stream.Finish()
	if err != nil {
		return err
	}
	if _, _, err := pack.Install(st.s.tmpDir(), packDir, f); err != nil {
		return err
	}
	return st.fs.Packs().Refresh()
}

// Quarantine keeps the refused chains: their refs (names under
// refs/thoughtbox/quarantine/) and the staged pack go into the quarantine
// repository, whose path it returns. On a memory store the refs are set in
// the store itself and the path is "".
func (st *Staging) Quarantine(ctx context.Context, kept map[string]object.Hash) (string, error) {
	if len(kept) == 0 {
		return "", nil
	}
	if st.fs == nil {
		b := &batch{}
		for name, tip := range kept {
			cur, err := st.s.ReadRef(name)
			if err != nil {
				return "", err
			}
			if cur != tip {
				b.Updates = append(b.Updates, refUpdate{Name: name, Old: cur, New: tip})
			}
		}
		if len(b.Updates) == 0 {
			return "", nil
		}
		return "", st.s.Apply(ctx, b)
	}
	qdir := QuarantineDir(st.fs.GitDir())
	if err := initQuarantine(qdir); err != nil {
		return "", fmt.Errorf("the quarantine repository %s: %w", qdir, err)
	}
	// A refused chain pulled again is fetched again (its objects are not
	// the ledger's): when every ref already holds its tip here, the pack
	// is not kept a second time.
	known := true
	for name, tip := range kept {
		if cur, err := refs.Read(qdir, name); err != nil || cur != tip {
			known = false
		}
	}
	if st.set != nil && !known {
		packDir := filepath.Join(qdir, "objects", "pack")
		if _, err := os.Stat(filepath.Join(packDir, st.name+".idx")); err != nil {
			st.fs.Unstage(st.set)
			st.set.Close()
			st.set = nil
			for _, ext := range []string{".pack", ".idx"} {
				if err := durable.Rename(filepath.Join(st.dir, st.name+ext), filepath.Join(packDir, st.name+ext)); err != nil {
					return "", err
				}
			}
			if err := durable.SyncDir(packDir); err != nil {
				return "", err
			}
		}
	}
	for name, tip := range kept {
		if _, err := refs.Write(qdir, name, tip); err != nil {
			return "", fmt.Errorf("%s in %s: %w", name, qdir, err)
		}
	}
	return qdir, nil
}

// initQuarantine makes dir a bare repository that borrows the ledger's
// objects (two levels up from its own objects directory), if it is not one
// already.
func initQuarantine(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "objects", "info", "alternates")); err == nil {
		return nil
	}
	for _, sub := range []string{"objects/pack", "objects/info", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(sub)), 0o755); err != nil {
			return err
		}
	}
	files := []struct{ name, content string }{
		{"HEAD", "ref: refs/heads/main\n"},
		{"config", "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"},
		{"description", "Chains a pull refused to take into the ledger this folder is in; 'git log' reads them here.\n"},
		// Relative to this objects directory, so the data directory may
		// move; written last, as what marks the repository finished.
		{"objects/info/alternates", "../../../objects\n"},
	}
	for _, f := range files {
		path := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := durable.CreateWhole(path, []byte(f.content)); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	return nil
}

// Close removes what is left of the staging directory and stops reading
// from it.
func (st *Staging) Close() {
	if st == nil || st.fs == nil || st.dir == "" {
		return
	}
	if st.set != nil {
		st.fs.Unstage(st.set)
		st.set.Close()
		st.set = nil
	}
	if st.lock != nil {
		st.lock.Close()
	}
	os.RemoveAll(st.dir)
}
