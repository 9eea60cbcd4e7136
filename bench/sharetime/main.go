// Command sharetime measures sharing reasoning through a code
// repository, on a repository coderepogen built: what a clone of the code
// transfers (no reasoning), a cold why in that clone (one session fetched
// from a local bare remote: time and bytes), and the time the pre-push
// hook adds to a push of 10 commits linked to 3 sessions.
//
//	go build -o /tmp/tb ./cmd/thoughtbox
//	go run ./bench/coderepogen -dir /tmp/code50k
//	go run ./bench/sharetime -bin /tmp/tb -repo /tmp/code50k -runs 30
//
// It changes the repository: it adds a remote "share" (a bare repository
// beside it, REPO.share.git), binds it, installs the hooks, writes -runs+1
// sessions of 20 thoughts and as many commits naming them, pushes code and
// reasoning there (then packs the bare repository's refs, as a server's
// maintenance does), and clones it to REPO.clone. Each round of the cold why
// asks about a different 20-thought session, which the clone lacks; each
// round of the hook writes 3 sessions of 2 thoughts and 10 commits naming
// them, runs the installed pre-push hook as git would (timed), then pushes
// the code without hooks (timed, for comparison).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/internal/benchkit/machine"
	"github.com/thoughtbox/thoughtbox/internal/benchkit/step"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/project"
)

var (
	bin  = flag.String("bin", "thoughtbox", "the thoughtbox binary")
	repo = flag.String("repo", "", "a repository coderepogen built (required)")
	runs = flag.Int("runs", 30, "rounds of each timed workload")
)

