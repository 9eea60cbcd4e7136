package why

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// LinkStore is the part of the ledger's store that keeps links of
// sessions to commits (project.Project over gitstore.Store).
type LinkStore interface {
	AddLinks(ctx context.Context, session string, links []ledger.CodeLink) (int, error)
	ReadLinks(ctx context.Context, session string) ([]ledger.CodeLink, string, error)
	LinkTips(ctx context.Context) (map[string]string, error)
}

// The link index is derived and local: CommonDir/thoughtbox/links-index.json
// (coderepo.Repo.LinkIndexPath) holds every session's links as of its
// links ref's tip. Listing the links refs walks every session's ref
// folder (tens of milliseconds with ten thousand sessions), so a why does
// not: the file is trusted while it is younger than indexCheckAge since
// its last check against the refs. Every write of links keeps it true:
// the drain and relink re-read the sessions they wrote to, under the
// drain lock, and a pull, which may bring links, removes it
// (project.Pull). A check lists the tips and re-reads only the sessions
// whose tip moved or is new; a session gone (deleted) leaves it. Removing
// the file costs one rebuild. It is never pushed: it is under
// .git/thoughtbox/, outside every ref.

// indexVersion changes when the file's shape does; another version is
// rebuilt.
const indexVersion = 2

// indexCheckAge is how long the index file is trusted without listing
// the links refs: links that arrive behind our back (a git fetch of
// refs/thoughtbox/ by hand) show within it.
const indexCheckAge = time.Hour

type indexFile struct {
	Version int `json:"version"`
	// Checked is when the file was last compared with the links refs
	// (Unix seconds).
	Checked  int64                   `json:"checked"`
	Sessions map[string]indexSession `json:"sessions"`
}

type indexSession struct {
	Tip   string            `json:"tip"`
	Links []ledger.CodeLink `json:"links"`
}

// linkIndex answers which sessions a commit is linked to, and which
// linked commits have a patch id.
type linkIndex struct {
	byCommit map[string][]ledger.CodeLink
	byPatch  map[string][]string
	// byFile lists the linked commits that changed a file.
	byFile map[string][]string
}

func (a *Asker) indexPath() string { return a.Repo.LinkIndexPath() }

func (a *Asker) readIndexFile() indexFile {
	f := indexFile{}
	if data, err := os.ReadFile(a.indexPath()); err == nil {
		if json.Unmarshal(data, &f) != nil || f.Version != indexVersion {
			f = indexFile{}
		}
	}
	if f.Sessions == nil {
		f.Sessions = map[string]indexSession{}
	}
	return f
}

// index returns the link index (nil, and no error, when the Asker has no
// LinkStore): the file as it is while it is fresh, else brought up to
// date with the links refs.
func (a *Asker) index(ctx context.Context) (*linkIndex, error) {
	if a.Links == nil {
		return nil, nil
	}
	if a.idx != nil {
		return a.idx, nil
	}
	f := a.readIndexFile()
	if f.Version == indexVersion && time.Since(time.Unix(f.Checked, 0)) < indexCheckAge {
		a.idx = buildIndex(&f)
		return a.idx, nil
	}
	return a.checkIndex(ctx, f)
}

// checkIndex brings f up to date with the links refs, and writes it when
// no drain holds the lock (one that does writes what it knows).
func (a *Asker) checkIndex(ctx context.Context, f indexFile) (*linkIndex, error) {
	tips, err := a.Links.LinkTips(ctx)
	if err != nil {
		return nil, err
	}
	for id := range f.Sessions {
		if _, ok := tips[id]; !ok {
			delete(f.Sessions, id)
		}
	}
	for id, tip := range tips {
		if f.Sessions[id].Tip == tip {
			continue
		}
		links, now, err := a.Links.ReadLinks(ctx, id)
		if err != nil {
			return nil, err
		}
		f.Sessions[id] = indexSession{Tip: now, Links: links}
	}
	f.Version, f.Checked = indexVersion, time.Now().Unix()
	write := a.locked
	if !write {
		if unlock, ok, err := a.Repo.LockLinks(ctx, false); err == nil && ok {
			defer unlock()
			write = true
		}
	}
	if write {
		if err := writeIndex(a.indexPath(), &f); err != nil && !errors.Is(err, os.ErrPermission) {
			return nil, err
		}
	}
	a.idx = buildIndex(&f)
	return a.idx, nil
}

// indexWrote brings the index file up to date with the links of the
// sessions just written to; the caller holds the drain lock. A file
// that was not fresh is checked whole instead.
func (a *Asker) indexWrote(ctx context.Context, sessions []string) error {
	a.idx = nil
	f := a.readIndexFile()
	if f.Version != indexVersion || time.Since(time.Unix(f.Checked, 0)) >= indexCheckAge {
		return os.Remove(a.indexPath()) // the next read checks it whole
	}
	for _, id := range sessions {
		links, tip, err := a.Links.ReadLinks(ctx, id)
		if err != nil {
			return err
		}
		f.Sessions[id] = indexSession{Tip: tip, Links: links}
	}
	return writeIndex(a.indexPath(), &f)
}

func buildIndex(f *indexFile) *linkIndex {
	idx := &linkIndex{byCommit: map[string][]ledger.CodeLink{}, byPatch: map[string][]string{}, byFile: map[string][]string{}}
	for _, s := range f.Sessions {
		idx.addAll(s.Links)
	}
	return idx
}

func (idx *linkIndex) addAll(links []ledger.CodeLink) {
	for _, l := range links {
		first := len(idx.byCommit[l.Commit]) == 0
		idx.byCommit[l.Commit] = append(idx.byCommit[l.Commit], l)
		if !first {
			continue
		}
		if l.PatchID != "" {
			idx.byPatch[l.PatchID] = append(idx.byPatch[l.PatchID], l.Commit)
		}
		for _, file := range l.Files {
			idx.byFile[file] = append(idx.byFile[file], l.Commit)
		}
	}
}

// sessionsOf lists the sessions commit is linked to, with the link.
func (idx *linkIndex) sessionsOf(commit string) []ledger.CodeLink {
	if idx == nil {
		return nil
	}
	return idx.byCommit[commit]
}

// writeIndex replaces the index file whole; it is a cache, so it is not
// synced.
func writeIndex(path string, f *indexFile) error {
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
