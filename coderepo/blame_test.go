package coderepo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseBlame groups porcelain lines into runs by commit: a commit's
// header fields appear once, and a commit that comes back after another
// starts a new run.
func TestParseBlame(t *testing.T) {
	a, b := "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	out := a + " 1 1 2\nauthor Dev\nsummary first\nfilename f\n\tone\n" +
		a + " 2 2\n\ttwo\n" +
		b + " 3 3 1\nauthor Dev\nsummary second\nboundary\nfilename f\n\tthree\n" +
		a + " 4 4 1\n\tfour\n"
	got, err := parseBlame(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []BlameRange{{From: 1, To: 2, Commit: a}, {From: 3, To: 3, Commit: b}, {From: 4, To: 4, Commit: a}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	p, _ := parsePorcelain(out)
	if !p.boundary[b] || p.boundary[a] || p.filename[b] != "f" {
		t.Errorf("boundary %v, filename %v: want b a boundary, named f", p.boundary, p.filename)
	}
	if _, err := parseBlame("not porcelain\n"); err == nil {
		t.Error("a line that is no header was accepted")
	}
}

// TestBlameCache: through a history of edits, insertions and deletions,
// uncommitted changes, a reset to an older commit, a branch that is not
// a descendant, a rename and a damaged cache file, Blame (which answers
// from its cache when it can) gives what plain git blame gives, for the
// whole file and for line ranges.
func TestBlameCache(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "code")
	git(t, filepath.Dir(dir), "init", "-q", "-b", "main", dir)
	r, err := Find(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	file := filepath.Join(dir, "f.txt")
	lines := make([]string, 60)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d", i)
	}
	write := func() {
		t.Helper()
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit := func(n int) {
		i := rnd.IntN(len(lines))
		switch rnd.IntN(3) {
		case 0:
			lines[i] = fmt.Sprintf("edit %d", n)
		case 1:
			lines = append(lines[:i], append([]string{fmt.Sprintf("insert %d", n)}, lines[i:]...)...)
		default:
			if len(lines) > 10 {
				lines = append(lines[:i], lines[i+1:]...)
			}
		}
		write()
	}
	check := func(step string) {
		t.Helper()
		out, err := r.git(ctx, "blame", "--porcelain", "--", "f.txt")
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		want, _ := parseBlame(out)
		got, err := r.Blame(ctx, "f.txt", 0, 0)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: whole file (-git blame +Blame):\n%s", step, diff)
		}
		from := 1 + rnd.IntN(len(lines))
		to := min(from+rnd.IntN(5), len(lines))
		out, _ = r.git(ctx, "blame", "--porcelain", "-L", fmt.Sprintf("%d,%d", from, to), "--", "f.txt")
		want, _ = parseBlame(out)
		if got, err = r.Blame(ctx, "f.txt", from, to); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: lines %d-%d (-git blame +Blame):\n%s", step, from, to, diff)
		}
	}
	commit := func(n int) {
		edit(n)
		edit(n)
		git(t, dir, "add", "f.txt")
		git(t, dir, "commit", "-q", "-m", fmt.Sprintf("change %d", n))
	}

	write()
	other := make([]string, 40)
	for i := range other {
		other[i] = fmt.Sprintf("other %d", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "other.txt"), []byte(strings.Join(other, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "f.txt", "other.txt")
	git(t, dir, "commit", "-q", "-m", "first")
	for n := 1; n <= 30; n++ {
		commit(n)
		if n%4 == 0 {
			check(fmt.Sprintf("after commit %d", n))
			// The answer walked past new commits: the cache moved to HEAD.
			head, _ := r.git(ctx, "rev-parse", "HEAD")
			if c := r.readBlameCache("f.txt"); c == nil || c.commit != strings.TrimSpace(head) {
				t.Fatalf("after commit %d: the cache is not at HEAD %s", n, head)
			}
		}
		if n%7 == 0 {
			edit(-n) // uncommitted
			check(fmt.Sprintf("uncommitted after %d", n))
			git(t, dir, "checkout", "-q", "--", "f.txt")
			data, _ := os.ReadFile(file)
			lines = strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		}
	}
	if _, err := os.Stat(r.blameCachePath("f.txt")); err != nil {
		t.Fatalf("no cache was written: %v", err)
	}
	// Back in time: the cache's commit is no ancestor of HEAD.
	git(t, dir, "reset", "-q", "--hard", "HEAD~12")
	reload := func() {
		data, _ := os.ReadFile(file)
		lines = strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	}
	reload()
	check("after reset")
	// A side branch from before the cache's commit, then back.
	git(t, dir, "checkout", "-q", "-b", "side", "HEAD~5")
	reload()
	commit(100)
	check("on a side branch")
	git(t, dir, "checkout", "-q", "main")
	reload()
	commit(101)
	check("back on main")
	// A damaged cache file is ignored.
	if err := os.WriteFile(r.blameCachePath("f.txt"), []byte(blameCacheHeader+"\nnot a commit f.txt\n1 2 x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("damaged cache")
	// A cache whose runs are short of the file's lines is not trusted.
	c := r.readBlameCache("f.txt")
	c.ranges = c.ranges[:1]
	r.writeBlameCache("f.txt", c)
	check("short cache")
	// Another file, older than the cache, takes f.txt's name: git blame
	// follows it back to its old name, and f.txt's cache must not answer
	// for it.
	git(t, dir, "mv", "f.txt", "g.txt")
	git(t, dir, "commit", "-q", "-m", "rename f")
	git(t, dir, "mv", "other.txt", "f.txt")
	git(t, dir, "commit", "-q", "-m", "rename other")
	lines = other
	check("another file under the name")
}