func main() {
	flag.Parse()
	if *repo == "" || *runs < 1 {
		fmt.Fprintln(os.Stderr, "sharetime: -repo is required; -runs at least 1")
		os.Exit(2)
	}
	abin, err := exec.LookPath(*bin)
	step.Check(err)
	abin, err = filepath.Abs(abin)
	step.Check(err)
	src, err := filepath.Abs(*repo)
	step.Check(err)
	bare, clone := src+".share.git", src+".clone"
	for _, d := range []string{bare, clone} {
		if _, err := os.Stat(d); err == nil {
			step.Fail(fmt.Errorf("%s exists: start from a freshly generated repository", d))
		}
	}
	noHooks, err := os.MkdirTemp("", "nohooks")
	step.Check(err)
	defer os.RemoveAll(noHooks)
	load0 := machine.LoadAvg()

	step.Run("", "git", "init", "-q", "--bare", "-b", "main", bare)
	step.Run(src, "git", "remote", "add", "share", bare)
	step.Run(src, abin, "remote", "bind", "share")
	step.Run(src, abin, "hooks", "install")
	linked := writeSessions(src, *runs+1, 20, "Shared change")
	gitNoHooks(src, noHooks, "push", "-q", "share", "main")
	t0 := time.Now()
	step.Run(src, abin, "push", "-q")
	pushAll := time.Since(t0)
	// A hosting server packs its refs in its maintenance; 11,000 loose ref
	// files would make every advertisement read that many files.
	step.Run(bare, "git", "pack-refs", "--all")
	bareSize := packBytes(bare)

	t0 = time.Now()
	step.Run("", "git", "clone", "-q", "--no-local", bare, clone)
	cloneTime := time.Since(t0)
	codeObjects := strings.Count(step.Output(src, "git", "rev-list", "--objects", "main"), "\n")
	cloneObjects := countObjects(clone)
	reasoningRefs := len(strings.Fields(step.Output(clone, "git", "for-each-ref", "--format=%(refname)", "refs/thoughtbox")))
	tips := step.Output(src, "git", "for-each-ref", "--format=%(objectname)", "refs/thoughtbox/v1/")
	cmd := exec.Command("git", "cat-file", "--batch-check")
	cmd.Dir, cmd.Stdin = clone, strings.NewReader(tips)
	found, err := cmd.Output()
	step.Check(err)
	tipsHere := strings.Count(string(found), "\n") - strings.Count(string(found), " missing\n")
	fmt.Printf("sharetime: %s: pushed all reasoning in %v (bare remote %s of packs)\n", filepath.Base(src), pushAll.Round(time.Millisecond), kb(bareSize))
	fmt.Printf("clone: %v, %s of packs; %d objects, %d reachable from main in the source: %d other objects, %d reasoning refs, %d of the %d reasoning tips present\n",
		cloneTime.Round(time.Millisecond), kb(packBytes(clone)), cloneObjects, codeObjects, cloneObjects-codeObjects, reasoningRefs, tipsHere, strings.Count(tips, "\n"))
	fmt.Printf("advertisement: git ls-remote of the bare remote is %s (%d refs)\n",
		kb(int64(len(step.Output(src, "git", "ls-remote", bare)))), len(strings.Split(strings.TrimSpace(step.Output(src, "git", "ls-remote", bare)), "\n")))

	step.Run(clone, abin, "enable")
	var whyTimes []time.Duration
	var whyBytes []int64
	for i, c := range linked {
		before := packBytes(clone)
		cmd := exec.Command(abin, "why", c.commit)
		cmd.Dir = clone
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(t0)
		if err != nil || !strings.Contains(string(out), "fetched 1 linked session") || !strings.Contains(string(out), c.id) {
			step.Fail(fmt.Errorf("why %s in the clone: %v\n%s", c.commit, err, out))
		}
		if i == 0 {
			continue // warms the binary's and git's pages
		}
		whyTimes = append(whyTimes, d)
		whyBytes = append(whyBytes, packBytes(clone)-before)
	}
	refsAfter := len(strings.Fields(step.Output(clone, "git", "for-each-ref", "--format=%(refname)", "refs/thoughtbox")))

	hooks := strings.TrimSpace(step.Output(src, "git", "rev-parse", "--path-format=absolute", "--git-path", "hooks"))
	var hookTimes, pushTimes []time.Duration
	for i := 0; i <= *runs; i++ {
		ids := writeSessions(src, 3, 2, fmt.Sprintf("Round %d", i))
		for k := 0; k < 7; k++ { // 10 commits in all, each naming one of the 3
			commit(src, noHooks, fmt.Sprintf("Round %d, more %d", i, k), ids[k%3].id)
		}
		remoteMain := strings.TrimSpace(step.Output(bare, "git", "rev-parse", "main"))
		head := strings.TrimSpace(step.Output(src, "git", "rev-parse", "HEAD"))
		cmd := exec.Command(filepath.Join(hooks, "pre-push"), "share", bare)
		cmd.Dir = src
		// Timed whole: a budget this long never cuts the send short, and
		// the rounds over the default budget are counted.
		cmd.Env = append(os.Environ(), "THOUGHTBOX_PUSH_HOOK_BUDGET=60s")
		cmd.Stdin = strings.NewReader("refs/heads/main " + head + " refs/heads/main " + remoteMain + "\n")
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		hd := time.Since(t0)
		if err != nil || !strings.Contains(string(out), "sent the reasoning of 3 sessions") {
			step.Fail(fmt.Errorf("pre-push round %d: %v\n%s", i, err, out))
		}
		t0 = time.Now()
		gitNoHooks(src, noHooks, "push", "-q", "share", "main")
		pd := time.Since(t0)
		if i > 0 {
			hookTimes = append(hookTimes, hd)
			pushTimes = append(pushTimes, pd)
		}
	}

	fmt.Printf("%d runs each; load average before %s, after %s\n", *runs, load0, machine.LoadAvg())
	slices.Sort(whyTimes)
	slices.Sort(whyBytes)
	fmt.Printf("cold why (20-thought session fetched): p50 %.1f ms  p95 %.1f ms; bytes received p50 %s  p95 %s  max %s; refs in the clone after: %d (one per session asked)\n",
		step.MS(step.Pct(whyTimes, 50)), step.MS(step.Pct(whyTimes, 95)), kb(step.Pct(whyBytes, 50)), kb(step.Pct(whyBytes, 95)), kb(whyBytes[len(whyBytes)-1]), refsAfter)
	slices.Sort(hookTimes)
	slices.Sort(pushTimes)
	over := len(hookTimes) - slices.IndexFunc(append(slices.Clone(hookTimes), time.Hour), func(d time.Duration) bool { return d > config.DefaultPushHookBudget })
	fmt.Printf("pre-push hook, 10 commits linked to 3 sessions: p50 %.1f ms  p95 %.1f ms (%d of %d over the %v budget); the code's push without hooks p50 %.1f ms  p95 %.1f ms\n",
		step.MS(step.Pct(hookTimes, 50)), step.MS(step.Pct(hookTimes, 95)), over, len(hookTimes), config.DefaultPushHookBudget, step.MS(step.Pct(pushTimes, 50)), step.MS(step.Pct(pushTimes, 95)))
}

