package remote

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/refs"
	"github.com/thoughtbox/thoughtbox/internal/durable"
	"github.com/thoughtbox/thoughtbox/ledger"
)

const pushChildEnv = "THOUGHTBOX_TEST_PUSH_CHILD"

// TestPushChildProcess is the child of TestKilledBuiltinPushLeavesRemoteClean:
// it pushes one store to one remote over the built-in file transport.
func TestPushChildProcess(t *testing.T) {
	if os.Getenv(pushChildEnv) != "1" {
		t.Skip("runs only as a child process")
	}
	s, err := gitstore.Open(os.Getenv("TBP_REPO"), gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Push(context.Background(), s, os.Getenv("TBP_REMOTE"), TransferOptions{BuiltinFile: true}); err != nil {
		t.Fatal(err)
	}
}

// TestKilledBuiltinPushLeavesRemoteClean kills a push over the built-in file
// transport at random moments, again and again, with new thoughts in many
// sessions each time (many refs move per push). Afterwards, and along the
// way, every ref of the remote must hold an object id, git fsck --strict
// --full must pass, and pushing and pulling must still work.
// THOUGHTBOX_PUSH_KILLS sets the number of kills (default 20: each costs
// a push of the race-built child, and CI runs the whole suite in ten
// minutes; systest/crashcampaign's push units kill hundreds of pushes of
// the real binary).
func TestKilledBuiltinPushLeavesRemoteClean(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	if !gitInstalled() {
		t.Skip("needs git for fsck")
	}
	kills := 20
	if s := os.Getenv("THOUGHTBOX_PUSH_KILLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("THOUGHTBOX_PUSH_KILLS=%q: expected a positive number", s)
		}
		kills = n
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	remote := filepath.Join(t.TempDir(), "remote.git")
	if out, err := runGit(filepath.Dir(remote), "init", "-q", "--bare", remote); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	repo := filepath.Join(t.TempDir(), "a.git")
	s, err := gitstore.Open(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := ledger.New(s, ledger.Options{})
	const sessions = 24
	ids := make([]string, sessions)
	for i := range ids {
		sess, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: fmt.Sprintf("s%d", i)}, ledger.Author{Name: "t"})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = sess.ID
	}
	n := 0
	think := func() {
		t.Helper()
		n++
		for _, id := range ids {
			text := fmt.Sprintf("thought %d of %s: %s", n, id, strings.Repeat("x", rng.Intn(4000)))
			if _, err := l.AddThought(ctx, id, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true}, ledger.Author{Name: "t"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := func() *exec.Cmd {
		cmd := exec.Command(exe, "-test.run=^TestPushChildProcess$", "-test.count=1", "-test.timeout=2m")
		cmd.Env = append(os.Environ(), pushChildEnv+"=1", "TBP_REPO="+repo, "TBP_REMOTE="+remote)
		return cmd
	}
	// One whole push tells how long a push takes here, to spread the
	// kills over it (a scale for random delays, never an assertion).
	think()
	start := time.Now()
	if out, err := child().CombinedOutput(); err != nil {
		t.Fatalf("first push: %v\n%s", err, out)
	}
	span := time.Since(start)
	var completed int
	for i := 0; i < kills; i++ {
		think()
		cmd := child()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.Int63n(int64(span + span/4))))
		cmd.Process.Kill()
		// The scale follows the push's real length on this machine: it
		// shrinks when a push finished before its kill and grows when
		// none did, so that about a third finish and the kills cover the
		// whole push, its ref updates at the end included.
		if cmd.Wait() == nil {
			completed++
			span = span * 9 / 10
		} else {
			span = span * 21 / 20
		}
		checkRemoteRefs(t, remote, fmt.Sprintf("after kill %d", i+1))
		if t.Failed() {
			return
		}
		if i%10 == 9 {
			fsckFull(t, remote, fmt.Sprintf("after kill %d", i+1))
		}
	}
	t.Logf("%d kills, %d pushes finished before their kill", kills, completed)
	fsckFull(t, remote, "after the kills")

	// Pushing still works and brings the remote level with us.
	think()
	res, err := Push(ctx, s, remote, TransferOptions{BuiltinFile: true})
	if err != nil {
		t.Fatalf("push after the kills: %v", err)
	}
	if len(res.Rejected) > 0 {
		t.Fatalf("push after the kills rejected %+v", res.Rejected)
	}
	local, err := s.ListRefs(gitstore.SessionRefPrefix)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := refs.List(remote, gitstore.SessionRefPrefix)
	if err != nil {
		t.Fatal(err)
	}
	for ref, h := range local {
		if theirs[ref] != h {
			t.Errorf("remote %s = %s, want %s", ref, theirs[ref], h)
		}
	}
	fsckFull(t, remote, "after the last push")
	// So does pulling, over both file transports.
	for _, builtin := range []bool{true, false} {
		b, err := gitstore.Open(filepath.Join(t.TempDir(), "b.git"), gitstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		pr, err := Pull(ctx, b, remote, TransferOptions{BuiltinFile: builtin})
		if err != nil {
			t.Fatalf("pull (builtin %v) after the kills: %v", builtin, err)
		}
		if len(pr.Created) != len(local) {
			t.Errorf("pull (builtin %v) created %d refs, want %d", builtin, len(pr.Created), len(local))
		}
		b.Close()
	}
}

// checkRemoteRefs checks that every loose ref of a remote holds an object
// id the remote has, and that git can list them.
func checkRemoteRefs(t *testing.T, remote, when string) {
	t.Helper()
	bad, err := refs.BadLoose(remote, "refs/")
	if err != nil {
		t.Fatal(err)
	}
	for ref, content := range bad {
		t.Errorf("%s: remote ref %s holds %q, not an object id", when, ref, content)
	}
	if out, err := runGit(remote, "for-each-ref", "--format=%(objectname) %(objecttype) %(refname)"); err != nil {
		t.Errorf("%s: %v", when, err)
	} else {
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line != "" && !strings.Contains(line, " commit refs/") {
				t.Errorf("%s: remote ref line %q: expected a commit", when, line)
			}
		}
	}
}

func fsckFull(t *testing.T, dir, when string) {
	t.Helper()
	if out, err := runGit(dir, "fsck", "--strict", "--full", "--no-dangling", "--no-progress"); err != nil {
		t.Errorf("%s: %v", when, err)
	} else {
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			// A bare remote's HEAD names a branch nobody pushes.
			if line != "" && !strings.HasPrefix(line, "notice: HEAD points to an unborn branch") {
				t.Errorf("%s: git fsck said: %s", when, line)
			}
		}
	}
}

