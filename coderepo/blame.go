package coderepo

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Blame answers from a cache of each file's blame at a commit, so that
// asking again costs only the history since then. git blame walks the
// file's history back until every asked line is accounted for, inflating
// and diffing each version: for a file many commits touched, seconds,
// however few lines are asked. The answer at commit C of every line of
// the file is kept in CommonDir/thoughtbox/blame/; then
//
//	git blame ^C -- path
//
// walks only from the worktree back to C, and gives each line it did not
// account for to C with its line number there, which the cache resolves.
// The cache is only a shortcut: anything unexpected in it or in that
// answer (C gone or not an ancestor, another boundary, a rename since C)
// and Blame starts again from git blame HEAD -- path, as if there were
// none.

// blameCacheHeader opens every cache file; another version is ignored.
const blameCacheHeader = "thoughtbox blame cache 1"

// porcelainLine is one line of git blame's porcelain answer.
type porcelainLine struct {
	commit      string
	orig, final int
}

// porcelain is git blame --porcelain read: its lines, and per commit the
// header fields the cache needs.
type porcelain struct {
	lines    []porcelainLine
	boundary map[string]bool
	filename map[string]string
}

// parsePorcelain reads git blame's porcelain form: each line's header
// "<commit> <orig line> <final line> [<group size>]", header fields for a
// commit's first appearance, then the line itself after a tab.
func parsePorcelain(out string) (*porcelain, error) {
	p := &porcelain{boundary: map[string]bool{}, filename: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	header := true
	var cur string
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "\t") {
			header = true
			continue
		}
		if !header {
			// A header field of cur's first appearance.
			if l == "boundary" {
				p.boundary[cur] = true
			} else if name, ok := strings.CutPrefix(l, "filename "); ok {
				p.filename[cur] = name
			}
			continue
		}
		f := strings.Fields(l)
		if len(f) < 3 || len(f[0]) != 40 {
			return nil, fmt.Errorf("git blame: unexpected line %q", l)
		}
		orig, err1 := strconv.Atoi(f[1])
		final, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("git blame: unexpected line %q", l)
		}
		cur, header = f[0], false
		p.lines = append(p.lines, porcelainLine{commit: cur, orig: orig, final: final})
	}
	return p, sc.Err()
}

// parseBlame groups porcelain lines into runs by commit.
func parseBlame(out string) ([]BlameRange, error) {
	p, err := parsePorcelain(out)
	if err != nil {
		return nil, err
	}
	return group(p.lines, func(l porcelainLine) string { return l.commit }), nil
}

// group makes runs of consecutive lines that commitOf gives one commit.
func group(lines []porcelainLine, commitOf func(porcelainLine) string) []BlameRange {
	var ranges []BlameRange
	for _, l := range lines {
		c := commitOf(l)
		if n := len(ranges); n > 0 && ranges[n-1].Commit == c && ranges[n-1].To == l.final-1 {
			ranges[n-1].To = l.final
		} else {
			ranges = append(ranges, BlameRange{From: l.final, To: l.final, Commit: c})
		}
	}
	return ranges
}

// blameCache is a file's blame at a commit: every line's commit, as runs.
type blameCache struct {
	commit string
	ranges []BlameRange
}

// at is the commit of line n of the file at c.commit ("" if the cache
// does not cover it).
func (c *blameCache) at(n int) string {
	lo, hi := 0, len(c.ranges)
	for lo < hi {
		m := (lo + hi) / 2
		switch r := c.ranges[m]; {
		case n < r.From:
			hi = m
		case n > r.To:
			lo = m + 1
		default:
			return r.Commit
		}
	}
	return ""
}

func (r *Repo) blameCachePath(path string) string {
	sum := sha1.Sum([]byte(path))
	return filepath.Join(r.CommonDir, "thoughtbox", "blame", hex.EncodeToString(sum[:]))
}

// readBlameCache returns path's cache, or nil when there is none or it is
// not one this version wrote for path.
func (r *Repo) readBlameCache(path string) *blameCache {
	data, err := os.ReadFile(r.blameCachePath(path))
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) < 2 || lines[0] != blameCacheHeader {
		return nil
	}
	commit, p, ok := strings.Cut(lines[1], " ")
	if !ok || p != path || !isCommitID(commit) {
		return nil
	}
	c := &blameCache{commit: commit}
	next := 1
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 3 || !isCommitID(f[2]) {
			return nil
		}
		from, err1 := strconv.Atoi(f[0])
		to, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil || from != next || to < from {
			return nil
		}
		c.ranges = append(c.ranges, BlameRange{From: from, To: to, Commit: f[2]})
		next = to + 1
	}
	return c
}