// linkedSession is a session and the commit that names it.
type linkedSession struct{ id, commit string }

// writeSessions writes n sessions of thoughts thoughts each into the
// repository's ledger through the engine, and one commit naming each
// (the commit hooks off, the trailer written here).
func writeSessions(dir string, n, thoughts int, title string) []linkedSession {
	ctx := context.Background()
	r, err := coderepo.Find(ctx, dir)
	step.Check(err)
	cfg, err := config.Resolve(config.Flags{}, os.LookupEnv)
	step.Check(err)
	p, err := project.Open(cfg.InCode(config.CodeRepo{Worktree: r.Worktree, GitDir: r.GitDir, CommonDir: r.CommonDir}), project.Options{})
	step.Check(err)
	l := p.Ledger()
	author := ledger.Author{Name: "sharetime"}
	var out []linkedSession
	for i := 0; i < n; i++ {
		s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: fmt.Sprintf("%s %d", title, i)}, author)
		step.Check(err)
		for k := 1; k <= thoughts; k++ {
			_, err := l.AddThought(ctx, s.ID, ledger.ThoughtInput{
				Thought:           fmt.Sprintf("Thought %d of %s %d: the change keeps the old behaviour for callers that pass a nil option, and the new path is taken only when the flag is set.", k, title, i),
				NextThoughtNeeded: k < thoughts,
			}, author)
			step.Check(err)
		}
		out = append(out, linkedSession{id: s.ID})
	}
	step.Check(p.Close())
	for i := range out {
		out[i].commit = commit(dir, "", fmt.Sprintf("%s %d", title, i), out[i].id)
	}
	return out
}

// commit makes an empty commit whose final trailer block names id, with
// the hooks off, and returns its id.
func commit(dir, noHooks, subject, id string) string {
	if noHooks == "" {
		noHooks = os.DevNull
	}
	gitNoHooks(dir, noHooks, "commit", "-q", "--allow-empty", "-m", subject, "-m", "Thoughtbox-Session: "+id)
	return strings.TrimSpace(step.Output(dir, "git", "rev-parse", "HEAD"))
}

func gitNoHooks(dir, noHooks string, args ...string) {
	step.Run(dir, "git", append([]string{"-c", "core.hooksPath=" + noHooks}, args...)...)
}

// packBytes adds up the sizes of a repository's pack files and loose
// objects: what it holds, so that a difference is what arrived.
func packBytes(repo string) int64 {
	gitDir := filepath.Join(repo, ".git")
	if _, err := os.Stat(gitDir); err != nil {
		gitDir = repo
	}
	var n int64
	step.Check(filepath.Walk(filepath.Join(gitDir, "objects"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return err
	}))
	return n
}

// countObjects is the number of objects a repository holds (git
// count-objects: loose and in packs).
func countObjects(repo string) int {
	n := 0
	for _, l := range strings.Split(step.Output(repo, "git", "count-objects", "-v"), "\n") {
		k, v, ok := strings.Cut(l, ": ")
		if ok && (k == "count" || k == "in-pack") {
			c, err := strconv.Atoi(strings.TrimSpace(v))
			step.Check(err)
			n += c
		}
	}
	return n
}

func kb(n int64) string { return fmt.Sprintf("%.1f KB", float64(n)/1000) }
