package remote

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestPullKeepsHostileObjectsOutOfTheLedger: a remote whose refs hold what
// git fsck --strict rejects (a tree entry named .GIT, a commit whose author
// line is malformed) and what only our checks reject (a plain git commit,
// a knowledge entry without front matter). After the pull each of them is
// kept in the quarantine repository, readable there with git, and none of
// their objects is in the ledger: git fsck --strict of the ledger is clean,
// and verify agrees with it on every session.
func TestPullKeepsHostileObjectsOutOfTheLedger(t *testing.T) {
	forBothFileTransports(t, func(t *testing.T, builtin bool) {
		f := newIncomingFixture(t, builtin)
		ctx := context.Background()
		if res := f.pull(TransferOptions{}); len(res.Created) != 2 {
			t.Fatalf("first pull: %+v", res)
		}
		f.git("fetch", "-q", "origin")
		// A plain git commit on the first session's chain.
		f.commitOn(f.s1, "just a note", func(folder string) {
			if err := os.WriteFile(filepath.Join(folder, "note.txt"), []byte("not a thought\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		})
		// A commit with the session's trailers whose tree holds .GIT
		// (fsck: hasDotgit), made with plumbing as an attacker would.
		tip := strings.TrimSpace(f.git("rev-parse", "origin/sessions/"+f.s2+"/main"))
		blob := f.gitIn("x\n", "hash-object", "-w", "--stdin")
		tree := f.gitIn(f.git("ls-tree", tip+"^{tree}")+"100644 blob "+blob+"\t.GIT\n", "mktree")
		dotgit := f.gitIn("Thought 2: hostile\n\nThoughtbox-Session: "+f.s2+"\nThoughtbox-Thought: 2\n", "commit-tree", tree, "-p", tip)
		// And a commit whose author line git fsck --strict rejects
		// (badTimezone) on top of it, on the same ref.
		bad := "tree " + tree + "\nparent " + dotgit + "\nauthor A <a@b> 1 +00\ncommitter A <a@b> 1 +0000\n\nThought 3: worse\n\nThoughtbox-Session: " + f.s2 + "\nThoughtbox-Thought: 3\n"
		badTZ := f.gitIn(bad, "hash-object", "-w", "--literally", "-t", "commit", "--stdin")
		f.git("push", "-q", "origin", badTZ+":refs/heads/sessions/"+f.s2+"/main")
		// A knowledge zone entry without front matter.
		f.git("checkout", "-q", "--orphan", "k")
		f.git("rm", "-rq", "--cached", ".")
		if err := os.MkdirAll(filepath.Join(f.work, "notes"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(f.work, "notes", "x.md"), []byte("no front matter\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		f.git("add", "notes")
		f.git("commit", "-q", "-m", "a note")
		f.git("push", "-q", "origin", "k:refs/heads/knowledge")

		res := f.pull(TransferOptions{})
		want := map[string]bool{mainRef(f.s1): true, mainRef(f.s2): true, gitstore.KnowledgeRef: true}
		if len(res.Quarantined) != len(want) {
			t.Fatalf("quarantined %+v, want %d refs", res.Quarantined, len(want))
		}
		for _, q := range res.Quarantined {
			if !want[q.Ref] {
				t.Errorf("quarantined %s, which is not hostile", q.Ref)
			}
			f.wantKeptAside(q)
		}
		for _, obj := range []string{blob, tree, dotgit, badTZ} {
			if _, err := runGit(f.bDir, "--git-dir", f.bDir, "cat-file", "-e", obj); err == nil {
				t.Errorf("hostile object %s is in the ledger", obj)
			}
		}
		for _, id := range []string{f.s1, f.s2} {
			v, err := f.b.Verify(ctx, id, ledger.VerifyOptions{})
			if err != nil || !v.Valid {
				t.Errorf("verify %s: %+v, %v", id, v, err)
			}
		}
		// The quarantine repository is where the hostile objects went:
		// git fsck --strict there finds them.
		out, err := exec.Command("git", "--git-dir", gitstore.QuarantineDir(f.bDir), "fsck", "--strict").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "hasDotgit") {
			t.Errorf("git fsck --strict of the quarantine repository: %v\n%s", err, out)
		}
		// A second pull keeps them aside again, without a second copy.
		res = f.pull(TransferOptions{})
		if len(res.Quarantined) != len(want) {
			t.Fatalf("second pull quarantined %+v", res.Quarantined)
		}
		packs, _ := filepath.Glob(filepath.Join(gitstore.QuarantineDir(f.bDir), "objects", "pack", "*.pack"))
		if len(packs) != 1 {
			t.Errorf("quarantine packs after two pulls: %v, want one", packs)
		}
	})
}

// gitIn runs git in the work tree with stdin and returns its trimmed
// output.
func (f *incomingFixture) gitIn(stdin string, args ...string) string {
	f.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", f.work}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+os.TempDir(), "LC_ALL=C",
		"GIT_AUTHOR_NAME=mallory", "GIT_AUTHOR_EMAIL=m@example.com", "GIT_COMMITTER_NAME=mallory", "GIT_COMMITTER_EMAIL=m@example.com")
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		f.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}