func gitInstalled() bool {
	_, err := exec.LookPath("git")
	return err == nil
}

func runGit(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+os.TempDir(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// TestBuiltinReceiverTakesOverStaleLocks: a ref lock and a temporary pack
// that a killed receiver left on the remote do not block later pushes.
func TestBuiltinReceiverTakesOverStaleLocks(t *testing.T) {
	ctx := context.Background()
	remote := filepath.Join(t.TempDir(), "remote.git")
	if err := os.MkdirAll(remote, 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := gitstore.Open(remote, gitstore.Options{}) // a bare repository
	if err != nil {
		t.Fatal(err)
	}
	// Closed at once: left open, its flusher went on writing into the
	// remote while the test's directory was being removed.
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := gitstore.Open(filepath.Join(t.TempDir(), "a.git"), gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := ledger.New(s, ledger.Options{})
	sess, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "t"}, ledger.Author{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	o := TransferOptions{BuiltinFile: true}
	if _, err := Push(ctx, s, remote, o); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddThought(ctx, sess.ID, ledger.ThoughtInput{Thought: "x", NextThoughtNeeded: true}, ledger.Author{Name: "t"}); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(remote, filepath.FromSlash(mainRef(sess.ID))) + ".lock"
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * staleRefLockAge)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(remote, "thoughtbox", "receive", "fetch-9.pack")
	if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tmp, []byte("PACK"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Push(ctx, s, remote, o)
	if err != nil {
		t.Fatalf("push with a stale lock: %v", err)
	}
	if len(res.Updated) != 1 || len(res.Rejected) != 0 {
		t.Fatalf("push with a stale lock: %+v", res)
	}
	want, _ := s.ReadRef(mainRef(sess.ID))
	if got, _ := refs.Read(remote, mainRef(sess.ID)); got != want {
		t.Errorf("remote ref = %s, want %s", got, want)
	}
	for _, p := range []string{lock, tmp} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
}

// TestBuiltinReceiverNeverWritesRefsInPlace: over the built-in transport a
// remote ref file is replaced by a rename (a new inode), the way git moves
// refs, never truncated and rewritten where a kill could leave it empty.
// The kill campaign above finds in-place writes only by chance; this finds
// them every time.
func TestBuiltinReceiverNeverWritesRefsInPlace(t *testing.T) {
	ctx := context.Background()
	remote := filepath.Join(t.TempDir(), "remote.git")
	if err := os.MkdirAll(remote, 0o755); err != nil {
		t.Fatal(err)
	}
	if r, err := gitstore.Open(remote, gitstore.Options{}); err != nil {
		t.Fatal(err)
	} else {
		r.Close()
	}
	s, err := gitstore.Open(filepath.Join(t.TempDir(), "a.git"), gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := ledger.New(s, ledger.Options{})
	sess, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "t"}, ledger.Author{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	o := TransferOptions{BuiltinFile: true}
	refFile := filepath.Join(remote, filepath.FromSlash(mainRef(sess.ID)))
	var prev uint64
	for i := 0; i < 3; i++ {
		if _, err := l.AddThought(ctx, sess.ID, ledger.ThoughtInput{Thought: fmt.Sprint("thought ", i), NextThoughtNeeded: true}, ledger.Author{Name: "t"}); err != nil {
			t.Fatal(err)
		}
		if _, err := Push(ctx, s, remote, o); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(refFile); err != nil {
			t.Fatal(err)
		}
		if ino, _ := durable.PathID(refFile); i > 0 && ino == prev {
			t.Fatalf("push %d rewrote %s in place (inode %d kept)", i+1, refFile, ino)
		} else {
			prev = ino
		}
		if _, err := os.Stat(refFile + ".lock"); err == nil {
			t.Fatalf("push %d left %s.lock", i+1, refFile)
		}
	}
}

// TestBuiltinReceiverDeletesRefsGitsWay: a ref deleted through the built-in
// receiver goes from packed-refs (rewritten under packed-refs.lock, every
// other line and its peeled line kept) and from its loose file; a ref that
// moved since the pusher read it is not deleted; a name outside refs/ is
// refused.
func TestBuiltinReceiverDeletesRefsGitsWay(t *testing.T) {
	if !gitInstalled() {
		t.Skip("the git CLI is not installed")
	}
	dir := filepath.Join(t.TempDir(), "remote.git")
	if out, err := runGit(filepath.Dir(dir), "init", "-q", "--bare", dir); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	// Three commits on three refs, one of them annotated-tagged (a peeled
	// line in packed-refs), all packed; then one made loose again.
	work := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "--allow-empty", "-m", "one"},
		{"-c", "user.name=t", "-c", "user.email=t@x", "tag", "-a", "-m", "v1", "v1"},
		{"push", "-q", dir, "HEAD:refs/heads/a", "HEAD:refs/heads/b", "HEAD:refs/heads/c", "v1"},
	} {
		if out, err := runGit(work, args...); err != nil {
			t.Fatalf("%v %s", err, out)
		}
	}
	if out, err := runGit(dir, "pack-refs", "--all"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	head, _ := runGit(work, "rev-parse", "HEAD")
	id := strings.TrimSpace(head)
	if out, err := runGit(dir, "update-ref", "refs/heads/c", id); err != nil {
		t.Fatalf("%v %s", err, out)
	}

	st, err := loadReceiver(&transport.Endpoint{Protocol: "file", Path: dir})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := object.ParseHash(id)
	st.expect[plumbing.ReferenceName("refs/heads/b")] = zeroHash // the pusher saw no b
	if err := st.RemoveReference("refs/heads/b"); err == nil || !strings.Contains(err.Error(), "moved meanwhile") {
		t.Fatalf("deleting a ref that moved: %v", err)
	}
	st.expect[plumbing.ReferenceName("refs/heads/b")] = h
	for _, name := range []plumbing.ReferenceName{"refs/heads/b", "refs/heads/c"} {
		if err := st.RemoveReference(name); err != nil {
			t.Fatalf("delete %s: %v", name, err)
		}
	}
	if err := st.RemoveReference("HEAD/../config"); err == nil {
		t.Error("a name outside refs/ was taken")
	}
	out, err := runGit(dir, "for-each-ref", "--format=%(refname)")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(out); !slices.Equal(got, []string{"refs/heads/a", "refs/tags/v1"}) {
		t.Errorf("refs left: %v; want a and the tag", got)
	}
	packed, err := os.ReadFile(filepath.Join(dir, "packed-refs"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(packed), "\n^") || strings.Contains(string(packed), "refs/heads/b") {
		t.Errorf("packed-refs lost the tag's peeled line or kept b:\n%s", packed)
	}
	for _, leftover := range []string{"packed-refs.lock", "refs/heads/b.lock", "refs/heads/c", "refs/heads/c.lock"} {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(leftover))); err == nil {
			t.Errorf("%s is still there", leftover)
		}
	}
	if out, err := runGit(dir, "fsck", "--strict"); err != nil {
		t.Errorf("fsck: %v\n%s", err, out)
	}
}
