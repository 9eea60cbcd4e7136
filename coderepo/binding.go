package coderepo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// BindKey is the .git/config setting that names the one URL this
// repository's reasoning may be pushed to. It is read from the
// repository's own config only (git config --local): a value in a global
// or system config would bind every repository on the machine, and a
// clone or fork starts without one.
const BindKey = "thoughtbox.remote"

// ErrNoGitRemote is returned for a remote name the repository does not
// have.
var ErrNoGitRemote = errors.New("no such git remote")

// Binding is the URL the repository's reasoning may go to ("" when none
// is bound).
func (r *Repo) Binding(ctx context.Context) (string, error) {
	out, err := r.git(ctx, "config", "--local", "--get", BindKey)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return "", nil // unset
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// Bind records url as the binding, replacing any other.
func (r *Repo) Bind(ctx context.Context, url string) error {
	_, err := r.git(ctx, "config", "--local", "--replace-all", BindKey, url)
	return err
}

// Unbind removes the binding and says whether there was one.
func (r *Repo) Unbind(ctx context.Context) (bool, error) {
	cur, err := r.Binding(ctx)
	if err != nil || cur == "" {
		return false, err
	}
	_, err = r.git(ctx, "config", "--local", "--unset-all", BindKey)
	return err == nil, err
}

// RemoteURLs reads a git remote's fetch URLs (remote.<name>.url) and the
// URLs git pushes to: its remote.<name>.pushurl values, or the fetch URLs
// when it has none. A name the repository has no url for is
// ErrNoGitRemote.
func (r *Repo) RemoteURLs(ctx context.Context, name string) (fetch, push []string, err error) {
	if strings.HasPrefix(name, "-") || strings.ContainsAny(name, "\n=") {
		return nil, nil, fmt.Errorf("remote %q: %w", name, ErrNoGitRemote)
	}
	fetch, err = r.configAll(ctx, "remote."+name+".url")
	if err != nil {
		return nil, nil, err
	}
	if len(fetch) == 0 {
		return nil, nil, fmt.Errorf("remote %q of %s: %w (see 'git remote -v')", name, r.Worktree, ErrNoGitRemote)
	}
	push, err = r.configAll(ctx, "remote."+name+".pushurl")
	if err != nil {
		return nil, nil, err
	}
	if len(push) == 0 {
		push = fetch
	}
	return fetch, push, nil
}

// configAll reads every value of a key from the config git reads
// (remotes may be set globally through includes); none is not an error.
func (r *Repo) configAll(ctx context.Context, key string) ([]string, error) {
	out, err := r.git(ctx, "config", "--get-all", key)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var vals []string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			vals = append(vals, l)
		}
	}
	return vals, nil
}

// privateFile lists the repository's private sessions, one id a line. It
// sits beside the engine's files in the common directory, outside every
// ref: nothing a push sends can carry it, and all worktrees see it.
func (r *Repo) privateFile() string {
	return filepath.Join(r.CommonDir, "thoughtbox", "private-sessions")
}

// PrivateSessions lists the sessions marked private, in the order they
// were marked.
func (r *Repo) PrivateSessions() ([]string, error) { return PrivateSessionsIn(r.CommonDir) }

// PrivateSessionsIn is PrivateSessions for a repository's common
// directory.
func PrivateSessionsIn(commonDir string) ([]string, error) {
	f, err := os.Open(filepath.Join(commonDir, "thoughtbox", "private-sessions"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if id := strings.TrimSpace(sc.Text()); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, sc.Err()
}

// SetPrivate marks a session private (or not) and says whether that
// changed anything. The list is replaced whole (written aside, synced,
// renamed): a crash leaves the old list or the new one, never a session
// half-marked.
func (r *Repo) SetPrivate(id string, private bool) (changed bool, err error) {
	ids, err := r.PrivateSessions()
	if err != nil {
		return false, err
	}
	if slices.Contains(ids, id) == private {
		return false, nil
	}
	if private {
		ids = append(ids, id)
	} else {
		ids = slices.DeleteFunc(ids, func(s string) bool { return s == id })
	}
	path := r.privateFile()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	var b strings.Builder
	for _, s := range ids {
		b.WriteString(s + "\n")
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".private-*")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(b.String())
	if err == nil {
		err = durable.Datasync(tmp)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = durable.Rename(tmp.Name(), path)
	}
	return err == nil, err
}
