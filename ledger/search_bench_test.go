package ledger_test

// Benchmarks of issue 4 (BENCHMARKS.md, "Sessions: search, export,
// analysis"): search over 10,000 sessions
// and the export of a 10,000-thought session, on the real Git store in
// memory. The fixtures take a while to build, so each is built once per
// test binary.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// benchWords is the vocabulary of the generated thoughts.
var benchWords = strings.Fields(`latency cache database index query planner scan login token refresh
clock skew node replica shard partition queue consumer producer retry timeout deadline budget
memory leak goroutine mutex deadlock race heap allocation garbage profile trace span metric alert
deploy release rollback canary feature flag config secret rotation certificate expiry dns route
load balancer proxy header cookie session user account billing invoice payment refund ledger
schema migration column constraint foreign key transaction isolation snapshot vacuum replication
build pipeline test flaky fixture mock container image registry kernel disk inode socket buffer`)

func benchText(r *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = benchWords[r.IntN(len(benchWords))]
	}
	return strings.Join(w, " ")
}

const (
	benchSessions = 10_000
	benchPerSess  = 5
)

var searchFixture struct {
	once  sync.Once
	store *gitstore.Store
	err   error
}

// searchStore holds benchSessions sessions of benchPerSess thoughts of 24
// words each, every tenth with a branch; one session in a hundred mentions
// "zeppelin".
func searchStore(b *testing.B) *gitstore.Store {
	b.Helper()
	f := &searchFixture
	f.once.Do(func() {
		start := time.Now()
		f.store, f.err = gitstore.OpenMemory(gitstore.Options{})
		if f.err != nil {
			return
		}
		l := ledger.New(f.store, ledger.Options{})
		ctx := context.Background()
		r := rand.New(rand.NewPCG(1, 2))
		for i := range benchSessions {
			s, err := l.StartSession(ctx, ledger.CreateSessionParams{
				Title: fmt.Sprintf("Session %d: %s", i, benchText(r, 4)),
				Tags:  []string{benchWords[r.IntN(len(benchWords))], benchWords[r.IntN(len(benchWords))]},
			}, agent)
			if err != nil {
				f.err = err
				return
			}
			for j := range benchPerSess {
				text := benchText(r, 24)
				if i%100 == 0 && j == 2 {
					text += " zeppelin"
				}
				in := th(text)
				if i%10 == 0 && j == benchPerSess-1 {
					in = onBranch(in, "alt", 2)
				}
				if _, err := l.AddThought(ctx, s.ID, in, agent); err != nil {
					f.err = err
					return
				}
			}
		}
		b.Logf("built %d sessions of %d thoughts in %v", benchSessions, benchPerSess, time.Since(start).Round(time.Millisecond))
	})
	if f.err != nil {
		b.Fatal(f.err)
	}
	return f.store
}

// BenchmarkSearch10kSessions is one search over 10,000 sessions with a warm
// index: the steady state of a server.
func BenchmarkSearch10kSessions(b *testing.B) {
	store := searchStore(b)
	l := ledger.New(store, ledger.Options{})
	ctx := context.Background()
	start := time.Now()
	r, err := l.Search(ctx, ledger.SearchQuery{Query: "zeppelin"})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("first search (indexing %d sessions): %v", r.Indexed, time.Since(start).Round(time.Millisecond))
	if r.Total != benchSessions/100 {
		b.Fatalf("zeppelin found in %d sessions, want %d", r.Total, benchSessions/100)
	}
	b.ResetTimer()
	for b.Loop() {
		r, err := l.Search(ctx, ledger.SearchQuery{Query: "zeppelin cache"})
		if err != nil || r.Indexed != 0 {
			b.Fatalf("search: %v (indexed %d)", err, r.Indexed)
		}
	}
}

