package remote_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/gitstore/remote/remotetest"
	"github.com/thoughtbox/thoughtbox/ledger"
)

func addLinks(t *testing.T, c *remotetest.Clone, id string, ns ...int) {
	t.Helper()
	var links []ledger.CodeLink
	for _, n := range ns {
		links = append(links, ledger.CodeLink{Commit: fmt.Sprintf("%040x", n), Files: []string{"a.go"}, Via: ledger.ViaCommit, At: time.Unix(1700000000, 0).UTC()})
	}
	if _, err := c.Store.AddLinks(context.Background(), id, links); err != nil {
		t.Fatal(err)
	}
}

func linkCount(t *testing.T, c *remotetest.Clone, id string) int {
	t.Helper()
	links, _, err := c.Store.ReadLinks(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return len(links)
}

// TestPushPullLinks: a session's links ref travels with it; links added
// on two clones are merged by the next pull (links only add), and a
// clone that is behind on links still pushes its thoughts.
func TestPushPullLinks(t *testing.T) {
	o := remote.TransferOptions{BuiltinFile: true}
	bare := remotetest.BareRemote(t)
	a, _ := inCode(t, "alice")
	b, _ := inCode(t, "bob")
	id := a.Start("Linked")
	a.Think(id, "one")
	addLinks(t, a, id, 1, 2)
	a.Push(bare, o)
	if got := b.Pull(bare, o); len(got.Created) != 2 || len(got.Quarantined) != 0 {
		t.Fatalf("pull: created %+v, quarantined %+v", got.Created, got.Quarantined)
	}
	if n := linkCount(t, b, id); n != 2 {
		t.Fatalf("bob has %d links, want 2", n)
	}

	addLinks(t, a, id, 3)
	a.Push(bare, o)
	addLinks(t, b, id, 4)
	b.Think(id, "two")
	res := b.Push(bare, o)
	if len(res.Rejected) != 1 || res.Rejected[0].Ref != "refs/thoughtbox/v1/sessions/"+id+"/links" {
		t.Fatalf("bob's push: rejected %+v, want only the links ref", res.Rejected)
	}
	pulled := b.Pull(bare, o)
	if len(pulled.Diverged) != 0 || len(pulled.Quarantined) != 0 {
		t.Fatalf("pull: diverged %+v, quarantined %+v", pulled.Diverged, pulled.Quarantined)
	}
	if n := linkCount(t, b, id); n != 4 {
		t.Fatalf("after the merge bob has %d links, want 4", n)
	}
	b.Push(bare, o)
	a.Pull(bare, o)
	if n := linkCount(t, a, id); n != 4 {
		t.Fatalf("alice has %d links, want 4", n)
	}
	if th := a.Thoughts(id); len(th) != 2 {
		t.Fatalf("alice reads %q", th)
	}
}

// TestPullQuarantinesBadLinks: a remote's links ref whose tree holds
// something other than link files is kept aside, never taken in.
func TestPullQuarantinesBadLinks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	o := remote.TransferOptions{BuiltinFile: true}
	bare := remotetest.BareRemote(t)
	a, _ := inCode(t, "alice")
	b, _ := inCode(t, "bob")
	id := a.Start("Linked")
	a.Push(bare, o)
	git := func(stdin string, args ...string) string {
		cmd := exec.Command("git", append([]string{"--git-dir", bare}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@example.com")
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	blob := git("#!/bin/sh\n", "hash-object", "-w", "--stdin")
	root := git("100644 blob "+blob+"\trun.sh\n", "mktree")
	c := git("", "commit-tree", root, "-m", "not links")
	git("", "update-ref", "refs/thoughtbox/v1/sessions/"+id+"/links", c)
	got := b.Pull(bare, o)
	if len(got.Quarantined) != 1 || got.Quarantined[0].Ref != "refs/thoughtbox/v1/sessions/"+id+"/links" {
		t.Fatalf("quarantined %+v", got.Quarantined)
	}
	if n := linkCount(t, b, id); n != 0 {
		t.Fatalf("bob took in %d links", n)
	}
	if ok, err := b.Store.HasSession(context.Background(), id); !ok || err != nil {
		t.Fatalf("the session itself was not taken in: %v", err)
	}
}
