package gitstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

func testLink(commit string) ledger.CodeLink {
	return ledger.CodeLink{Commit: commit, Files: []string{"a.go"}, Via: ledger.ViaCommit, At: time.Unix(1700000000, 0).UTC()}
}

// commitID makes a full commit id from n.
func commitID(n int) string { return fmt.Sprintf("%040x", n) }

// TestLinksBesideTheChains: a session's links ref sits beside main, and
// nothing that reads a session's refs mistakes it for a chain: listing,
// loading, verify, delete and restore; git fsck --strict is clean and no
// branch shows.
func TestLinksBesideTheChains(t *testing.T) {
	work, gitDir := codeRepo(t)
	ctx := context.Background()
	s := openInCode(t, gitDir)
	defer s.Close()
	l := ledger.New(s, ledger.Options{})
	sess, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "Links"}, ledger.Author{Name: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddThought(ctx, sess.ID, ledger.ThoughtInput{Thought: "one", NextThoughtNeeded: true}, ledger.Author{Name: "agent"}); err != nil {
		t.Fatal(err)
	}
	n, err := s.AddLinks(ctx, sess.ID, []ledger.CodeLink{testLink(commitID(1)), testLink(commitID(2))})
	if err != nil || n != 2 {
		t.Fatalf("AddLinks: %d, %v", n, err)
	}
	if n, err := s.AddLinks(ctx, sess.ID, []ledger.CodeLink{testLink(commitID(2)), testLink(commitID(3))}); err != nil || n != 1 {
		t.Fatalf("AddLinks again: %d added, %v; want only the new one", n, err)
	}
	links, tip, err := s.ReadLinks(ctx, sess.ID)
	if err != nil || len(links) != 3 || tip == "" {
		t.Fatalf("ReadLinks: %d links at %q, %v", len(links), tip, err)
	}
	if links[0].Session != sess.ID || links[0].Commit != commitID(1) {
		t.Errorf("first link %+v", links[0])
	}
	tips, err := s.LinkTips(ctx)
	if err != nil || tips[sess.ID] != tip || len(tips) != 1 {
		t.Errorf("LinkTips %v, %v; want %s", tips, err, tip)
	}
	list, err := s.ListSessions(ctx)
	if err != nil || len(list) != 1 || list[0].Meta.ID != sess.ID {
		t.Fatalf("ListSessions: %+v, %v", list, err)
	}
	v, err := l.Load(ctx, sess.ID)
	if err != nil || v.Session.ThoughtCount != 1 || len(v.Graph.Branches()) != 0 {
		t.Fatalf("Load: %+v, %v", v, err)
	}
	res, err := s.Verify(ctx, sess.ID, ledger.VerifyOptions{})
	if err != nil || !res.Valid {
		t.Fatalf("Verify: %+v, %v", res, err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	codeGit(t, work, "fsck", "--strict", "--no-dangling")
	codeGit(t, work, "gc", "--aggressive", "--prune=now", "-q")
	if b := codeGit(t, work, "branch", "-a"); strings.TrimSpace(b) != "* main" {
		t.Errorf("git branch -a shows more than main:\n%s", b)
	}
	files := codeGit(t, work, "ls-tree", "-r", "--name-only", "refs/thoughtbox/v1/sessions/"+sess.ID+"/links")
	if want := "links/" + commitID(1) + ".json\nlinks/" + commitID(2) + ".json\nlinks/" + commitID(3) + ".json\n"; files != want {
		t.Errorf("the links ref's tree:\n%s\nwant\n%s", files, want)
	}

	if _, err := s.DeleteSession(ctx, sess.ID, "Links", ledger.Author{Name: "me"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if tips, _ := s.LinkTips(ctx); len(tips) != 0 {
		t.Errorf("a deleted session's links are still listed: %v", tips)
	}
	if _, err := s.AddLinks(ctx, sess.ID, []ledger.CodeLink{testLink(commitID(4))}); !errors.Is(err, ledger.ErrSessionNotFound) {
		t.Errorf("AddLinks to a deleted session: %v, want ErrSessionNotFound", err)
	}
	if _, err := s.RestoreSession(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	if links, _, err := s.ReadLinks(ctx, sess.ID); err != nil || len(links) != 3 {
		t.Errorf("after restore: %d links, %v", len(links), err)
	}
}

// TestAddLinksRace: writers adding links to one session at once all
// land, the losers of a compare-and-swap rebuilding on the new tip.
func TestAddLinksRace(t *testing.T) {
	_, gitDir := codeRepo(t)
	ctx := context.Background()
	s := openInCode(t, gitDir)
	defer s.Close()
	sess, err := ledger.New(s, ledger.Options{}).StartSession(ctx, ledger.CreateSessionParams{Title: "Race"}, ledger.Author{Name: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				if _, err := s.AddLinks(ctx, sess.ID, []ledger.CodeLink{testLink(commitID(w*100 + i + 1))}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if links, _, err := s.ReadLinks(ctx, sess.ID); err != nil || len(links) != 40 {
		t.Fatalf("%d links, %v; want 40", len(links), err)
	}
}

// TestAddLinksRefused: bad links, unknown sessions and standalone ledgers
// change nothing.
func TestAddLinksRefused(t *testing.T) {
	ctx := context.Background()
	_, gitDir := codeRepo(t)
	s := openInCode(t, gitDir)
	defer s.Close()
	sess, err := ledger.New(s, ledger.Options{}).StartSession(ctx, ledger.CreateSessionParams{Title: "Bad"}, ledger.Author{Name: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	bad := testLink("abc")
	if _, err := s.AddLinks(ctx, sess.ID, []ledger.CodeLink{bad}); err == nil || !strings.Contains(err.Error(), "commit") {
		t.Errorf("a short commit id: %v", err)
	}
	bad = testLink(commitID(1))
	bad.Via = "teleport"
	if _, err := s.AddLinks(ctx, sess.ID, []ledger.CodeLink{bad}); err == nil || !strings.Contains(err.Error(), "via") {
		t.Errorf("an unknown via: %v", err)
	}
	if _, err := s.AddLinks(ctx, "c0de0000-0000-4000-8000-00000000dead", []ledger.CodeLink{testLink(commitID(1))}); !errors.Is(err, ledger.ErrSessionNotFound) {
		t.Errorf("an unknown session: %v", err)
	}
	if tips, _ := s.LinkTips(ctx); len(tips) != 0 {
		t.Errorf("refused links left a ref: %v", tips)
	}
	mem, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.AddLinks(ctx, sess.ID, nil); !errors.Is(err, gitstore.ErrNoLinks) {
		t.Errorf("a standalone ledger: %v, want ErrNoLinks", err)
	}
}

// TestVerifyReportsDamagedLinks: a links ref whose tree holds a file
// that is no link (written with git by hand) makes verify fail.
func TestVerifyReportsDamagedLinks(t *testing.T) {
	work, gitDir := codeRepo(t)
	ctx := context.Background()
	s := openInCode(t, gitDir)
	sess, err := ledger.New(s, ledger.Options{}).StartSession(ctx, ledger.CreateSessionParams{Title: "Damaged"}, ledger.Author{Name: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	blob := strings.TrimSpace(codeGitIn(t, work, "not json\n", "hash-object", "-w", "--stdin"))
	dir := strings.TrimSpace(codeGitIn(t, work, "100644 blob "+blob+"\t"+commitID(1)+".json\n", "mktree"))
	root := strings.TrimSpace(codeGitIn(t, work, "040000 tree "+dir+"\tlinks\n", "mktree"))
	c := strings.TrimSpace(codeGit(t, work, "commit-tree", root, "-m", "hand-made"))
	codeGit(t, work, "update-ref", "refs/thoughtbox/v1/sessions/"+sess.ID+"/links", c)
	s = openInCode(t, gitDir)
	defer s.Close()
	res, err := s.Verify(ctx, sess.ID, ledger.VerifyOptions{})
	if err != nil || res.Valid || !strings.Contains(strings.Join(res.Errors, "\n"), "expected a JSON link") {
		t.Fatalf("Verify: valid %v, errors %q, %v", res.Valid, res.Errors, err)
	}
}

// codeGitIn is codeGit with stdin.
func codeGitIn(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@example.com")
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}
