// Package coderepo finds the code repository (a Git worktree) a directory
// belongs to, and keeps the little Thoughtbox records about it outside
// the ledger: whether the ledger lives there (thoughtbox.enabled in the
// repository's own .git/config, never a committed file that forks would
// inherit), and each worktree's active session.
//
// It asks the git CLI where things are (git rev-parse), so that linked
// worktrees, GIT_DIR and core.hooksPath mean what they mean to git:
//
//	r, err := coderepo.Find(ctx, dir)
//	if errors.Is(err, coderepo.ErrNotARepository) { … standalone … }
//	on, err := r.Enabled(ctx)
//
// The ledger itself lives in the repository's common directory
// (CommonDir): objects and refs beside git's, the engine's files under
// CommonDir/thoughtbox. What belongs to one worktree (its active session)
// lives under that worktree's own GitDir/thoughtbox.
package coderepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// ErrNotARepository is returned by Find when the directory is in no Git
// worktree (or git is not installed).
var ErrNotARepository = errors.New("not in a git worktree")

// ErrUnsupported is returned by Enable for a repository whose format this
// engine cannot write (SHA-256 objects, reftable refs, a bare repository).
var ErrUnsupported = errors.New("repository format not supported")

// ConfigKey is the .git/config setting enable writes.
const ConfigKey = "thoughtbox.enabled"

// Repo is a worktree of a code repository.
type Repo struct {
	// Worktree is the worktree's top folder.
	Worktree string
	// GitDir is this worktree's own git folder (.git for the main
	// worktree, .git/worktrees/<name> for a linked one).
	GitDir string
	// CommonDir is the folder every worktree shares: objects, refs,
	// config, and the ledger's engine files (CommonDir/thoughtbox).
	CommonDir string
}

// Find returns the worktree dir is in.
func Find(ctx context.Context, dir string) (*Repo, error) {
	out, err := gitOutput(ctx, dir, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir", "--git-common-dir")
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) || errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("%s: %w", dir, ErrNotARepository)
		}
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 3 || lines[0] == "" {
		// A bare repository has no top level: nothing to keep reasoning
		// next to.
		return nil, fmt.Errorf("%s: %w", dir, ErrNotARepository)
	}
	return &Repo{Worktree: filepath.Clean(lines[0]), GitDir: filepath.Clean(lines[1]), CommonDir: filepath.Clean(lines[2])}, nil
}

// Open is Find for a path the user named (--repo): it must be in a
// worktree.
func Open(ctx context.Context, path string) (*Repo, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", path)
	}
	return Find(ctx, abs)
}

// Enabled reports whether the repository keeps a Thoughtbox ledger.
func (r *Repo) Enabled(ctx context.Context) (bool, error) {
	out, err := r.git(ctx, "config", "--local", "--type=bool", "--get", ConfigKey)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return false, nil // unset
	}
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(out) == "true", nil
}

// Enable records in .git/config that the repository keeps the ledger, and
// says whether that changed anything. A repository whose object or ref
// format the engine cannot write is refused with ErrUnsupported.
func (r *Repo) Enable(ctx context.Context) (changed bool, err error) {
	if err := r.checkFormat(ctx); err != nil {
		return false, err
	}
	on, err := r.Enabled(ctx)
	if err != nil || on {
		return false, err
	}
	if _, err := r.git(ctx, "config", "--local", ConfigKey, "true"); err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Join(r.CommonDir, "thoughtbox"), 0o755); err != nil {
		return false, err
	}
	return true, nil
}

// Disable removes the setting Enable wrote; the reasoning stays in the
// repository, and enabling again finds it.
func (r *Repo) Disable(ctx context.Context) (changed bool, err error) {
	on, err := r.Enabled(ctx)
	if err != nil || !on {
		// A value such as "false" is left as the user wrote it.
		return false, err
	}
	if _, err := r.git(ctx, "config", "--local", "--unset", ConfigKey); err != nil {
		return false, err
	}
	return true, nil
}

func (r *Repo) checkFormat(ctx context.Context) error {
	format, err := r.git(ctx, "rev-parse", "--show-object-format")
	if err == nil && strings.TrimSpace(format) != "sha1" {
		return fmt.Errorf("%s uses %s object names; Thoughtbox writes SHA-1 objects only: %w", r.Worktree, strings.TrimSpace(format), ErrUnsupported)
	}
	if refs, err := r.git(ctx, "config", "--local", "--get", "extensions.refstorage"); err == nil && strings.TrimSpace(refs) != "files" {
		return fmt.Errorf("%s keeps its refs in %s; Thoughtbox writes the files format only: %w", r.Worktree, strings.TrimSpace(refs), ErrUnsupported)
	}
	return nil
}

// activeFile is the worktree's active-session file: one session id and a
// newline. The prepare-commit-msg hook reads it and nothing else.
func (r *Repo) activeFile() string { return filepath.Join(r.GitDir, "thoughtbox", "active-session") }

// ActiveSession is the worktree's active session ("" when none).
func (r *Repo) ActiveSession() (string, error) {
	data, err := os.ReadFile(r.activeFile())
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	return strings.TrimSpace(string(data)), err
}

// SetActiveSession makes id the worktree's active session. The file is
// replaced whole (written aside, renamed), so a hook never reads half an
// id; it is not synced: losing it to a crash loses only the trailer of
// the next commit.
func (r *Repo) SetActiveSession(id string) error {
	if cur, err := r.ActiveSession(); err == nil && cur == id {
		return nil // most thoughts go to the active session: no write
	}
	path := r.activeFile()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		return err
	}
	return durable.Rename(tmp, path)
}

func (r *Repo) git(ctx context.Context, args ...string) (string, error) {
	return gitOutput(ctx, r.Worktree, args...)
}

// gitOutput runs git in dir and returns its stdout; a failure carries
// git's stderr.
func gitOutput(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), &gitError{args: args, stderr: strings.TrimSpace(stderr.String()), err: err}
		}
		return "", err
	}
	return string(out), nil
}

// gitError is a git command that exited with a failure.
type gitError struct {
	args   []string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	if e.stderr == "" {
		return fmt.Sprintf("git %s: %v", strings.Join(e.args, " "), e.err)
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.args, " "), e.stderr)
}

func (e *gitError) Unwrap() error { return e.err }

// ErrNoCommit is returned by ResolveCommit for a name that is no commit
// of the repository.
var ErrNoCommit = errors.New("no such commit")

// ResolveCommit expands a commit name (an abbreviated id, a branch, HEAD)
// to its full id.
func (r *Repo) ResolveCommit(ctx context.Context, name string) (string, error) {
	if strings.HasPrefix(name, "-") {
		return "", fmt.Errorf("%q: %w", name, ErrNoCommit)
	}
	out, err := r.git(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", name+"^{commit}")
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return "", fmt.Errorf("%q in %s: %w", name, r.Worktree, ErrNoCommit)
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// RelPath turns a path given in dir (relative to it, or absolute) into
// one relative to the worktree's root with '/' between folders, as code
// references spell files. A path outside the worktree is an error.
func (r *Repo) RelPath(dir, p string) (string, error) {
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(dir, p)
	}
	root := r.Worktree
	// The worktree as git reports it has symbolic links resolved; so
	// must the path, or /tmp and /private/tmp would differ.
	if real, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(real, filepath.Base(abs))
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside the worktree %s", p, r.Worktree)
	}
	return filepath.ToSlash(rel), nil
}
