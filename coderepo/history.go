package coderepo

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
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
		id, err := r.ResolveCommit(ctx, rev)
		if err != nil {
			return nil, err
		}
		args = append(args, "-1", id)
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

// Blame runs git blame on path (relative to the root) in the worktree,
// for lines from..to (both 0: the whole file), and groups consecutive
// lines by the commit that last changed them.
func (r *Repo) Blame(ctx context.Context, path string, from, to int) ([]BlameRange, error) {
	args := []string{"blame", "--porcelain"}
	if from > 0 {
		if to < from {
			to = from
		}
		args = append(args, "-L", strconv.Itoa(from)+","+strconv.Itoa(to))
	}
	out, err := r.git(ctx, append(args, "--", path)...)
	if err != nil {
		return nil, fmt.Errorf("git blame %s: %w", path, err)
	}
	return parseBlame(out)
}

// parseBlame reads git blame's porcelain form: each line's header
// "<commit> <orig line> <final line> [<group size>]", header fields for a
// commit's first appearance, then the line itself after a tab.
func parseBlame(out string) ([]BlameRange, error) {
	var ranges []BlameRange
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	header := true
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "\t") {
			header = true
			continue
		}
		if !header {
			continue // a header field (author, summary …)
		}
		f := strings.Fields(l)
		if len(f) < 3 || len(f[0]) != 40 {
			return nil, fmt.Errorf("git blame: unexpected line %q", l)
		}
		line, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("git blame: unexpected line %q", l)
		}
		header = false
		if n := len(ranges); n > 0 && ranges[n-1].Commit == f[0] && ranges[n-1].To == line-1 {
			ranges[n-1].To = line
		} else {
			ranges = append(ranges, BlameRange{From: line, To: line, Commit: f[0]})
		}
	}
	return ranges, sc.Err()
}
