// Command coderepogen builds a large code repository that keeps its
// reasoning, for the benchmarks of the commit hook, why and blame: a
// history of -commits commits written with git fast-import, -sessions
// sessions written into the repository's own ledger through the engine
// the thoughtbox CLI uses in an enabled repository, and the commit
// messages of every fifth commit naming one of them in a
// Thoughtbox-Session trailer. One file (-blame-path, -blame-lines lines)
// is touched by -blame-commits of the commits, spread over the history,
// for blame; the other commits each add a line to one of -files small
// files.
//
//	go run ./bench/coderepogen -dir /tmp/code50k
//	go run ./bench/coderepogen -dir /tmp/code10 -sessions 10
//
// Thoughts of linked sessions carry code references to the lines their
// commit changed. The active session of the worktree is the last one
// written, so an installed hook names it. Run thoughtbox inside -dir
// (why, blame, hooks install) or bench/coderepotime against it.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/internal/benchkit/machine"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/project"
)

var (
	dir          = flag.String("dir", "", "folder to create the repository in (required; must not exist)")
	commits      = flag.Int("commits", 50000, "commits of the code's history")
	sessions     = flag.Int("sessions", 10000, "sessions in the ledger, each linked to one commit (at most commits/5)")
	blameCommits = flag.Int("blame-commits", 2000, "commits that touch the blame file (the first creates it)")
	blameLines   = flag.Int("blame-lines", 5000, "lines of the blame file")
	blamePath    = flag.String("blame-path", "src/engine/big.go", "the blame file, relative to the root")
	files        = flag.Int("files", 1000, "small files the other commits add lines to")
	writers      = flag.Int("writers", 8, "sessions written in parallel")
	seed         = flag.Uint64("seed", 1, "seed of the changes and words")
)

// linkEvery: commit k (from 1) is linked to session (k-1)/linkEvery when
// (k-1)%linkEvery == 0.
const linkEvery = 5

// change is what one commit does: lines From..To of Path (1-based) are
// the lines it wrote.
type change struct {
	Path     string
	From, To int
}

func main() {
	flag.Parse()
	if *dir == "" || *commits < 1 || *sessions < 0 || *sessions > (*commits+linkEvery-1)/linkEvery ||
		*blameCommits < 1 || *blameCommits > *commits || *blameLines < 1 || *files < 1 || *writers < 1 {
		fmt.Fprintln(os.Stderr, "coderepogen: -dir is required; -sessions at most -commits/5; -blame-commits at most -commits; counts at least 1")
		os.Exit(2)
	}
	if _, err := os.Stat(*dir); err == nil {
		fail(fmt.Errorf("%s exists; name a new folder", *dir))
	}
	ctx := context.Background()
	start, cpu0 := time.Now(), machine.CPUTime()
	run("", "git", "init", "-q", "-b", "main", *dir)
	abs, err := filepath.Abs(*dir)
	check(err)
	r, err := coderepo.Find(ctx, abs)
	check(err)
	_, err = r.Enable(ctx)
	check(err)

	plan := planChanges()
	t0 := time.Now()
	ids, thoughts := writeSessions(ctx, r, plan)
	tSessions := time.Since(t0)

	t0 = time.Now()
	fastImport(abs, plan, ids)
	run(abs, "git", "reset", "-q", "--hard", "main")
	// Files written in the second the index was are "racily clean": every
	// later git commit would hash them again. An index written a second
	// later trusts their stat data, as a user's would.
	time.Sleep(1100 * time.Millisecond)
	run(abs, "git", "update-index", "-q", "--really-refresh")
	tCommits := time.Since(t0)

	wall := time.Since(start)
	fmt.Printf("coderepogen: %s: %d commits (fast-import and checkout %v), %d sessions with %d thoughts through the engine (%v), %d commits touch %s (%d lines)\n",
		abs, *commits, tCommits.Round(time.Millisecond), *sessions, thoughts, tSessions.Round(time.Millisecond), *blameCommits, *blamePath, *blameLines)
	fmt.Printf("coderepogen: %v in all (CPU %v, load average %s), %.1f MB in .git\n",
		wall.Round(time.Millisecond), (machine.CPUTime() - cpu0).Round(time.Millisecond), machine.LoadAvg(), float64(du(filepath.Join(abs, ".git")))/1e6)
	fmt.Printf("coderepogen: linked commits are every %dth from the first; the last session (%s) is the worktree's active session\n", linkEvery, last(ids))
}

// planChanges decides what each commit changes (index k-1 for commit k):
// the blame file's commits are spread evenly, the first writing it whole,
// the others rewriting a run of 1 to 8 of its lines.
func planChanges() []change {
	r := rand.New(rand.NewPCG(*seed, 0))
	plan := make([]change, *commits)
	stride := *commits / *blameCommits
	lines := map[string]int{}
	for k := 1; k <= *commits; k++ {
		if (k-1)%stride == 0 && (k-1)/stride < *blameCommits {
			if k == 1 {
				plan[0] = change{Path: *blamePath, From: 1, To: *blameLines}
				continue
			}
			n := 1 + r.IntN(8)
			from := 1 + r.IntN(*blameLines-n+1)
			plan[k-1] = change{Path: *blamePath, From: from, To: from + n - 1}
			continue
		}
		f := r.IntN(*files)
		p := fmt.Sprintf("src/pkg%02d/file%04d.go", f%50, f)
		lines[p]++
		plan[k-1] = change{Path: p, From: lines[p], To: lines[p]}
	}
	return plan
}

