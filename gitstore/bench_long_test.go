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
//
//	go test ./gitstore -run - -bench AppendMemoryAt -benchtime 500x
func BenchmarkAppendMemoryAt(b *testing.B) {
	for _, length := range []int{10, 500, 1000, 5000} {
		name := fmt.Sprintf("len=%d", length)
		b.Run(name, func(b *testing.B) {
			s, err := OpenMemory(Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			author := ledger.Author{Name: "bench"}
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
