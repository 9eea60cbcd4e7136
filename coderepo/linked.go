package coderepo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// SessionCommits lists the commits of the code's history whose
// Thoughtbox-Session trailers name the session id, newest first, at most
// limit of them (and says whether there were more). Only the code's own
// refs are walked (branches, tags, remote-tracking branches), never the
// ledger's under refs/thoughtbox: reasoning commits are not code. Git
// picks the candidates by the id anywhere in the message, and a candidate
// counts only when its final trailer block names the session, so a
// message that merely quotes the id is not a link.
func (r *Repo) SessionCommits(ctx context.Context, id string, limit int) (commits []Commit, more bool, err error) {
	if id == "" || strings.ContainsAny(id, "\n\r\x00") || strings.HasPrefix(id, "-") {
		return nil, false, fmt.Errorf("session id %q: expected a session id", id)
	}
	if limit <= 0 {
		return nil, false, fmt.Errorf("limit %d: expected at least 1", limit)
	}
	// Candidates past limit are read so that a few false ones (a quoted
	// id) do not hide links; one more than that says whether there is more.
	scan := 2*limit + 1
	out, err := r.git(ctx, "log", "--no-color", logFormat, "--branches", "--tags", "--remotes",
		"--fixed-strings", "--regexp-ignore-case", "--grep="+id, "-n", strconv.Itoa(scan), "--")
	if err != nil {
		return nil, false, err
	}
	candidates := parseLog(out)
	for _, c := range candidates {
		if !contains(c.Sessions, id) {
			continue
		}
		if len(commits) == limit {
			return commits, true, nil
		}
		commits = append(commits, c)
	}
	return commits, len(candidates) == scan, nil
}
