package coderepo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// PrePushRefused is the status `thoughtbox hook pre-push` exits with to
// stop a push: only when git itself would carry reasoning refs where they
// may not go (a --mirror push to an unbound remote, a private session, a
// local ref). Any other failure of ours is a warning and the push goes on.
const PrePushRefused = 3

// prePushBody hands git's input to `thoughtbox hook pre-push`, which
// sends the reasoning linked to what is pushed to the bound remote within
// its time budget and queues what it could not send.
func prePushBody(command string) string {
	return `{ [ -z "$tb_in" ] || printf '%s\n' "$tb_in"; } | ` + shellQuote(command) + ` hook pre-push "$@"
case $? in
0) ;;
` + fmt.Sprint(PrePushRefused) + `) exit 1 ;;
*) echo "thoughtbox: warning: the pre-push hook failed; the push goes on" >&2 ;;
esac
`
}

// RefUpdate is one line git hands a pre-push hook: a ref it is about to
// update on the remote.
type RefUpdate struct {
	LocalRef, LocalSHA, RemoteRef, RemoteSHA string
}

// Deletes says whether the update deletes the remote ref.
func (u RefUpdate) Deletes() bool { return strings.Trim(u.LocalSHA, "0") == "" }

// ParsePrePush reads a pre-push hook's input: "<local ref> <local sha>
// <remote ref> <remote sha>" a line. A line of another shape is an error
// naming it.
func ParsePrePush(r io.Reader) ([]RefUpdate, error) {
	var out []RefUpdate
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 || !isObjectID(f[1]) || !isObjectID(f[3]) {
			return nil, fmt.Errorf("pre-push input %q: expected <local ref> <local sha> <remote ref> <remote sha>", line)
		}
		out = append(out, RefUpdate{LocalRef: f[0], LocalSHA: f[1], RemoteRef: f[2], RemoteSHA: f[3]})
	}
	return out, sc.Err()
}

func isObjectID(s string) bool {
	return len(s) == 40 && strings.Trim(s, "0123456789abcdef") == ""
}

// PushedSessions lists the sessions the commits of a push name
// (Thoughtbox-Session trailers of the final trailer block, in order,
// without repeats): the commits reachable from the updates' new tips and
// from neither the remote's old tips (those this repository has) nor,
// when remote names a git remote, its remote-tracking branches. It is one
// git log, whatever the number of refs.
func (r *Repo) PushedSessions(ctx context.Context, remote string, updates []RefUpdate) ([]string, error) {
	var tips, not []string
	for _, u := range updates {
		if u.Deletes() || strings.HasPrefix(u.LocalRef, "refs/thoughtbox/") {
			continue
		}
		tips = append(tips, u.LocalSHA)
		if strings.Trim(u.RemoteSHA, "0") != "" && r.hasCommit(ctx, u.RemoteSHA) {
			not = append(not, "^"+u.RemoteSHA)
		}
	}
	if len(tips) == 0 {
		return nil, nil
	}
	args := []string{"log", "--no-color", "--format=%(trailers:key=" + SessionTrailer + ",valueonly,unfold)"}
	if remote != "" && !strings.ContainsAny(remote, "/:\\*?[") && !strings.HasPrefix(remote, "-") {
		// --not turns the remote-tracking branches into exclusions, and
		// turns itself off again for the tips.
		args = append(args, "--not", "--remotes="+remote, "--not")
	}
	args = append(append(append(args, "--end-of-options"), tips...), not...)
	out, err := r.git(ctx, append(args, "--")...)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(ids, l) {
			ids = append(ids, l)
		}
	}
	return ids, nil
}

func (r *Repo) hasCommit(ctx context.Context, id string) bool {
	_, err := r.git(ctx, "cat-file", "-e", id+"^{commit}")
	return err == nil
}

// PushURL is the URL git is pushing to in a pre-push hook, spelled as the
// repository's config spells it: git hands the hook (remote, url) with
// url already rewritten by insteadOf, and a binding is recorded as the
// config spells it. For a remote of several push URLs, git runs the hook
// once per URL; the one of this run is found by its place in `git remote
// get-url --push --all`. A URL git was given directly is url itself.
func (r *Repo) PushURL(ctx context.Context, remote, url string) (string, error) {
	if remote == "" || remote == url {
		return url, nil
	}
	_, push, err := r.RemoteURLs(ctx, remote)
	if errors.Is(err, ErrNoGitRemote) {
		return url, nil
	}
	if err != nil {
		return "", err
	}
	out, err := r.git(ctx, "remote", "get-url", "--push", "--all", "--", remote)
	if err != nil {
		return "", err
	}
	rewritten := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(rewritten) == len(push) {
		if i := slices.Index(rewritten, url); i >= 0 {
			return push[i], nil
		}
	}
	return url, nil
}

// Upstream names the remote the current branch tracks ("" when it tracks
// none, or HEAD is detached): where a read may fetch reasoning from when
// none is bound.
func (r *Repo) Upstream(ctx context.Context) (string, error) {
	out, err := r.git(ctx, "symbolic-ref", "--quiet", "--short", "HEAD")
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return "", nil // detached
	}
	if err != nil {
		return "", err
	}
	vals, err := r.configAll(ctx, "branch."+strings.TrimSpace(out)+".remote")
	if err != nil || len(vals) == 0 || vals[0] == "." {
		return "", err
	}
	return vals[0], nil
}

// queueFile lists the sessions a pre-push hook could not send in time,
// one id a line, for the next push to send.
func (r *Repo) queueFile() string { return filepath.Join(r.CommonDir, "thoughtbox", "push-queue") }

// PushQueue lists the queued sessions, in the order they were queued.
func (r *Repo) PushQueue() ([]string, error) {
	data, err := os.ReadFile(r.queueFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(ids, l) {
			ids = append(ids, l)
		}
	}
	return ids, nil
}

// Queue adds sessions to the push queue.
func (r *Repo) Queue(ids []string) error {
	return r.editQueue(func(q []string) []string {
		for _, id := range ids {
			if !slices.Contains(q, id) {
				q = append(q, id)
			}
		}
		return q
	})
}

// Unqueue takes sessions off the push queue (all of them when ids is
// nil): they have been sent.
func (r *Repo) Unqueue(ids []string) error {
	return r.editQueue(func(q []string) []string {
		if ids == nil {
			return nil
		}
		return slices.DeleteFunc(q, func(id string) bool { return slices.Contains(ids, id) })
	})
}

// editQueue replaces the queue whole (written aside, synced, renamed), so
// a crash leaves the old list or the new one. Two pushes racing may lose
// one's edit; the loss is a session sent by the next full push instead.
func (r *Repo) editQueue(change func([]string) []string) error {
	q, err := r.PushQueue()
	if err != nil {
		return err
	}
	next := change(slices.Clone(q))
	if slices.Equal(q, next) {
		return nil
	}
	path := r.queueFile()
	if len(next) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".push-queue-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(strings.Join(next, "\n") + "\n")
	if err == nil {
		err = durable.Datasync(tmp)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = durable.Rename(tmp.Name(), path)
	}
	return err
}
