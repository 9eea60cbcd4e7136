package gitstore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

func benchThought(n int) ledger.ThoughtData {
	return ledger.ThoughtData{
		Thought:           fmt.Sprintf("S%d|H|S%d|The latency regression follows the deploy of build %d; the query planner now scans users.email without the index, so every login waits on a full table scan.", n, n-1, n),
		ThoughtNumber:     n,
		TotalThoughts:     n,
		NextThoughtNeeded: true,
	}
}

// BenchmarkAppend measures one sequential writer making durable thoughts.
func BenchmarkAppend(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "p.git")
	s, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	meta, tip, err := s.CreateSession(ctx, ledger.SessionMeta{ID: "bench-seq", Title: "bench", CreatedAt: time.Now().UTC()}, ledger.Author{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		td := benchThought(i + 1)
		td.Timestamp = time.Now().UTC()
		tip, err = s.Append(ctx, ledger.AppendRequest{Meta: meta, ExpectedTip: tip, Thought: td, Author: ledger.Author{Name: "bench"}})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendParallel16 measures 16 sessions written at once.
func BenchmarkAppendParallel16(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "p.git")
	s, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const writers = 16
	per := b.N/writers + 1
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			meta, tip, err := s.CreateSession(ctx, ledger.SessionMeta{ID: fmt.Sprintf("bench-par-%d", w), Title: "bench", CreatedAt: time.Now().UTC()}, ledger.Author{Name: "bench"})
			if err != nil {
				b.Error(err)
				return
			}
			for i := 0; i < per; i++ {
				td := benchThought(i + 1)
				td.Timestamp = time.Now().UTC()
				tip, err = s.Append(ctx, ledger.AppendRequest{Meta: meta, ExpectedTip: tip, Thought: td, Author: ledger.Author{Name: "bench"}})
				if err != nil {
					b.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
}