// writeSessions writes session i about commit i*linkEvery+1 through the
// project the CLI opens in an enabled repository, and returns the ids
// and how many thoughts were written.
func writeSessions(ctx context.Context, r *coderepo.Repo, plan []change) ([]string, int64) {
	cfg, err := config.Resolve(config.Flags{}, os.LookupEnv)
	check(err)
	p, err := project.Open(cfg.InCode(config.CodeRepo{Worktree: r.Worktree, GitDir: r.GitDir, CommonDir: r.CommonDir}), project.Options{})
	check(err)
	l := p.Ledger()
	ids := make([]string, *sessions)
	var next, done, written atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < *writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(*seed, uint64(w)+1))
			for {
				i := int(next.Add(1)) - 1
				// The last session is written alone, after the others, so
				// that it is the worktree's active session.
				if i >= *sessions-1 {
					return
				}
				id, n := writeSession(ctx, l, rnd, i, plan[i*linkEvery])
				ids[i] = id
				written.Add(int64(n))
				if d := done.Add(1); d%2000 == 0 {
					fmt.Fprintf(os.Stderr, "coderepogen: %d sessions\n", d)
				}
			}
		}(w)
	}
	wg.Wait()
	if *sessions > 0 {
		i := *sessions - 1
		id, n := writeSession(ctx, l, rand.New(rand.NewPCG(*seed, 0)), i, plan[i*linkEvery])
		ids[i] = id
		written.Add(int64(n))
	}
	check(p.Close())
	return ids, written.Load()
}

// writeSession writes three thoughts, the second naming the lines the
// commit changed; every tenth session also a branch and a revision.
func writeSession(ctx context.Context, l *ledger.Ledger, r *rand.Rand, i int, c change) (string, int) {
	author := ledger.Author{Name: "coderepogen"}
	s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: fmt.Sprintf("Change %d: %s", i*linkEvery+1, c.Path)}, author)
	check(err)
	add := func(in ledger.ThoughtInput) {
		_, err := l.AddThought(ctx, s.ID, in, author)
		check(err)
	}
	alt := i%10 == 0
	add(ledger.ThoughtInput{Thought: sentence(r, "What the code does now:"), NextThoughtNeeded: true})
	add(ledger.ThoughtInput{Thought: sentence(r, fmt.Sprintf("Lines %d-%d of %s:", c.From, c.To, c.Path)), NextThoughtNeeded: true,
		Code: []ledger.CodeRef{{Path: c.Path, From: c.From, To: c.To}}})
	add(ledger.ThoughtInput{Thought: sentence(r, "So:"), NextThoughtNeeded: alt})
	if !alt {
		return s.ID, 3
	}
	from, rev := 1, 2
	add(ledger.ThoughtInput{Thought: sentence(r, "Alternative:"), NextThoughtNeeded: true, BranchID: "alt", BranchFromThought: &from})
	add(ledger.ThoughtInput{Thought: sentence(r, "Revised:"), NextThoughtNeeded: false, IsRevision: true, RevisesThought: &rev,
		Code: []ledger.CodeRef{{Path: c.Path, From: c.From, To: c.To}}})
	return s.ID, 5
}

// fastImport writes the history as one fast-import stream to main.
func fastImport(dir string, plan []change, ids []string) {
	cmd := exec.Command("git", "-C", dir, "fast-import", "--quiet", "--done")
	in, err := cmd.StdinPipe()
	check(err)
	cmd.Stderr = os.Stderr
	check(cmd.Start())
	w := bufio.NewWriterSize(in, 1<<20)
	blame := make([]string, *blameLines)
	small := map[string][]string{}
	when := int64(1700000000)
	for k := 1; k <= *commits; k++ {
		c := plan[k-1]
		var content []string
		if c.Path == *blamePath {
			for n := c.From; n <= c.To; n++ {
				blame[n-1] = fmt.Sprintf("\tx%d := step(%d, %d)", n, k, n)
			}
			content = blame
		} else {
			small[c.Path] = append(small[c.Path], fmt.Sprintf("// change %d", k))
			content = small[c.Path]
		}
		msg := fmt.Sprintf("Change %d: %s\n\nRewrites lines %d-%d.\n", k, c.Path, c.From, c.To)
		if (k-1)%linkEvery == 0 && (k-1)/linkEvery < len(ids) {
			msg += "\nThoughtbox-Session: " + ids[(k-1)/linkEvery] + "\n"
		}
		when += 60
		fmt.Fprintf(w, "commit refs/heads/main\nmark :%d\nauthor Dev <dev@example.com> %d +0000\ncommitter Dev <dev@example.com> %d +0000\ndata %d\n%s",
			k, when, when, len(msg), msg)
		if k > 1 {
			fmt.Fprintf(w, "from :%d\n", k-1)
		}
		body := strings.Join(content, "\n") + "\n"
		fmt.Fprintf(w, "M 100644 inline %s\ndata %d\n%s\n", c.Path, len(body), body)
	}
	fmt.Fprintf(w, "done\n")
	check(w.Flush())
	check(in.Close())
	check(cmd.Wait())
}

var words = strings.Fields(`parser lexer token lookahead buffer cache index planner queue retry
timeout lock contention allocation scheduler snapshot journal checksum offset cursor`)

func sentence(r *rand.Rand, lead string) string {
	var b strings.Builder
	b.WriteString(lead)
	for k := 0; k < 10; k++ {
		b.WriteByte(' ')
		b.WriteString(words[r.IntN(len(words))])
	}
	b.WriteByte('.')
	return b.String()
}

func run(dir string, name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		fail(fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err))
	}
}

func last(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return ids[len(ids)-1]
}

func du(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

func check(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "coderepogen:", err)
	os.Exit(1)
}
