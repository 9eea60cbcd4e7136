// Command coderepotime times, on repositories coderepogen built, what a
// user waits for: the commit hook, thoughtbox why and thoughtbox blame.
// Each round runs every workload once, in turn, so that the machine's
// load drifts over all of them alike; it prints p50 and p95 of each, and
// the load average before and after.
//
//	go build -o /tmp/tb ./cmd/thoughtbox
//	go run ./bench/coderepotime -bin /tmp/tb -repos /tmp/code10,/tmp/code50k -runs 80
//
// A repository written REPO=BIN is run with that binary instead (its
// hooks installed by it), to compare two builds in the same rounds on
// copies of one repository.
//
// It installs the hooks (thoughtbox hooks install) in each repository
// first. Workloads, per repository:
//
//	hook       the installed prepare-commit-msg script alone, on a message file
//	commit     git commit --allow-empty with the hooks
//	commit-0   the same commit with core.hooksPath pointed at an empty folder
//	why        thoughtbox why <a linked commit, a different one each round>
//	blame      thoughtbox blame <blame file>:<a line, a different one each round>
//
// The commit workloads add empty commits to the repository.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
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
	bin       = flag.String("bin", "thoughtbox", "the thoughtbox binary")
	repos     = flag.String("repos", "", "comma-separated repositories coderepogen built, each REPO or REPO=BIN (required)")
	runs      = flag.Int("runs", 80, "rounds")
	only      = flag.String("only", "hook,commit,commit-0,why,blame", "comma-separated workloads")
	blamePath = flag.String("blame-path", "src/engine/big.go", "the blame file")
	lines     = flag.Int("blame-lines", 5000, "lines of the blame file")
)

type workload struct {
	name string
	repo string
	bin  string
	// cmd makes round i's command.
	cmd   func(i int) *exec.Cmd
	times []time.Duration
}

func main() {
	flag.Parse()
	if *repos == "" || *runs < 1 {
		fmt.Fprintln(os.Stderr, "coderepotime: -repos is required; -runs at least 1")
		os.Exit(2)
	}
	empty, err := os.MkdirTemp("", "nohooks")
	step.Check(err)
	defer os.RemoveAll(empty)
	want := map[string]bool{}
	for _, w := range strings.Split(*only, ",") {
		want[w] = true
	}
	var ws []*workload
	for _, spec := range strings.Split(*repos, ",") {
		repo, b, ok := strings.Cut(spec, "=")
		if !ok {
			b = *bin
		}
		abin, err := exec.LookPath(b)
		step.Check(err)
		abin, err = filepath.Abs(abin)
		step.Check(err)
		ws = append(ws, workloads(repo, abin, empty, want)...)
	}
	load0 := machine.LoadAvg()
	for i := 0; i < *runs+1; i++ {
		for _, w := range ws {
			cmd := w.cmd(i)
			cmd.Dir = w.repo
			t0 := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				step.Fail(fmt.Errorf("%s in %s: %v: %s", w.name, w.repo, err, out))
			}
			if i > 0 { // round 0 warms the caches
				w.times = append(w.times, time.Since(t0))
			}
		}
	}
	fmt.Printf("coderepotime: %d runs each; load average before %s, after %s\n", *runs, load0, machine.LoadAvg())
	for _, w := range ws {
		slices.Sort(w.times)
		fmt.Printf("%-9s %-20s p50 %7.1f ms  p95 %7.1f ms  min %7.1f ms  (%s)\n", w.name, filepath.Base(w.repo),
			step.MS(step.Pct(w.times, 50)), step.MS(step.Pct(w.times, 95)), step.MS(w.times[0]), filepath.Base(w.bin))
	}
}

func workloads(repo, bin, empty string, want map[string]bool) []*workload {
	step.Run(repo, bin, "hooks", "install")
	hooksDir := strings.TrimSpace(step.Output(repo, "git", "rev-parse", "--path-format=absolute", "--git-path", "hooks"))
	msg := filepath.Join(os.TempDir(), "coderepotime-msg-"+filepath.Base(repo))
	linked := strings.Fields(step.Output(repo, "git", "log", "--format=%H", "--grep=^Thoughtbox-Session: ", "-n", "5000"))
	if len(linked) == 0 && (want["why"]) {
		step.Fail(fmt.Errorf("%s: no commit names a session", repo))
	}
	r := rand.New(rand.NewPCG(1, 2))
	var ws []*workload
	add := func(name string, cmd func(i int) *exec.Cmd) {
		if want[name] {
			ws = append(ws, &workload{name: name, repo: repo, bin: bin, cmd: cmd})
		}
	}
	add("hook", func(int) *exec.Cmd {
		step.Check(os.WriteFile(msg, []byte("A change\n"), 0o644))
		return exec.Command(filepath.Join(hooksDir, "prepare-commit-msg"), msg, "message")
	})
	add("commit", func(i int) *exec.Cmd {
		return exec.Command("git", "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("Timed commit %d", i))
	})
	add("commit-0", func(i int) *exec.Cmd {
		return exec.Command("git", "-c", "core.hooksPath="+empty, "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("Timed commit %d", i))
	})
	add("why", func(int) *exec.Cmd { return exec.Command(bin, "why", linked[r.IntN(len(linked))]) })
	add("blame", func(int) *exec.Cmd {
		return exec.Command(bin, "blame", fmt.Sprintf("%s:%d", *blamePath, 1+r.IntN(*lines)))
	})
	return ws
}
