package gitstore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Refs on disk are read and written here rather than through go-git, because
// go-git rewrites a ref file in place (a crash leaves it empty) and ignores
// the <ref>.lock files that git uses. We write refs the way git does: create
// <ref>.lock exclusively, write, fsync, rename over the ref.

// readDiskRef returns a ref's value from a loose ref file or packed-refs;
// zeroHash when the ref does not exist.
func readDiskRef(gitDir, name string) (hash, error) {
	data, err := os.ReadFile(filepath.Join(gitDir, filepath.FromSlash(name)))
	switch {
	case err == nil:
		return parseHash(strings.TrimSpace(string(data)))
	case errors.Is(err, fs.ErrNotExist), isNotDir(err):
	default:
		return zeroHash, err
	}
	packed, err := readPackedRefs(gitDir)
	if err != nil {
		return zeroHash, err
	}
	return packed[name], nil
}

func isNotDir(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not a directory")
}

// readPackedRefs parses the packed-refs file, if any.
func readPackedRefs(gitDir string) (map[string]hash, error) {
	data, err := os.ReadFile(filepath.Join(gitDir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]hash{}, nil
	}
	if err != nil {
		return nil, err
	}
	refs := map[string]hash{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		id, name, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		h, err := parseHash(id)
		if err != nil {
			return nil, fmt.Errorf("packed-refs: %w", err)
		}
		refs[name] = h
	}
	return refs, sc.Err()
}

// listDiskRefs returns every ref under prefix (e.g. "refs/heads/sessions/"),
// loose refs overriding packed ones.
func listDiskRefs(gitDir, prefix string) (map[string]hash, error) {
	packed, err := readPackedRefs(gitDir)
	if err != nil {
		return nil, err
	}
	refs := map[string]hash{}
	for name, h := range packed {
		if strings.HasPrefix(name, prefix) {
			refs[name] = h
		}
	}
	root := filepath.Join(gitDir, filepath.FromSlash(prefix))
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasSuffix(path, ".lock") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(gitDir, path)
		h, err := parseHash(strings.TrimSpace(string(data)))
		if err != nil {
			// An empty or damaged ref file is reported by verify, not here.
			return nil
		}
		refs[filepath.ToSlash(rel)] = h
		return nil
	})
	return refs, err
}

// writeDiskRef points a loose ref at id, git's way. It returns the
// directories whose entries changed, which the caller must fsync.
func writeDiskRef(gitDir, name string, id hash) ([]string, error) {
	path := filepath.Join(gitDir, filepath.FromSlash(name))
	dir := filepath.Dir(path)
	var created []string
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		// remember which levels are new: their parents must be synced too
		for d := dir; ; d = filepath.Dir(d) {
			if _, err := os.Stat(d); err == nil {
				created = append(created, d)
				break
			}
			created = append(created, d)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock ref %s: %w", name, err)
	}
	_, err = f.WriteString(id.String() + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(lock, path)
	}
	if err != nil {
		os.Remove(lock)
		return nil, fmt.Errorf("write ref %s: %w", name, err)
	}
	return append(created, dir), nil
}
