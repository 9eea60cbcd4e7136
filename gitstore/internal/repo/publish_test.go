package repo

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A flush of a few agents' refs syncs them one at a time, so the log's
// fdatasync never queues behind many; one of thousands runs them side by
// side, and either way every ref is written once and the first error
// comes back.
func TestParallelWidth(t *testing.T) {
	for _, tc := range []struct{ n, want int }{{1, 1}, {64, 1}, {255, 1}, {600, 3}, {4096, maxPublishers}} {
		var running, most atomic.Int32
		var mu sync.Mutex
		seen := make([]int, tc.n)
		err := parallel(tc.n, func(i int) error {
			r := running.Add(1)
			for {
				m := most.Load()
				if r <= m || most.CompareAndSwap(m, r) {
					break
				}
			}
			if tc.n > 1 {
				time.Sleep(50 * time.Microsecond) // let the others start
			}
			mu.Lock()
			seen[i]++
			mu.Unlock()
			running.Add(-1)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("n=%d: item %d ran %d times", tc.n, i, c)
			}
		}
		if got := int(most.Load()); got > tc.want || (tc.want > 1 && got < 2) {
			t.Errorf("n=%d: %d ran at once, want at most %d (and more than one when allowed)", tc.n, got, tc.want)
		}
	}
	boom := errors.New("boom")
	if err := parallel(600, func(i int) error {
		if i == 10 {
			return boom
		}
		return nil
	}); !errors.Is(err, boom) {
		t.Fatalf("parallel returned %v, want the first error", err)
	}
}
