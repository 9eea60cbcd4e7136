// Command linksurvival measures how many links commit -> session survive
// the rewrites people make, and what the link hooks add to a commit. It
// builds a repository with the hooks installed (thoughtbox enable, hooks
// install), records a session, and runs -rounds rounds, the kinds in
// turn, each on its own files:
//
//	amend        a linked commit amended with a new message that names no session
//	rebase       a linked commit on a branch rebased -i onto a moved main,
//	             reworded so that its message names no session
//	cherry-pick  a commit linked by an entry alone (amended as above),
//	             cherry-picked onto main
//	squash       two linked commits squash-merged onto main where no hook
//	             runs (a forge), then thoughtbox relink
//
// Every rewritten message names no session, so only the link entries
// (post-rewrite, the drain, relink) can carry the reasoning. At the end
// thoughtbox why answers for each resulting commit; a survivor is one
// whose answer names the session. Then it times, -runs times each, git
// commit without and with the hooks (prepare-commit-msg, post-commit,
// post-rewrite) and the installed post-commit and post-rewrite scripts
// alone, each after the previous one's drain has finished, in this repository and in each -repos
// (repositories bench/coderepogen built, for a ledger of 10,000
// sessions).
//
//	go build -o /tmp/tb ./cmd/thoughtbox
//	go run ./bench/linksurvival -bin /tmp/tb -rounds 240 -runs 80
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/thoughtbox/thoughtbox/internal/benchkit/machine"
	"github.com/thoughtbox/thoughtbox/internal/benchkit/step"
)

var (
	bin    = flag.String("bin", "thoughtbox", "the thoughtbox binary")
	rounds = flag.Int("rounds", 240, "rewrite rounds (the four kinds in turn)")
	runs   = flag.Int("runs", 80, "timed runs of each hook workload")
	repos  = flag.String("repos", "", "comma-separated repositories bench/coderepogen built, to time the hooks in too")
	keep   = flag.Bool("keep", false, "keep the repository (its path is printed)")
)

var kinds = []string{"amend", "rebase", "cherry-pick", "squash"}

// env is the environment of every command: an identity, no user or
// system configuration, and thoughtbox on PATH as the binary measured.
var env []string

func main() {
	flag.Parse()
	abin, err := exec.LookPath(*bin)
	step.Check(err)
	abin, err = filepath.Abs(abin)
	step.Check(err)
	root, err := os.MkdirTemp("", "linksurvival")
	step.Check(err)
	if !*keep {
		defer os.RemoveAll(root)
	}
	binDir := filepath.Join(root, "bin")
	step.Check(os.MkdirAll(binDir, 0o755))
	step.Check(os.Symlink(abin, filepath.Join(binDir, "thoughtbox")))
	env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1", "THOUGHTBOX_DATA_DIR="+filepath.Join(root, "data"),
		"GIT_AUTHOR_NAME=Dev", "GIT_AUTHOR_EMAIL=dev@example.com", "GIT_COMMITTER_NAME=Dev", "GIT_COMMITTER_EMAIL=dev@example.com")
	repo := filepath.Join(root, "app")
	empty := filepath.Join(root, "nohooks")
	step.Check(os.MkdirAll(empty, 0o755))
	sh(root, "git init -q -b main app")
	write(repo, "base.txt", "base\n")
	sh(repo, "git add . && git commit -q -m Base && thoughtbox enable >/dev/null && thoughtbox hooks install >/dev/null")
	session := strings.TrimSpace(sh(repo, "thoughtbox start 'Link survival'"))
	sh(repo, "thoughtbox add "+session+" 'Every file of this repository' --code base.txt >/dev/null")
	s := &survival{repo: repo, session: session, empty: empty, targets: map[string][]string{}}

	t0 := time.Now()
	for i := 0; i < *rounds; i++ {
		k := kinds[i%len(kinds)]
		s.targets[k] = append(s.targets[k], s.round(k, i))
	}
	elapsed := time.Since(t0)
	fmt.Printf("linksurvival: %d rounds in %s; load average %s\n", *rounds, elapsed.Round(time.Second), machine.LoadAvg())
	total, kept := 0, 0
	for _, k := range kinds {
		n := 0
		for _, c := range s.targets[k] {
			if s.linked(c) {
				n++
			}
		}
		total, kept = total+len(s.targets[k]), kept+n
		fmt.Printf("%-12s %3d of %3d links survive (%.1f %%)\n", k, n, len(s.targets[k]), pct(n, len(s.targets[k])))
	}
	fmt.Printf("%-12s %3d of %3d (%.1f %%)\n", "all", kept, total, pct(kept, total))
	sh(repo, "thoughtbox verify >/dev/null && git fsck --strict --no-dangling 2>&1")
	timeHooks(repo, empty)
	for _, r := range strings.Split(*repos, ",") {
		if r != "" {
			sh(r, "thoughtbox hooks install >/dev/null")
			timeHooks(r, empty)
		}
	}
	if *keep {
		fmt.Println("kept", repo)
	}
}

type survival struct {
	repo, session, empty string
	targets              map[string][]string
}

