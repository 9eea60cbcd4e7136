package coderepo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// The post-commit and post-rewrite hooks do the least they can inside git
// commit: each writes one small file into its worktree's pending folder
// (GitDir/thoughtbox/pending) and starts `thoughtbox hook drain` in the
// background. The drain (and why, blame, relink before they answer) turns
// those events into link entries of the ledger. A file is written aside
// (a name starting with '.') and renamed, so a drain never reads half of
// one, except the post-commit file: one short line, written by one write
// of the shell's echo without a rename, which would cost the commit a
// process; a file that does not parse yet is left alone while it is
// young (see PendingEvents):
//
//	c-<commit>           "commit <commit>"           (post-commit)
//	r-<last new>-<pid>   "rewrite amend|rebase"      (post-rewrite)
//	                     then "<old> <new>" a line, as git hands them

// EventKind is what a pending event records.
type EventKind string

// The kinds of pending events.
const (
	EventCommit EventKind = "commit"
	EventAmend  EventKind = "amend"
	EventRebase EventKind = "rebase"
)

// Event is one pending event a hook left.
type Event struct {
	// Path is the event's file; Done removes it.
	Path string
	Kind EventKind
	// Commit is the commit a post-commit event names.
	Commit string
	// Action is how HEAD moved to Commit, as the worktree's reflog says
	// it ("commit", "commit (amend)", "cherry-pick", "rebase (pick)"; ""
	// when the reflog does not say).
	Action string
	// Rewritten maps old to new commits, in git's order (post-rewrite).
	Rewritten [][2]string
	// Mod orders events: the file's modification time.
	Mod time.Time
}

// Done removes the event's file: it is recorded, or can never be.
func (e Event) Done() error {
	err := os.Remove(e.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// pendingDirs are the pending folders of every worktree of the
// repository: the main one's (the common dir) and each linked one's.
func (r *Repo) pendingDirs() []string {
	dirs := []string{filepath.Join(r.CommonDir, "thoughtbox", "pending"), filepath.Join(r.GitDir, "thoughtbox", "pending")}
	wts, _ := os.ReadDir(filepath.Join(r.CommonDir, "worktrees"))
	for _, wt := range wts {
		dirs = append(dirs, filepath.Join(r.CommonDir, "worktrees", wt.Name(), "thoughtbox", "pending"))
	}
	out := dirs[:0]
	seen := map[string]bool{}
	for _, d := range dirs {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// HasPending says whether any worktree has an event waiting; it reads
// folders only.
func (r *Repo) HasPending() bool { return r.PendingCount() > 0 }

// PendingCount counts the events waiting in every worktree.
func (r *Repo) PendingCount() int {
	n := 0
	for _, d := range r.pendingDirs() {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), ".") {
				n++
			}
		}
	}
	return n
}

// Rewriting says whether the commit event's commit replaces another by an
// amend or a rebase, which its post-rewrite event will say.
func (e Event) Rewriting() bool {
	return e.Kind == EventCommit && (strings.HasPrefix(e.Action, "commit (amend)") || strings.HasPrefix(e.Action, "rebase"))
}

// PendingEvents reads every worktree's pending events, oldest first. A
// file that is no event (damaged, or written by hand) is removed.
func (r *Repo) PendingEvents() ([]Event, error) {
	var out []Event
	for _, d := range r.pendingDirs() {
		entries, err := os.ReadDir(d)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, de := range entries {
			if strings.HasPrefix(de.Name(), ".") {
				continue
			}
			path := filepath.Join(d, de.Name())
			e, err := readEvent(path)
			if err != nil {
				if fi, serr := os.Stat(path); serr == nil && time.Since(fi.ModTime()) < youngEvent {
					continue // perhaps still being written
				}
				os.Remove(path)
				continue
			}
			if e.Kind == EventCommit && e.Action == "" {
				// <git dir>/thoughtbox/pending/<file>
				e.Action = reflogAction(filepath.Dir(filepath.Dir(d)), e.Commit)
			}
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Mod.Equal(out[j].Mod) {
			return out[i].Mod.Before(out[j].Mod)
		}
		return out[i].Path < out[j].Path
	})
	return out, nil
}

// youngEvent is how long a file of the pending folder that does not
// parse is taken for one still being written.
const youngEvent = 10 * time.Second

// reflogTail is how much of the end of a worktree's HEAD reflog
// reflogAction reads: the drain runs soon after the commit, whose entry
// is among the last.
const reflogTail = 64 << 10

// reflogAction is the reflog's word for how HEAD of the worktree whose
// git dir is gitDir moved to commit ("commit", "commit (amend)",
// "cherry-pick", "rebase (pick)", …), from the newest entry for it; ""
// when the reflog has none.
func reflogAction(gitDir, commit string) string {
	f, err := os.Open(filepath.Join(gitDir, "logs", "HEAD"))
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(fi.Size()-reflogTail, 0)
	buf := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return ""
	}
	lines := strings.Split(string(buf), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		// <old> <new> <who> <when> <zone>\t<action>: <message>
		head, msg, ok := strings.Cut(lines[i], "\t")
		if f := strings.Fields(head); ok && len(f) >= 2 && f[1] == commit {
			action, _, _ := strings.Cut(msg, ":")
			return action
		}
	}
	return ""
}

// maxEventBytes bounds an event file: a rebase of many thousand commits
// is still far below it.
const maxEventBytes = 16 << 20

