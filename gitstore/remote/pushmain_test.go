package remote

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/sharing"
)

// TestFirstPushesRaceForMain: two ledgers push to one empty remote at the
// same time, as a team's servers do when they start (issue 12 saw one
// `refs/heads/main` refused each time). Both read the remote without a
// main; the second to send must not be refused it, and both must agree
// with the remote's main afterwards.
func TestFirstPushesRaceForMain(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	ctx := context.Background()
	remote := filepath.Join(t.TempDir(), "team.git")
	if out, err := exec.Command("git", "init", "--bare", "-q", remote).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	open := func(name string) *gitstore.Store {
		s, err := gitstore.Open(filepath.Join(t.TempDir(), name+".git"), gitstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open("a"), open("b")
	firstThought(t, a, "alice", "alice's first thought")
	firstThought(t, b, "bob", "bob's first thought")

	var bobs *sharing.PushResult
	pushPlanned = func() {
		// A has read the empty remote and chosen its commands; B pushes
		// all of its own before A sends them.
		pushPlanned = nil
		var err error
		if bobs, err = Push(ctx, b, remote, TransferOptions{}); err != nil {
			t.Errorf("b's push: %v", err)
		}
	}
	t.Cleanup(func() { pushPlanned = nil })
	alices, err := Push(ctx, a, remote, TransferOptions{})
	if err != nil {
		t.Fatalf("a's push: %v", err)
	}
	if bobs == nil {
		t.Fatal("the hook did not run: this test no longer races the pushes")
	}
	for who, res := range map[string]*sharing.PushResult{"a": alices, "b": bobs} {
		if len(res.Rejected) != 0 {
			t.Errorf("%s's push was refused: %+v", who, res.Rejected)
		}
	}
	out, err := exec.Command("git", "--git-dir", remote, "for-each-ref", "--format=%(objectname) %(refname)").CombinedOutput()
	if err != nil {
		t.Fatalf("git for-each-ref: %v\n%s", err, out)
	}
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, name, _ := strings.Cut(line, " ")
		refs[name] = id
	}
	if len(refs) != 3 {
		t.Errorf("remote refs: %v; want main and both sessions", refs)
	}
	for who, s := range map[string]*gitstore.Store{"a": a, "b": b} {
		m, err := s.ReadRef("refs/heads/main")
		if err != nil || m.String() != refs["refs/heads/main"] {
			t.Errorf("%s's main is %s (%v); the remote's is %s", who, m, err, refs["refs/heads/main"])
		}
	}
	if out, err := exec.Command("git", "--git-dir", remote, "fsck", "--strict").CombinedOutput(); err != nil {
		t.Errorf("git fsck --strict: %v\n%s", err, out)
	}
}

// firstThought starts a session on s and records one thought in it.
func firstThought(t *testing.T, s *gitstore.Store, who, text string) {
	t.Helper()
	l := ledger.New(s, ledger.Options{})
	ctx := context.Background()
	sess, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: who + "'s session"}, ledger.Author{Name: who})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddThought(ctx, sess.ID, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true}, ledger.Author{Name: who}); err != nil {
		t.Fatal(err)
	}
}
