package wal

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// TestGroupCommitsWaitersTogether: while a leader commits, later callers
// queue; the first of them is promoted and commits the rest in one group,
// and each caller gets its own batch's verdict.
func TestGroupCommitsWaitersTogether(t *testing.T) {
	var g Group
	const n = 8
	refused := errors.New("refused")
	var mu sync.Mutex
	var sizes []int
	committed := map[string]int{}
	commit := func(group []*Request) {
		if len(sizes) == 0 {
			// The first leader holds on until everyone else queued.
			for {
				g.mu.Lock()
				q := len(g.queue)
				g.mu.Unlock()
				if q == n-1 {
					break
				}
				runtime.Gosched()
			}
		}
		mu.Lock()
		defer mu.Unlock()
		sizes = append(sizes, len(group))
		for _, r := range group {
			name := r.Batch.Updates[0].Name
			if name == "r3" {
				r.Err = refused
				continue
			}
			committed[name]++
		}
	}
	first := make(chan error)
	go func() { first <- g.Commit(t.Context(), refBatch("r0", 0), commit) }()
	for {
		g.mu.Lock()
		leading := g.leading
		g.mu.Unlock()
		if leading {
			break
		}
		runtime.Gosched()
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Go(func() { errs[i] = g.Commit(t.Context(), refBatch(fmt.Sprintf("r%d", i), byte(i)), commit) })
	}
	errs[0] = <-first
	wg.Wait()
	if fmt.Sprint(sizes) != fmt.Sprint([]int{1, n - 1}) {
		t.Fatalf("group sizes %v, want [1 %d]", sizes, n-1)
	}
	for i, err := range errs {
		name := fmt.Sprintf("r%d", i)
		switch {
		case i == 3 && !errors.Is(err, refused):
			t.Errorf("%s: %v, want its own refusal", name, err)
		case i != 3 && (err != nil || committed[name] != 1):
			t.Errorf("%s: %v, committed %d times", name, err, committed[name])
		}
	}
	if g.leading || len(g.queue) != 0 {
		t.Fatalf("after the last group: leading %v, %d queued", g.leading, len(g.queue))
	}
}

func TestGroupRefusesCancelledAndClosed(t *testing.T) {
	var g Group
	calls := 0
	commit := func([]*Request) { calls++ }
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := g.Commit(ctx, refBatch("r", 1), commit); !errors.Is(err, context.Canceled) || calls != 0 {
		t.Fatalf("a cancelled caller: %v, %d commits", err, calls)
	}
	if err := g.Commit(t.Context(), refBatch("r", 1), commit); err != nil || calls != 1 {
		t.Fatalf("a lone caller: %v, %d commits", err, calls)
	}
	g.Close()
	if err := g.Commit(t.Context(), refBatch("r", 1), commit); !errors.Is(err, ErrClosed) || calls != 1 {
		t.Fatalf("after Close: %v, %d commits", err, calls)
	}
}
