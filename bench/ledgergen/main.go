// Command ledgergen writes a large ledger through the real store, for the
// scale benchmarks: N sessions of M thoughts each, every few sessions with
// a branch and a revision, so that listing, search, show, verify, push and
// clone meet the shapes a team's ledger has.
//
//	go run ./bench/ledgergen -dir /tmp/big -sessions 100000 -thoughts 1
//	go run ./bench/ledgergen -dir /tmp/big -sessions 100000 -thoughts 10
//
// The result is a data directory: point THOUGHTBOX_DATA_DIR at it and run
// thoughtbox (serve, sessions, search, show …) or the other benchmarks.
// Sessions are written by -writers goroutines in parallel, as agents would,
// and each thought is durable when written, as in production.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/internal/benchkit/machine"
	"github.com/thoughtbox/thoughtbox/ledger"
)

var (
	dir      = flag.String("dir", "", "data directory to write (required; its project _default is created)")
	project  = flag.String("project", "_default", "project name")
	sessions = flag.Int("sessions", 1000, "sessions to write")
	thoughts = flag.Int("thoughts", 10, "main-chain thoughts per session")
	branchEv = flag.Int("branch-every", 10, "every Nth session gets a branch of 2 thoughts and a revision (0: none)")
	writers  = flag.Int("writers", 16, "sessions written in parallel")
	seed     = flag.Uint64("seed", 1, "seed for the words of the thoughts")
)

// words makes thoughts that search has something to find in: a few topics
// shared by many sessions, and a rare word per session.
var words = strings.Fields(`latency cache database index planner deploy rollback queue consumer
partition replica leader election timeout retry backoff memory leak allocation garbage collector
kernel scheduler thread lock contention deadlock throughput tail percentile histogram sampler
tracer span budget quota tenant shard rebalance compaction snapshot checkpoint journal`)

func main() {
	flag.Parse()
	if *dir == "" || *sessions < 1 || *thoughts < 1 || *writers < 1 {
		fmt.Fprintln(os.Stderr, "ledgergen: -dir is required; -sessions, -thoughts and -writers must be at least 1")
		os.Exit(2)
	}
	repo := filepath.Join(*dir, "projects", *project+".git")
	check(os.MkdirAll(filepath.Dir(repo), 0o755))
	st, err := gitstore.Open(repo, gitstore.Options{})
	check(err)
	l := ledger.New(st, ledger.Options{})
	ctx := context.Background()
	author := ledger.Author{Name: "ledgergen"}

	var next, done, written atomic.Int64
	start, cpu0 := time.Now(), machine.CPUTime()
	var wg sync.WaitGroup
	for w := 0; w < *writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(*seed, uint64(w)))
			for {
				i := int(next.Add(1))
				if i > *sessions {
					return
				}
				n := writeSession(ctx, l, author, r, i)
				written.Add(int64(n))
				if d := done.Add(1); d%10000 == 0 {
					fmt.Fprintf(os.Stderr, "ledgergen: %d sessions, %d thoughts, %v\n", d, written.Load(), time.Since(start).Round(time.Second))
				}
			}
		}(w)
	}
	wg.Wait()
	check(st.Close())
	wall := time.Since(start)
	fmt.Printf("ledgergen: %d sessions, %d thoughts in %v (%.0f thoughts/s, CPU %v, load average %s)\n",
		*sessions, written.Load(), wall.Round(time.Millisecond), float64(written.Load())/wall.Seconds(),
		(machine.CPUTime() - cpu0).Round(time.Millisecond), machine.LoadAvg())
	fmt.Printf("ledgergen: %s, %.1f MB on disk\n", repo, float64(du(repo))/1e6)
}

// writeSession writes session i and returns how many thoughts it holds.
func writeSession(ctx context.Context, l *ledger.Ledger, author ledger.Author, r *rand.Rand, i int) int {
	topic := words[r.IntN(len(words))]
	s, err := l.StartSession(ctx, ledger.CreateSessionParams{
		Title: fmt.Sprintf("Session %d: why is the %s slow?", i, topic),
		Tags:  []string{topic, fmt.Sprintf("batch-%d", i%100)},
	}, author)
	check(err)
	add := func(in ledger.ThoughtInput) {
		_, err := l.AddThought(ctx, s.ID, in, author)
		check(err)
	}
	for n := 1; n <= *thoughts; n++ {
		add(ledger.ThoughtInput{Thought: sentence(r, i, n), NextThoughtNeeded: n < *thoughts || (*branchEv > 0 && i%*branchEv == 0)})
	}
	count := *thoughts
	if *branchEv > 0 && i%*branchEv == 0 {
		from := 1
		add(ledger.ThoughtInput{Thought: "Alternative: " + sentence(r, i, 0), NextThoughtNeeded: true, BranchID: "alt", BranchFromThought: &from})
		add(ledger.ThoughtInput{Thought: "The alternative does not hold.", NextThoughtNeeded: true, BranchID: "alt"})
		rev := 1
		add(ledger.ThoughtInput{Thought: "Revising the first step: " + sentence(r, i, 1), NextThoughtNeeded: false, IsRevision: true, RevisesThought: &rev})
		count += 3
	}
	return count
}

func sentence(r *rand.Rand, session, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Step %d of session %d: the ", n, session)
	for k := 0; k < 12; k++ {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(' ')
	}
	fmt.Fprintf(&b, "point to marker%d.", session)
	return b.String()
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
		fmt.Fprintln(os.Stderr, "ledgergen:", err)
		os.Exit(1)
	}
}