func readEvent(path string) (Event, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Event{}, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxEventBytes {
		return Event{}, fmt.Errorf("%s: not an event file", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Event{}, err
	}
	e := Event{Path: path, Mod: fi.ModTime()}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	head := strings.Fields(lines[0])
	switch {
	case len(head) == 2 && head[0] == "commit" && isFullID(head[1]):
		e.Kind, e.Commit = EventCommit, head[1]
		if len(lines) > 1 {
			if a, ok := strings.CutPrefix(lines[1], "action "); ok && len(a) < 100 {
				e.Action = strings.TrimSpace(a)
			}
		}
		return e, nil
	case len(head) == 2 && head[0] == "rewrite" && (head[1] == string(EventAmend) || head[1] == string(EventRebase)):
		e.Kind = EventKind(head[1])
	default:
		return Event{}, fmt.Errorf("%s: not an event file", path)
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) >= 2 && isFullID(f[0]) && isFullID(f[1]) {
			e.Rewritten = append(e.Rewritten, [2]string{f[0], f[1]})
		}
	}
	return e, nil
}

func isFullID(s string) bool {
	if len(s) != 40 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// LinkIndexPath is the file of the local index of links (package why
// keeps it).
func (r *Repo) LinkIndexPath() string {
	return filepath.Join(r.CommonDir, "thoughtbox", "links-index.json")
}

// ForgetLinkIndex removes the index of links, for a writer of links refs
// other than the drain and relink (a pull): the next why rebuilds it from
// the refs.
func (r *Repo) ForgetLinkIndex() error {
	err := os.Remove(r.LinkIndexPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// LockLinks takes the repository's drain lock (CommonDir/thoughtbox/
// links.lock), so that two drains never record one event twice at once.
// With wait false a held lock returns ok false at once (a background
// drain then leaves the work to the one running); with wait true it
// waits up to durable.DefaultTimeout.
func (r *Repo) LockLinks(ctx context.Context, wait bool) (unlock func(), ok bool, err error) {
	dir := filepath.Join(r.CommonDir, "thoughtbox")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "links.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, err
	}
	if wait {
		err = durable.Lock(ctx, f, nil, durable.DefaultTimeout)
		ok = err == nil
	} else {
		ok, err = durable.TryLock(f, nil)
	}
	if err != nil || !ok {
		f.Close()
		return nil, false, err
	}
	return func() { durable.Unlock(f); f.Close() }, true, nil
}

// ExistingCommits says which of ids name commits this repository holds
// (one git cat-file for all).
func (r *Repo) ExistingCommits(ctx context.Context, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	cmd := exec.CommandContext(ctx, "git", "-C", r.Worktree, "cat-file", "--batch-check=%(objectname) %(objecttype)")
	cmd.Stdin = strings.NewReader(strings.Join(ids, "\n") + "\n")
	data, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git cat-file --batch-check: %w", err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if id, typ, ok := strings.Cut(l, " "); ok && typ == "commit" {
			out[id] = true
		}
	}
	return out, nil
}

// CommitsByID reads the named commits (full ids that exist, as
// ExistingCommits finds them) as Commits does, in one git log.
func (r *Repo) CommitsByID(ctx context.Context, ids []string) ([]Commit, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	for _, id := range ids {
		if !isFullID(id) {
			return nil, fmt.Errorf("%q: expected a full commit id: %w", id, ErrNoCommit)
		}
	}
	return r.readLog(ctx, append([]string{"--no-walk=unsorted"}, ids...), strings.Join(ids, " "))
}

// PatchIDs returns git patch-id --stable of each commit that has a diff
// against its first parent (none for merges and empty commits).
func (r *Repo) PatchIDs(ctx context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	show := exec.CommandContext(ctx, "git", append([]string{"-C", r.Worktree, "show", "--no-color", "--no-ext-diff", "--format=commit %H", "-p"}, ids...)...)
	pid := exec.CommandContext(ctx, "git", "-C", r.Worktree, "patch-id", "--stable")
	pipe, err := show.StdoutPipe()
	if err != nil {
		return nil, err
	}
	pid.Stdin = pipe
	var buf strings.Builder
	pid.Stdout = &buf
	if err := show.Start(); err != nil {
		return nil, err
	}
	if err := pid.Run(); err != nil {
		show.Wait()
		return nil, fmt.Errorf("git patch-id: %w", err)
	}
	if err := show.Wait(); err != nil {
		return nil, fmt.Errorf("git show: %w", err)
	}
	for _, l := range strings.Split(buf.String(), "\n") {
		if p, c, ok := strings.Cut(l, " "); ok {
			out[c] = p
		}
	}
	return out, nil
}

// AddedLines returns, per file, the lines commit added against its first
// parent (trailing spaces trimmed), as git show -U0 lists them.
func (r *Repo) AddedLines(ctx context.Context, commit string) (map[string][]string, error) {
	cmd := exec.CommandContext(ctx, "git", "-C", r.Worktree, "show", "--no-color", "--no-ext-diff", "--no-renames", "--format=", "-U0", commit)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	file := ""
	sc := bufio.NewScanner(pipe)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "+++ "):
			file = ""
			if p, ok := strings.CutPrefix(l, "+++ b/"); ok {
				file = p
			}
		case strings.HasPrefix(l, "+") && file != "":
			if s := strings.TrimSpace(l[1:]); s != "" {
				out[file] = append(out[file], s)
			}
		}
	}
	scanErr := sc.Err()
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("git show %s: %w", commit, err)
	}
	return out, scanErr
}
