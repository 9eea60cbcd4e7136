// Command storebench measures the ledger's write path and reads at library
// level (ledger over gitstore, no MCP): the figures in BENCHMARKS.md,
// "Store: writes and reads at library level".
//
//	go run ./bench/storebench                 # everything, in a temp dir
//	go run ./bench/storebench -only seq       # one part: seq, par, load, list
package main

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/internal/benchkit/machine"
	"github.com/thoughtbox/thoughtbox/ledger"
)

var (
	only     = flag.String("only", "", "run one part: seq, par, load, list")
	dirFlag  = flag.String("dir", "", "work in this directory (default: a new temp dir, removed after)")
	seqN     = flag.Int("seq", 10000, "thoughts in the sequential session")
	parN     = flag.Int("par", 16, "parallel sessions")
	parEach  = flag.Int("par-each", 1000, "thoughts per parallel session")
	listN    = flag.Int("list", 10000, "sessions to create for the listing test")
	rssChild = flag.String("rss-child", "", "internal: load this session in a fresh process and report memory")
	cpuProf  = flag.String("cpuprofile", "", "write a CPU profile of the load and list measurements")
	flushInt = flag.Duration("flush", 0, "the store's FlushInterval (default: the store's own)")
)

func main() {
	flag.Parse()
	if *rssChild != "" {
		measureLoadRSS(*dirFlag, *rssChild)
		return
	}
	dir := *dirFlag
	if dir == "" {
		d, err := os.MkdirTemp("", "storebench")
		check(err)
		defer os.RemoveAll(d)
		dir = d
	}
	fmt.Printf("storebench: %s, %d CPUs, %s\n", runtime.Version(), runtime.NumCPU(), dir)
	run := func(name string) bool { return *only == "" || *only == name }
	var seqID string
	if run("seq") || run("load") {
		if *cpuProf != "" && *only == "seq" {
			f, err := os.Create(*cpuProf)
			check(err)
			check(pprof.StartCPUProfile(f))
			defer pprof.StopCPUProfile()
		}
		seqID = sequential(filepath.Join(dir, "seq.git"))
	}
	if run("load") {
		load(filepath.Join(dir, "seq.git"), seqID)
	}
	if run("par") {
		if *cpuProf != "" && *only == "par" {
			f, err := os.Create(*cpuProf)
			check(err)
			check(pprof.StartCPUProfile(f))
			defer pprof.StopCPUProfile()
		}
		parallel(filepath.Join(dir, "par.git"))
	}
	if run("list") {
		list(filepath.Join(dir, "list.git"))
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "storebench:", err)
		os.Exit(1)
	}
}

func text(n int) string {
	return fmt.Sprintf("S%d|H|S%d|The latency regression follows the deploy of build %d; the planner now scans users.email without its index, so each login waits on a full table scan.", n, n-1, n)
}

func one(n int) *int { return &n }

func sequential(repo string) string {
	ctx := context.Background()
	st, err := gitstore.Open(repo, gitstore.Options{})
	check(err)
	l := ledger.New(st, ledger.Options{})
	s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "sequential benchmark"}, ledger.Author{Name: "storebench"})
	check(err)
	lat := make([]time.Duration, *seqN)
	start := time.Now()
	for i := 0; i < *seqN; i++ {
		t0 := time.Now()
		_, err := l.AddThought(ctx, s.ID, ledger.ThoughtInput{Thought: text(i + 1), NextThoughtNeeded: true}, ledger.Author{Name: "storebench"})
		check(err)
		lat[i] = time.Since(t0)
	}
	total := time.Since(start)
	check(st.Close())
	rate := func(from, to int) (float64, time.Duration) {
		w := append([]time.Duration(nil), lat[from:to]...)
		sort.Slice(w, func(i, j int) bool { return w[i] < w[j] })
		med := w[len(w)/2]
		var sum time.Duration
		for _, d := range w {
			sum += d
		}
		return float64(len(w)) / sum.Seconds(), med
	}
	first, firstMed := rate(0, min(1000, *seqN))
	fmt.Printf("seq: %d durable thoughts in %v (%.0f/s overall)\n", *seqN, total.Round(time.Millisecond), float64(*seqN)/total.Seconds())
	fmt.Printf("seq: first 1,000: %.0f thoughts/s (median latency %v → %.0f/s)\n", first, firstMed, 1/firstMed.Seconds())
	if *seqN >= 1000 {
		last, lastMed := rate(*seqN-1000, *seqN)
		fmt.Printf("seq: last 1,000 (to #%d): %.0f thoughts/s (median latency %v → %.0f/s)\n", *seqN, last, lastMed, 1/lastMed.Seconds())
	}
	fmt.Printf("seq: repository size on disk: %.1f MB\n", float64(du(repo))/1e6)
	if _, err := exec.LookPath("git"); err == nil {
		out, err := exec.Command("git", "--git-dir", repo, "count-objects", "-vH").CombinedOutput()
		if err == nil {
			fmt.Printf("seq: git count-objects: %s\n", strings.Join(strings.Fields(string(out)), " "))
		}
	}
	return s.ID
}

