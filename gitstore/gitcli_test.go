package gitstore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/pack"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/refs"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/repo"
	"github.com/thoughtbox/thoughtbox/internal/durable"
	"github.com/thoughtbox/thoughtbox/ledger"
)

func gitCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestPlainGitReadsTheLedger checks that what we write is ordinary Git:
// git log, show, diff and fsck --strict agree with the store.
func TestPlainGitReadsTheLedger(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed; this test needs it")
	}
	dir := filepath.Join(t.TempDir(), "p.git")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := "a1b2c3d4-0000-4000-8000-0000000000aa"
	w := newSession(t, s, id)
	var c3 ledger.CommitID
	for n := 1; n <= 4; n++ {
		c := w.add("", ledger.ThoughtData{Thought: "main thought " + string(rune('0'+n)), ThoughtNumber: n, NextThoughtNeeded: true}, "")
		if n == 3 {
			c3 = c
		}
	}
	w.tips["fork:redis-approach"] = c3
	w.add("redis-approach", ledger.ThoughtData{Thought: "Alternative approach: what if we use Redis instead?", ThoughtNumber: 4, BranchFromThought: intp(3), BranchID: "redis-approach"}, "")
	w.add("", ledger.ThoughtData{Thought: "Correction: the issue is in the session middleware.", ThoughtNumber: 5, IsRevision: true, RevisesThought: intp(3)}, c3)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}

	gitCLI(t, dir, "fsck", "--strict", "--no-dangling")
	log := gitCLI(t, dir, "log", "--format=%s", "sessions/"+id+"/main")
	wantLog := "Thought 5: Correction: the issue is in the session middleware.\nThought 4: main thought 4\nThought 3: main thought 3\nThought 2: main thought 2\nThought 1: main thought 1\nStart session: Debug the " + id + "\n"
	if log != wantLog {
		t.Errorf("git log:\n%s\nwant:\n%s", log, wantLog)
	}
	if got := gitCLI(t, dir, "log", "-1", "--format=%an", "sessions/"+id+"/main"); got != "claude-code 1.0\n" {
		t.Errorf("author = %q", got)
	}
	show := gitCLI(t, dir, "show", "sessions/"+id+"/main")
	for _, want := range []string{"Thoughtbox-Revises: " + string(c3) + " (thought 3)", "Thoughtbox-Thought: 5", `"revisesThought": 3`, "+    \"005.json\""} {
		if !strings.Contains(show, want) {
			t.Errorf("git show lacks %q:\n%s", want, show)
		}
	}
	diff := gitCLI(t, dir, "diff", "--stat", "sessions/"+id+"/main", "sessions/"+id+"/branches/redis-approach")
	for _, want := range []string{"branches/redis-approach/004.json", "004.json", "005.json", "manifest.json"} {
		if !strings.Contains(diff, want) {
			t.Errorf("git diff lacks %q:\n%s", want, diff)
		}
	}
	blob := gitCLI(t, dir, "show", "sessions/"+id+"/branches/redis-approach:sessions/2026-11/"+id+"/branches/redis-approach/004.json")
	if !strings.Contains(blob, `"branchId": "redis-approach"`) {
		t.Errorf("branch thought file:\n%s", blob)
	}
	branches := gitCLI(t, dir, "branch", "--list", "sessions/*")
	if !strings.Contains(branches, "sessions/"+id+"/main") || !strings.Contains(branches, "sessions/"+id+"/branches/redis-approach") {
		t.Errorf("git branch --list:\n%s", branches)
	}
	if readme := gitCLI(t, dir, "show", "main:README.md"); !strings.Contains(readme, "git log sessions/<sessionId>/main") {
		t.Errorf("README:\n%s", readme)
	}
}

// TestRefsArePacked writes more sessions than repo.PackRefsEvery and checks that
// refs moved into packed-refs, as git pack-refs would, with git and the
// store agreeing on every one.
func TestRefsArePacked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p.git")
	s, err := Open(dir, Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	const n = repo.PackRefsEvery + 44
	for i := 0; i < n; i++ {
		w := newSession(t, s, fmt.Sprintf("a1b2c3d4-0000-4000-8000-%012d", i))
		w.add("", ledger.ThoughtData{Thought: "only thought", ThoughtNumber: 1}, "")
		if i%50 == 49 {
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	loose, _ := refs.ListLoose(dir, "refs/heads/sessions/")
	if len(loose) >= n {
		t.Errorf("%d loose session refs remain; refs were not packed", len(loose))
	}
	list, err := s.ListSessions(context.Background())
	if err != nil || len(list) != n {
		t.Fatalf("listed %d sessions (%v), want %d", len(list), err, n)
	}
	s.Close()
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ss, err := s.LoadSession(context.Background(), "a1b2c3d4-0000-4000-8000-000000000007"); err != nil || len(ss.Main) != 1 {
		t.Fatalf("load after packing: %v", err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	gitCLI(t, dir, "fsck", "--strict", "--no-dangling")
	refs := strings.Fields(gitCLI(t, dir, "for-each-ref", "--format=%(refname)", "refs/heads/sessions/"))
	if len(refs) != n {
		t.Errorf("git sees %d session refs, want %d", len(refs), n)
	}
}

// TestReadsLooseObjectsWrittenByGit: the git CLI writes loose objects
// (a user's `git hash-object -w`, a fetch); the store reads them too.
func TestReadsLooseObjectsWrittenByGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	dir := filepath.Join(t.TempDir(), "p.git")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cmd := exec.Command("git", "--git-dir", dir, "hash-object", "-w", "--stdin")
	cmd.Stdin = strings.NewReader("written by git\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	id, err := object.ParseHash(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	typ, data, err := s.be.ReadObject(t.Context(), id)
	if err != nil || typ != typeBlob || string(data) != "written by git\n" {
		t.Fatalf("read %s: %v %q %v", id, typ, data, err)
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

// TestOpenCleansTransferLeftovers: a store removes, when it opens, the
// temporary packs of transfers that died, and keeps those a live transfer
// holds (flock'd) and those too new to be judged.
func TestOpenCleansTransferLeftovers(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "a.git")
	s, err := Open(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := s.tmpDir()
	s.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * pack.TransferLeftoverAge)
	write := func(name string, when time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("PACK"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, when, when); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dead := write("fetch-1.pack", old)
	deadIdx := write("fetch-1.idx", old)
	live := write("push-2.pack", old)
	fresh := write("push-3.pack", time.Now())
	f, err := os.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := durable.Lock(context.Background(), f, nil, 0); err != nil {
		t.Fatal(err)
	}
	s, err = Open(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []string{dead, deadIdx} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s: a dead transfer's pack is still there", p)
		}
	}
	for _, p := range []string{live, fresh} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: removed, but its transfer may be running: %v", p, err)
		}
	}
}
