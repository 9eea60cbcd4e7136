package refs

import (
	"fmt"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// BenchmarkPublish64: one flush's publishing of 64 sessions' refs, as
// loose files (each created, synced, renamed, its folder synced) and as
// one rewrite of packed-refs. Each op is one flush; each flush moves
// every ref.
//
//	go test ./gitstore/internal/refs -run '^$' -bench Publish64 -count 5
func BenchmarkPublish64(b *testing.B) {
	names := make([]string, 64)
	for i := range names {
		names[i] = fmt.Sprintf("refs/heads/sessions/%08x-0000-4000-8000-000000000000/main", i)
	}
	b.Run("loose", func(b *testing.B) {
		dir := b.TempDir()
		for i := 0; b.Loop(); i++ {
			dirs := map[string]bool{}
			for _, n := range names {
				ds, err := Write(dir, n, id(fmt.Sprint(n, i)))
				if err != nil {
					b.Fatal(err)
				}
				for _, d := range ds {
					dirs[d] = true
				}
			}
			for d := range dirs {
				if err := durable.SyncDir(d); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("packed", func(b *testing.B) {
		dir := b.TempDir()
		vals := make(map[string]object.Hash, len(names))
		for i := 0; b.Loop(); i++ {
			for _, n := range names {
				vals[n] = id(fmt.Sprint(n, i))
			}
			if err := WritePacked(dir, vals); err != nil {
				b.Fatal(err)
			}
		}
	})
}
