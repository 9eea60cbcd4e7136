package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/sharing"
)

// incomingFixture is a ledger A pushed to a bare remote, a git work tree
// cloned from the remote to tamper with, and a ledger B that pulls.
type incomingFixture struct {
	t              *testing.T
	remote, work   string
	a, b           *gitstore.Store
	bDir           string // b's Git directory
	al, bl         *ledger.Ledger
	s1, s2         string
	builtinPulling bool
}

func newIncomingFixture(t *testing.T, builtin bool) *incomingFixture {
	t.Helper()
	if !gitInstalled() {
		t.Skip("needs git to tamper with the remote")
	}
	ctx := context.Background()
	f := &incomingFixture{t: t, builtinPulling: builtin}
	f.remote = filepath.Join(t.TempDir(), "remote.git")
	if out, err := runGit(filepath.Dir(f.remote), "init", "-q", "--bare", f.remote); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	open := func(name string) (*gitstore.Store, *ledger.Ledger) {
		dir := filepath.Join(t.TempDir(), name)
		if name == "b.git" {
			f.bDir = dir
		}
		s, err := gitstore.Open(dir, gitstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, ledger.New(s, ledger.Options{})
	}
	f.a, f.al = open("a.git")
	f.b, f.bl = open("b.git")
	for i, title := range []string{"one", "two"} {
		sess, err := f.al.StartSession(ctx, ledger.CreateSessionParams{Title: title}, ledger.Author{Name: "a"})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			f.s1 = sess.ID
		} else {
			f.s2 = sess.ID
		}
		f.think(f.al, sess.ID, "first thought of "+title)
	}
	if _, err := Push(ctx, f.a, f.remote, TransferOptions{}); err != nil {
		t.Fatal(err)
	}
	f.work = filepath.Join(t.TempDir(), "work")
	if out, err := runGit(filepath.Dir(f.work), "clone", "-q", f.remote, f.work); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	for _, args := range [][]string{{"config", "user.name", "mallory"}, {"config", "user.email", "m@example.com"}} {
		if out, err := runGit(f.work, args...); err != nil {
			t.Fatalf("%v %s", err, out)
		}
	}
	return f
}

func (f *incomingFixture) think(l *ledger.Ledger, id, text string) {
	f.t.Helper()
	if _, err := l.AddThought(context.Background(), id, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true}, ledger.Author{Name: "a"}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *incomingFixture) git(args ...string) string {
	f.t.Helper()
	out, err := runGit(f.work, args...)
	if err != nil {
		f.t.Fatalf("%v %s", err, out)
	}
	return out
}

// commitOn checks out a session's main chain in the work tree, lets edit
// change files, commits with msg and pushes the result to the remote.
func (f *incomingFixture) commitOn(id, msg string, edit func(folder string)) {
	f.t.Helper()
	f.git("checkout", "-q", "-B", "w", "origin/sessions/"+id+"/main")
	files := strings.Fields(f.git("ls-files", "sessions"))
	folder := ""
	for _, p := range files {
		if strings.HasSuffix(p, "/"+id+"/manifest.json") {
			folder = filepath.Join(f.work, filepath.Dir(p))
		}
	}
	if folder == "" {
		f.t.Fatalf("no manifest of %s in %v", id, files)
	}
	edit(folder)
	f.git("add", "-A")
	f.git("commit", "-q", "-m", msg)
	f.git("push", "-q", "origin", "w:refs/heads/sessions/"+id+"/main")
}

