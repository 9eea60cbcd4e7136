package gitstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// BenchmarkAppendMemoryAt measures one thought appended to a memory store's
// session that already holds a given number of thoughts: what grows with
// the session's length (the folder tree and manifest are hashed whole for
// every thought; Git's ids leave no other way) against what does not.
// The prepared cases call Prepare after each thought, as the stdio
// transport does between calls, outside the time measured: what is left
// is what an agent waits for.
//
//	go test ./gitstore -run - -bench AppendMemoryAt -benchtime 500x
func BenchmarkAppendMemoryAt(b *testing.B) {
	for _, c := range []struct {
		length   int
		prepared bool
	}{{10, false}, {500, false}, {500, true}, {1000, false}, {1000, true}, {5000, false}, {5000, true}} {
		length := c.length
		name := fmt.Sprintf("len=%d", length)
		if c.prepared {
			name += "/prepared"
		}
		b.Run(name, func(b *testing.B) {
			s, err := OpenMemory(Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			author := ledger.Author{Name: "bench"}
			if c.prepared {
				s.Prepare() // the first call turns it on
			}
			meta, tip, err := s.CreateSession(ctx, ledger.SessionMeta{ID: "bench-long", Title: "bench", CreatedAt: time.Now().UTC()}, author)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			add := func() {
				n++
				td := benchThought(n)
				td.Timestamp = time.Now().UTC()
				if tip, err = s.Append(ctx, ledger.AppendRequest{Meta: meta, ExpectedTip: tip, Thought: td, Author: author}); err != nil {
					b.Fatal(err)
				}
				if c.prepared {
					b.StopTimer()
					s.Prepare()
					b.StartTimer()
				}
			}
			for n < length {
				add()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				add()
			}
		})
	}
}
