package coderepo

import (
	"context"
	"fmt"
	"strings"
)

// SessionTrailer is the trailer key the prepare-commit-msg hook writes.
const SessionTrailer = "Thoughtbox-Session"

// Commit is one commit of the code's history, as why reads it.
type Commit struct {
	ID      string `json:"commit"`
	Subject string `json:"subject"`
	// Sessions are the values of the Thoughtbox-Session trailers of the
	// message's final trailer block, in order, without repeats. They are
	// only claims: a reader checks each names a session that exists.
	Sessions []string `json:"-"`
	// Files are the files it changed against its parent, relative to
	// the repository's root (all of them for a root commit; none listed
	// for a merge, as git diff-tree lists none).
	Files []string `json:"-"`
}

// Commits reads the commits rev names: one commit (HEAD, an id, a
// branch), or every commit of a range (A..B, A...B) as git rev-list walks
// it, newest first.
func (r *Repo) Commits(ctx context.Context, rev string) ([]Commit, error) {
	if rev == "" || strings.HasPrefix(rev, "-") {
		return nil, fmt.Errorf("%q: expected a commit or a range A..B: %w", rev, ErrNoCommit)
	}
	var revs []string
	if !strings.Contains(rev, "..") {
		// Peeled here rather than by a rev-parse first: one git process
		// fewer for every why.
		revs = []string{"-1", "--end-of-options", rev + "^{commit}"}
	} else {
		revs = []string{"--end-of-options", rev}
	}
	return r.readLog(ctx, revs, rev)
}

// readLog runs git log in logFormat over revs and parses what it prints;
// rev names them in an error.
func (r *Repo) readLog(ctx context.Context, revs []string, rev string) ([]Commit, error) {
	args := append([]string{"log", "--no-color", logFormat, "--name-only", "--no-renames", "--root"}, revs...)
	out, err := r.git(ctx, append(args, "--")...)
	if err != nil {
		return nil, fmt.Errorf("%q: %w (%v)", rev, ErrNoCommit, err)
	}
	return parseLog(out), nil
}

// logFormat is the form parseLog reads. Each record starts with \x1e;
// \x1f separates the id, the subject and the trailer values (none of them
// holds either on the line git prints), \x1d ends them; with --name-only
// the changed files follow, one a line. Listing them here saves a git
// diff-tree per commit.
const logFormat = "--format=%x1e%H%x1f%s%x1f%(trailers:key=" + SessionTrailer + ",valueonly,unfold,separator=%x1f)%x1d"

// parseLog reads git log's answer in logFormat.
func parseLog(out string) []Commit {
	var commits []Commit
	for _, rec := range strings.Split(out, "\x1e") {
		head, files, ok := strings.Cut(rec, "\x1d")
		if !ok {
			continue
		}
		f := strings.Split(head, "\x1f")
		if len(f) < 2 {
			continue
		}
		c := Commit{ID: f[0], Subject: f[1]}
		for _, v := range f[2:] {
			v = strings.TrimSpace(v)
			if v != "" && !contains(c.Sessions, v) {
				c.Sessions = append(c.Sessions, v)
			}
		}
		for _, l := range strings.Split(files, "\n") {
			if l != "" {
				c.Files = append(c.Files, l)
			}
		}
		commits = append(commits, c)
	}
	return commits
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// BlameRange is a run of consecutive lines last changed by one commit.
type BlameRange struct {
	From int `json:"from"`
	To   int `json:"to"`
	// Commit is the commit that last changed the lines; all zeros for
	// lines not committed yet.
	Commit string `json:"commit"`
}

// NotCommitted is the id git blame gives lines changed in the worktree.
const NotCommitted = "0000000000000000000000000000000000000000"
