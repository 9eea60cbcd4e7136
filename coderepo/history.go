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
}

// Commits reads the commits rev names: one commit (HEAD, an id, a
// branch), or every commit of a range (A..B, A...B) as git rev-list walks
// it, newest first.
func (r *Repo) Commits(ctx context.Context, rev string) ([]Commit, error) {
	if rev == "" || strings.HasPrefix(rev, "-") {
		return nil, fmt.Errorf("%q: expected a commit or a range A..B: %w", rev, ErrNoCommit)
	}
	// Record separator \x1e, field separator \x1f: neither is in a
	// subject or a trailer value git prints on one line.
	format := "--format=%H%x1f%s%x1f%(trailers:key=" + SessionTrailer + ",valueonly,unfold,separator=%x1f)%x1e"
	args := []string{"log", "--no-color", format}
	if !strings.Contains(rev, "..") {
		// Peeled here rather than by a rev-parse first: one git process
		// fewer for every why.
		args = append(args, "-1", "--end-of-options", rev+"^{commit}")
	} else {
		args = append(args, "--end-of-options", rev)
	}
	out, err := r.git(ctx, append(args, "--")...)
	if err != nil {
		return nil, fmt.Errorf("%q: %w (%v)", rev, ErrNoCommit, err)
	}
	var commits []Commit
	for _, rec := range strings.Split(out, "\x1e") {
		rec = strings.TrimLeft(rec, "\n")
		if rec == "" {
			continue
		}
		f := strings.Split(rec, "\x1f")
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
		commits = append(commits, c)
	}
	return commits, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ChangedFiles lists the files commit changed against its first parent
// (all of them, for a root commit), relative to the repository's root.
func (r *Repo) ChangedFiles(ctx context.Context, commit string) ([]string, error) {
	out, err := r.git(ctx, "diff-tree", "--no-commit-id", "--name-only", "-r", "--root", "--no-renames", commit)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" {
			files = append(files, l)
		}
	}
	return files, nil
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
