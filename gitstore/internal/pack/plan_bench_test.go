package pack

import (
	"fmt"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
)

// BenchmarkPlanFlush plans one flush as a busy writer leaves it: 400
// records, each a new version of a growing folder tree (an edit of the
// one before) and a few small whole objects (the thought's file, its
// commit).
func BenchmarkPlanFlush(b *testing.B) {
	recs := logged(0, 399)
	for i, r := range recs {
		for j := 0; j < 4; j++ {
			data := []byte(fmt.Sprintf("object %d of record %d", j, i))
			r.Objects = append(r.Objects, wal.Object{ID: object.HashObject(object.TypeBlob, data), Type: object.TypeBlob, Data: data})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Plan(recs, nil, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}