func (f *incomingFixture) pull(o TransferOptions) *sharing.PullResult {
	f.t.Helper()
	o.BuiltinFile = f.builtinPulling
	res, err := Pull(context.Background(), f.b, f.remote, o)
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

// wantQuarantined checks that exactly the session id was quarantined, with
// a problem containing want, and that its chain is kept where the result
// says while the live ref is at live.
func (f *incomingFixture) wantQuarantined(res *sharing.PullResult, id, want string, live hash) {
	f.t.Helper()
	if len(res.Quarantined) == 0 {
		f.t.Fatalf("nothing quarantined; result %+v", res)
	}
	for _, q := range res.Quarantined {
		if q.Session != id {
			f.t.Errorf("quarantined %s, want only %s", q.Session, id)
		}
		if !strings.Contains(strings.Join(q.Problems, "\n"), want) {
			f.t.Errorf("problems of %s = %q, want one containing %q", q.Ref, q.Problems, want)
		}
		if !strings.HasPrefix(q.KeptAs, gitstore.QuarantinePrefix) {
			f.t.Errorf("kept as %s, want under %s", q.KeptAs, gitstore.QuarantinePrefix)
		}
		f.wantKeptAside(q)
	}
	got, err := f.b.ReadRef(mainRef(id))
	if err != nil {
		f.t.Fatal(err)
	}
	if got != live {
		f.t.Errorf("live ref of %s = %s, want %s", id, got, live)
	}
	for _, c := range append(res.Created, res.Updated...) {
		if c.Session == id {
			f.t.Errorf("the quarantined session's ref %s moved too", c.Ref)
		}
	}
}

// wantKeptAside checks that a quarantined chain is in the quarantine
// repository, readable with plain git, and not in the ledger, whose git
// fsck --strict stays clean.
func (f *incomingFixture) wantKeptAside(q sharing.Quarantined) {
	f.t.Helper()
	if want := gitstore.QuarantineDir(f.bDir); q.Repository != want {
		f.t.Errorf("kept in %q, want the quarantine repository %s", q.Repository, want)
		return
	}
	if out, err := runGit(f.bDir, "--git-dir", q.Repository, "rev-parse", q.KeptAs); err != nil || strings.TrimSpace(out) != q.Tip {
		f.t.Errorf("%s in %s = %q (%v), want %s", q.KeptAs, q.Repository, out, err, q.Tip)
	}
	if out, err := runGit(f.bDir, "--git-dir", q.Repository, "log", "--format=%s", q.KeptAs); err != nil || out == "" {
		f.t.Errorf("git log %s in the quarantine repository: %v\n%s", q.KeptAs, err, out)
	}
	if _, err := runGit(f.bDir, "--git-dir", f.bDir, "cat-file", "-e", q.Tip); err == nil {
		f.t.Errorf("the quarantined tip %s is in the ledger's objects", q.Tip)
	}
	if err := f.b.Flush(); err != nil {
		f.t.Fatal(err)
	}
	if out, err := runGit(f.bDir, "--git-dir", f.bDir, "fsck", "--strict", "--full", "--no-dangling"); err != nil {
		f.t.Errorf("git fsck --strict of the ledger after the quarantine: %v\n%s", err, out)
	}
}

func forBothFileTransports(t *testing.T, fn func(t *testing.T, builtin bool)) {
	for _, builtin := range []bool{false, true} {
		name := "git"
		if builtin {
			name = "builtin"
		}
		t.Run(name, func(t *testing.T) { fn(t, builtin) })
	}
}

// TestPullQuarantinesManifestOfAnotherSession: a chain whose manifest
// claims another session's id stays out of the live ledger, the other
// sessions come in, and listing sessions does not show the id twice.
func TestPullQuarantinesManifestOfAnotherSession(t *testing.T) {
	forBothFileTransports(t, func(t *testing.T, builtin bool) {
		f := newIncomingFixture(t, builtin)
		f.commitOn(f.s1, "Thought 2\n\nThoughtbox-Session: "+f.s1+"\nThoughtbox-Thought: 2\n", func(folder string) {
			p := filepath.Join(folder, "manifest.json")
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(data), f.s1, f.s2)), 0o644); err != nil {
				t.Fatal(err)
			}
		})
		res := f.pull(TransferOptions{})
		f.wantQuarantined(res, f.s1, "names session", zeroHash)
		list, err := f.b.ListSessions(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].Meta.ID != f.s2 {
			t.Errorf("sessions after the pull = %+v, want only %s", list, f.s2)
		}
	})
}