// writeBlameCache replaces path's cache whole (written aside, renamed),
// so a reader never sees half of one. A cache that cannot be written is
// only a slower next answer.
func (r *Repo) writeBlameCache(path string, c *blameCache) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s %s\n", blameCacheHeader, c.commit, path)
	for _, rg := range c.ranges {
		fmt.Fprintf(&b, "%d %d %s\n", rg.From, rg.To, rg.Commit)
	}
	dst := r.blameCachePath(path)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(dst), ".tmp-*")
	if err != nil {
		return
	}
	_, err = f.WriteString(b.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), dst)
	}
	if err != nil {
		os.Remove(f.Name())
	}
}

func isCommitID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Blame runs git blame on path (relative to the root) in the worktree,
// for lines from..to (both 0: the whole file), and groups consecutive
// lines by the commit that last changed them.
func (r *Repo) Blame(ctx context.Context, path string, from, to int) ([]BlameRange, error) {
	var lines []string
	if from > 0 {
		if to < from {
			to = from
		}
		lines = []string{"-L", strconv.Itoa(from) + "," + strconv.Itoa(to)}
	}
	head, err := r.git(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if head = strings.TrimSpace(head); err == nil {
		c := r.readBlameCache(path)
		if c != nil && c.commit != head {
			// The walk back to c passes every commit since, touching the
			// file or not: move the cache to HEAD first (that walk once,
			// then none).
			c = r.moveBlameCache(ctx, c, path, head)
		}
		if c == nil {
			c = r.cacheBlame(ctx, path, head)
		}
		if c != nil {
			if ranges, ok := r.blameSince(ctx, c, path, lines, ""); ok {
				return ranges, nil
			}
		}
	}
	// No commit has the file (or git cannot say): plain git blame.
	out, err := r.git(ctx, append(append([]string{"blame", "--porcelain"}, lines...), "--", path)...)
	if err != nil {
		return nil, fmt.Errorf("git blame %s: %w", path, err)
	}
	return parseBlame(out)
}

// blameSince answers from c: git blame of rev (the worktree when "")
// back to c.commit, the lines it gives to c.commit looked up in c. ok is
// false when c cannot answer.
func (r *Repo) blameSince(ctx context.Context, c *blameCache, path string, lines []string, rev string) (ranges []BlameRange, ok bool) {
	args := append(append([]string{"blame", "--porcelain"}, lines...), "^"+c.commit)
	if rev != "" {
		args = append(args, rev)
	}
	args = append(args, "--", path)
	out, err := r.git(ctx, args...)
	if err != nil {
		return nil, false
	}
	p, err := parsePorcelain(out)
	if err != nil {
		return nil, false
	}
	for commit := range p.boundary {
		if commit != c.commit || p.filename[commit] != path {
			return nil, false // not an ancestor, or renamed since
		}
	}
	for _, l := range p.lines {
		if l.commit == c.commit && (!p.boundary[l.commit] || c.at(l.orig) == "") {
			return nil, false
		}
	}
	return group(p.lines, func(l porcelainLine) string {
		if l.commit == c.commit {
			return c.at(l.orig)
		}
		return l.commit
	}), true
}

// moveBlameCache returns the blame at head, made from c by walking only
// back to c.commit, and keeps it; nil when c cannot answer for head.
func (r *Repo) moveBlameCache(ctx context.Context, c *blameCache, path, head string) *blameCache {
	ranges, ok := r.blameSince(ctx, c, path, nil, head)
	if !ok {
		return nil
	}
	moved := &blameCache{commit: head, ranges: ranges}
	r.writeBlameCache(path, moved)
	return moved
}

// cacheBlame blames the whole file as head has it, the slow way, and
// keeps the answer; nil when head has no such file.
func (r *Repo) cacheBlame(ctx context.Context, path, head string) *blameCache {
	out, err := r.git(ctx, "blame", "--porcelain", head, "--", path)
	if err != nil {
		return nil
	}
	ranges, err := parseBlame(out)
	if err != nil {
		return nil
	}
	c := &blameCache{commit: head, ranges: ranges}
	r.writeBlameCache(path, c)
	return c
}