// round makes one rewrite of kind k and returns the commit that should
// be linked to the session.
func (s *survival) round(k string, i int) string {
	r := s.repo
	activate := func() { sh(r, "thoughtbox use "+s.session+" >/dev/null") }
	deactivate := func() { os.Remove(filepath.Join(r, ".git", "thoughtbox", "active-session")) }
	f := fmt.Sprintf("%s-%03d.txt", k, i)
	switch k {
	case "amend":
		activate()
		write(r, f, "one\n")
		sh(r, "git add "+f+" && git commit -q -m 'Add "+f+"'")
		deactivate()
		write(r, f, "one\ntwo\n")
		sh(r, "git commit -q -a --amend -m 'Add "+f+", amended'")
	case "rebase":
		b := fmt.Sprintf("topic-%03d", i)
		sh(r, "git checkout -q -b "+b)
		activate()
		write(r, f, "one\n")
		sh(r, "git add "+f+" && git commit -q -m 'Add "+f+"'")
		deactivate()
		sh(r, "git checkout -q main")
		write(r, "main-"+f, "moved\n")
		sh(r, "git add main-"+f+" && git commit -q -m 'Move main'")
		sh(r, "git checkout -q "+b+" && GIT_SEQUENCE_EDITOR='sed -i -e s/^pick/reword/' GIT_EDITOR='sed -i -e /^Thoughtbox-Session:/d -e 1s/$/,\\ rebased/' git rebase -q -i main")
		c := head(r)
		sh(r, "git checkout -q main")
		return c
	case "cherry-pick":
		b := fmt.Sprintf("pick-%03d", i)
		sh(r, "git checkout -q -b "+b)
		activate()
		write(r, f, "one\n")
		sh(r, "git add "+f+" && git commit -q -m 'Add "+f+"'")
		deactivate()
		sh(r, "git commit -q --amend -m 'Add "+f+" on a branch'")
		c := head(r)
		sh(r, "git checkout -q main && git cherry-pick "+c+" >/dev/null")
	case "squash":
		b := fmt.Sprintf("feature-%03d", i)
		sh(r, "git checkout -q -b "+b)
		activate()
		write(r, f, "package feature\n\nfunc One() int { return 1 }\n")
		sh(r, "git add "+f+" && git commit -q -m 'Feature one'")
		write(r, f, "package feature\n\nfunc One() int { return 1 }\n\nfunc Two() int { return 2 }\n")
		sh(r, "git commit -q -am 'Feature two'")
		deactivate()
		sh(r, "git checkout -q main && git -c core.hooksPath="+s.empty+" merge -q --squash "+b+" && git -c core.hooksPath="+s.empty+" commit -q -m 'Feature "+f+" (squashed)'")
		sh(r, "thoughtbox relink HEAD~1..HEAD >/dev/null")
	}
	return head(r)
}

// linked says whether why names the session for commit c.
func (s *survival) linked(c string) bool {
	var ans struct {
		Commits []struct {
			Sessions []struct {
				ID string `json:"sessionId"`
			} `json:"sessions"`
		} `json:"commits"`
	}
	step.Check(json.Unmarshal([]byte(sh(s.repo, "thoughtbox why "+c+" --format json 2>/dev/null")), &ans))
	for _, cm := range ans.Commits {
		for _, ss := range cm.Sessions {
			if ss.ID == s.session {
				return true
			}
		}
	}
	return false
}

// timeHooks times the link hooks alone and a commit with and without
// the hooks, in turn each run.
func timeHooks(repo, empty string) {
	hooks := strings.TrimSpace(sh(repo, "git rev-parse --path-format=absolute --git-path hooks"))
	c := head(repo)
	work := map[string]func(i int) *exec.Cmd{
		"post-commit": func(int) *exec.Cmd { return exec.Command(filepath.Join(hooks, "post-commit")) },
		"post-rewrite": func(int) *exec.Cmd {
			cmd := exec.Command(filepath.Join(hooks, "post-rewrite"), "amend")
			cmd.Stdin = strings.NewReader(c + " " + c + "\n")
			return cmd
		},
		"commit": func(i int) *exec.Cmd {
			return exec.Command("git", "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("Timed %d", i))
		},
		"commit-0": func(i int) *exec.Cmd {
			return exec.Command("git", "-c", "core.hooksPath="+empty, "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("Timed %d", i))
		},
	}
	names := []string{"commit-0", "commit", "post-commit", "post-rewrite"}
	times := map[string][]time.Duration{}
	load0 := machine.LoadAvg()
	for i := 0; i <= *runs; i++ {
		for _, n := range names {
			cmd := work[n](i)
			cmd.Dir, cmd.Env = repo, env
			t0 := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				step.Fail(fmt.Errorf("%s in %s: %v: %s", n, repo, err, out))
			}
			if i > 0 {
				times[n] = append(times[n], time.Since(t0))
			}
			// The drain a hook started finishes (why waits for it, or
			// does its work) before the next workload is timed, so that
			// none is timed against another's drain.
			sh(repo, "thoughtbox why HEAD >/dev/null")
			time.Sleep(50 * time.Millisecond)
		}
	}
	fmt.Printf("hooks in %s (%d runs, load %s -> %s):\n", repo, *runs, load0, machine.LoadAvg())
	for _, n := range names {
		t := times[n]
		slices.Sort(t)
		fmt.Printf("  %-12s p50 %6.1f ms  p95 %6.1f ms\n", n, step.MS(t[len(t)/2]), step.MS(t[(len(t)*95+99)/100-1]))
	}
}

func head(dir string) string { return strings.TrimSpace(sh(dir, "git rev-parse HEAD")) }

func write(dir, name, data string) {
	step.Check(os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
}

// sh runs a shell command line in dir and returns its stdout.
func sh(dir, line string) string {
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir, cmd.Env = dir, env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		step.Fail(fmt.Errorf("%s: %v: %s", line, err, stderr.String()))
	}
	return string(out)
}

func pct(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}