// TestPullQuarantinesPlainGitCommit: a commit without Thoughtbox trailers on
// a session we already have does not move our ref, and our chain stays
// valid and writable.
func TestPullQuarantinesPlainGitCommit(t *testing.T) {
	forBothFileTransports(t, func(t *testing.T, builtin bool) {
		f := newIncomingFixture(t, builtin)
		f.pull(TransferOptions{})
		before, err := f.b.ReadRef(mainRef(f.s1))
		if err != nil || before == zeroHash {
			t.Fatalf("first pull: %s %v", before, err)
		}
		f.commitOn(f.s1, "just a note", func(folder string) {
			if err := os.WriteFile(filepath.Join(folder, "notes.txt"), []byte("hello\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		})
		res := f.pull(TransferOptions{})
		f.wantQuarantined(res, f.s1, "no Thoughtbox-Session trailer", before)
		v, err := f.b.Verify(context.Background(), f.s1, ledger.VerifyOptions{})
		if err != nil || !v.Valid {
			t.Errorf("verify after the pull: %+v %v", v, err)
		}
		f.think(f.bl, f.s1, "b goes on")
	})
}

// TestPullQuarantinesOversizedThought: a thought file over MaxThoughtBytes
// is refused; with the default limit the same chain comes in.
func TestPullQuarantinesOversizedThought(t *testing.T) {
	f := newIncomingFixture(t, false)
	f.think(f.al, f.s2, strings.Repeat("long ", 400))
	if _, err := Push(context.Background(), f.a, f.remote, TransferOptions{}); err != nil {
		t.Fatal(err)
	}
	res := f.pull(TransferOptions{MaxThoughtBytes: 1500})
	f.wantQuarantined(res, f.s2, "more than the limit of 1500", zeroHash)
	res = f.pull(TransferOptions{})
	if len(res.Quarantined) != 0 || len(res.Created) != 1 || res.Created[0].Session != f.s2 {
		t.Errorf("pull with the default limit: %+v", res)
	}
}

// TestPullMeasuresThoughtText: the limit a pull applies is on a thought's
// text, as the ledger measures it when it accepts one, not on the file
// that stores it. A thought exactly at the limit made of '<' (which the
// thought file's JSON writes as six bytes each) comes in; under a limit one
// byte lower the same chain is quarantined, naming the thought.
func TestPullMeasuresThoughtText(t *testing.T) {
	f := newIncomingFixture(t, false)
	f.think(f.al, f.s2, strings.Repeat("<", ledger.DefaultMaxThoughtBytes))
	if _, err := Push(context.Background(), f.a, f.remote, TransferOptions{}); err != nil {
		t.Fatal(err)
	}
	res := f.pull(TransferOptions{MaxThoughtBytes: ledger.DefaultMaxThoughtBytes - 1})
	f.wantQuarantined(res, f.s2, fmt.Sprintf("is %d bytes: more than the limit of %d", ledger.DefaultMaxThoughtBytes, ledger.DefaultMaxThoughtBytes-1), zeroHash)
	res = f.pull(TransferOptions{})
	if len(res.Quarantined) != 0 || len(res.Created) != 1 || res.Created[0].Session != f.s2 {
		t.Fatalf("pull with the default limit: %+v", res)
	}
	v, err := f.bl.Load(context.Background(), f.s2)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := v.Graph.Thought(2); !ok || n.Data.Thought != strings.Repeat("<", ledger.DefaultMaxThoughtBytes) || !v.Integrity.Valid {
		t.Errorf("the pulled thought: found %v, %d bytes; integrity %+v", ok, len(n.Data.Thought), v.Integrity)
	}
}

// TestPullLimitIgnoresFileEncoding: under a limit far below the size of a
// thought file or a manifest, short thoughts come in — on both transports.
func TestPullLimitIgnoresFileEncoding(t *testing.T) {
	forBothFileTransports(t, func(t *testing.T, builtin bool) {
		f := newIncomingFixture(t, builtin)
		for i := 0; i < 30; i++ {
			f.think(f.al, f.s1, "step <"+strconv.Itoa(i)+">")
		}
		if _, err := Push(context.Background(), f.a, f.remote, TransferOptions{}); err != nil {
			t.Fatal(err)
		}
		res := f.pull(TransferOptions{MaxThoughtBytes: len("first thought of one")})
		if len(res.Quarantined) != 0 || len(res.Created) != 2 {
			t.Fatalf("pull under a limit of %d bytes: %+v", len("first thought of one"), res)
		}
	})
}

// TestPullQuarantinesBadKnowledge: a knowledge entry without front matter
// keeps the zone's incoming tip out of refs/heads/knowledge.
func TestPullQuarantinesBadKnowledge(t *testing.T) {
	f := newIncomingFixture(t, true)
	f.git("checkout", "-q", "--orphan", "k")
	if err := os.MkdirAll(filepath.Join(f.work, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.work, "notes", "x.md"), []byte("no front matter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.git("add", "notes")
	f.git("commit", "-q", "-m", "knowledge")
	f.git("push", "-q", "origin", "k:refs/heads/knowledge")
	res := f.pull(TransferOptions{})
	if len(res.Quarantined) != 1 || res.Quarantined[0].Ref != gitstore.KnowledgeRef ||
		!strings.Contains(strings.Join(res.Quarantined[0].Problems, " "), "front matter") {
		t.Fatalf("quarantined %+v", res.Quarantined)
	}
	if h, _ := f.b.ReadRef(gitstore.KnowledgeRef); h != zeroHash {
		t.Errorf("knowledge ref moved to %s", h)
	}
	if len(res.Created) != 2 {
		t.Errorf("created %+v, want the two sessions", res.Created)
	}
}

func mainRef(id string) string { return gitstore.SessionRefPrefix + id + "/main" }