// BenchmarkSearch10kSessionsCold is the first search of a fresh ledger
// over a store whose index is empty: it reads the content of all 10,000
// sessions to build the index.
func BenchmarkSearch10kSessionsCold(b *testing.B) {
	store := searchStore(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		if err := store.DropSessionIndex(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		l := ledger.New(store, ledger.Options{})
		if r, err := l.Search(ctx, ledger.SearchQuery{Query: "zeppelin"}); err != nil || r.Indexed != benchSessions {
			b.Fatalf("search: %v (indexed %d)", err, r.Indexed)
		}
	}
}

// BenchmarkListFilter10kSessions is session list with a tag filter and a
// title search over 10,000 sessions.
func BenchmarkListFilter10kSessions(b *testing.B) {
	store := searchStore(b)
	l := ledger.New(store, ledger.Options{})
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		all, err := l.List(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ledger.FilterSessions(all, ledger.SessionFilter{Tags: []string{"cache"}, Search: "session", SortBy: "title"}); err != nil {
			b.Fatal(err)
		}
	}
}

var longFixture struct {
	once sync.Once
	v    *ledger.SessionView
	err  error
}

// longSession is one session of 10,000 thoughts: the main chain, a branch
// of 10 thoughts from every 500th thought, and a revision every 100th.
func longSession(b *testing.B) *ledger.SessionView {
	b.Helper()
	f := &longFixture
	f.once.Do(func() {
		start := time.Now()
		store, err := gitstore.OpenMemory(gitstore.Options{})
		if err != nil {
			f.err = err
			return
		}
		l := ledger.New(store, ledger.Options{})
		ctx := context.Background()
		s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "ten thousand thoughts"}, agent)
		if err != nil {
			f.err = err
			return
		}
		r := rand.New(rand.NewPCG(3, 4))
		main, branchLeft := 0, 0
		for n := range 10_000 {
			var in ledger.ThoughtInput
			if branchLeft > 0 {
				in = onBranch(th(benchText(r, 20)), fmt.Sprintf("b%d", main), main)
				branchLeft--
			} else {
				main++
				in = th(fmt.Sprintf("S%d|H|S%d|%s", main, max(main-1, 1), benchText(r, 20)))
				if main%100 == 0 {
					in = revises(in, main-1)
				}
				if main%500 == 0 {
					branchLeft = 10
				}
			}
			if _, err := l.AddThought(ctx, s.ID, in, agent); err != nil {
				f.err = fmt.Errorf("thought %d: %w", n, err)
				return
			}
		}
		f.v, f.err = l.View(ctx, s.ID)
		// The in-memory store keeps every version of the session's tree
		// (gigabytes for 10,000 thoughts); only the view is measured, so
		// let the collector have the rest rather than scan it.
		store.Close()
		runtime.GC()
		if f.err == nil {
			b.Logf("built a session of %d thoughts, %d branches in %v", f.v.Graph.Len(), f.v.Graph.BranchCount(), time.Since(start).Round(time.Millisecond))
		}
	})
	if f.err != nil {
		b.Fatal(f.err)
	}
	return f.v
}

func BenchmarkExport10kThoughts(b *testing.B) {
	v := longSession(b)
	at := time.Now().UTC()
	for _, format := range []ledger.ExportFormat{ledger.ExportJSON, ledger.ExportMarkdown, ledger.ExportCipher} {
		b.Run(string(format), func(b *testing.B) {
			var size int
			for b.Loop() {
				out, err := ledger.Export(v, ledger.ExportOptions{Format: format, At: at})
				if err != nil {
					b.Fatal(err)
				}
				size = len(out)
			}
			b.ReportMetric(float64(size)/1e6, "MB")
		})
	}
}

func BenchmarkAnalyze10kThoughts(b *testing.B) {
	v := longSession(b)
	at := time.Now().UTC()
	b.Run("analyze", func(b *testing.B) {
		for b.Loop() {
			ledger.Analyze(v)
		}
	})
	b.Run("deep_full", func(b *testing.B) {
		for b.Loop() {
			ledger.DeepAnalysis(v, ledger.DeepFull, at)
		}
	})
	b.Run("extract_learnings", func(b *testing.B) {
		for b.Loop() {
			ledger.ExtractLearnings(v, at)
		}
	})
}