func du(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func load(repo, id string) {
	ctx := context.Background()
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	var best time.Duration
	for i := 0; i < 5; i++ {
		st, err := gitstore.Open(repo, gitstore.Options{})
		check(err)
		l := ledger.New(st, ledger.Options{})
		t0 := time.Now()
		v, err := l.Load(ctx, id)
		check(err)
		d := time.Since(t0)
		if i == 0 || d < best {
			best = d
		}
		if v.Graph.Len() != *seqN {
			check(fmt.Errorf("loaded %d thoughts, want %d", v.Graph.Len(), *seqN))
		}
		check(st.Close())
	}
	fmt.Printf("load: %d-thought session loaded in %v (best of 5, store opened fresh each time)\n", *seqN, best.Round(100*time.Microsecond))
	exe, err := os.Executable()
	check(err)
	out, err := exec.Command(exe, "-dir", repo, "-rss-child", id).CombinedOutput()
	check(err)
	fmt.Print(string(out))
}

func measureLoadRSS(repo, id string) {
	ctx := context.Background()
	st, err := gitstore.Open(repo, gitstore.Options{})
	check(err)
	l := ledger.New(st, ledger.Options{})
	v, err := l.View(ctx, id)
	check(err)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("load: resident memory with the %d-thought session loaded: %.1f MB (Go heap in use %.1f MB)\n",
		v.Graph.Len(), float64(machine.ProcMemory(0).RSS)/1e6, float64(ms.HeapInuse)/1e6)
	runtime.KeepAlive(v)
	st.Close()
}

func parallel(repo string) {
	ctx := context.Background()
	st, err := gitstore.Open(repo, gitstore.Options{FlushInterval: *flushInt})
	check(err)
	l := ledger.New(st, ledger.Options{})
	ids := make([]string, *parN)
	for i := range ids {
		s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: fmt.Sprintf("parallel %d", i)}, ledger.Author{Name: "storebench"})
		check(err)
		ids[i] = s.ID
	}
	var wg sync.WaitGroup
	cpu0 := machine.CPUTime()
	start := time.Now()
	for _, id := range ids {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			for i := 0; i < *parEach; i++ {
				_, err := l.AddThought(ctx, id, ledger.ThoughtInput{Thought: text(i + 1), NextThoughtNeeded: true}, ledger.Author{Name: "storebench"})
				check(err)
			}
		}(id)
	}
	wg.Wait()
	d := time.Since(start)
	cpu := machine.CPUTime() - cpu0
	check(st.Close())
	n := *parN * *parEach
	fmt.Printf("par: %d sessions × %d thoughts = %d durable thoughts in %v: %.0f thoughts/s in all\n", *parN, *parEach, n, d.Round(time.Millisecond), float64(n)/d.Seconds())
	fmt.Printf("par: CPU (user+system, all threads) %v: %v per thought; load average %s\n", cpu.Round(time.Millisecond), (cpu / time.Duration(n)).Round(time.Microsecond), machine.LoadAvg())
}

func list(repo string) {
	ctx := context.Background()
	st, err := gitstore.Open(repo, gitstore.Options{})
	check(err)
	l := ledger.New(st, ledger.Options{})
	t0 := time.Now()
	var wg sync.WaitGroup
	per := *listN / 8
	existing, err := l.List(ctx)
	check(err)
	if len(existing) >= per*8 {
		per = len(existing) / 8 // reuse the sessions of an earlier run in -dir
	} else {
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < per; i++ {
					s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: fmt.Sprintf("session %d-%d", w, i), Tags: []string{"bench"}}, ledger.Author{Name: "storebench"})
					check(err)
					_, err = l.AddThought(ctx, s.ID, ledger.ThoughtInput{Thought: text(1), NextThoughtNeeded: false}, ledger.Author{Name: "storebench"})
					check(err)
				}
			}(w)
		}
		wg.Wait()
		fmt.Printf("list: created %d sessions (1 thought each) in %v\n", per*8, time.Since(t0).Round(time.Millisecond))
	}
	check(st.Close())
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	var best time.Duration
	for i := 0; i < 3; i++ {
		st, err := gitstore.Open(repo, gitstore.Options{})
		check(err)
		l := ledger.New(st, ledger.Options{})
		t0 := time.Now()
		ss, err := l.List(ctx)
		check(err)
		d := time.Since(t0)
		if len(ss) != per*8 {
			check(fmt.Errorf("listed %d sessions, want %d", len(ss), per*8))
		}
		if i == 0 || d < best {
			best = d
		}
		check(st.Close())
	}
	fmt.Printf("list: %d sessions listed in %v (best of 3, store opened fresh each time)\n", per*8, best.Round(100*time.Microsecond))
}
