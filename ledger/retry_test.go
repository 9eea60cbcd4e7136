package ledger

import (
	"context"
	"errors"
	"testing"
)

func TestRetry(t *testing.T) {
	ctx := context.Background()
	final := errors.New("still moving")
	other := errors.New("disk full")
	for _, tc := range []struct {
		name      string
		againTill int // write asks for another attempt while attempt < againTill
		err       error
		max       int
		wantCalls int
		want      error
	}{
		{"wins at once", 1, nil, 5, 1, nil},
		{"wins on the third", 3, nil, 5, 3, nil},
		{"other error stops", 1, other, 5, 1, other},
		{"gives up at max", 100, nil, 5, 5, final},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls, pauses := 0, 0
			err := Retry(ctx, tc.max, func(context.Context, int) error { pauses++; return nil }, func(attempt int) error {
				calls++
				if attempt != calls {
					t.Fatalf("attempt %d on call %d", attempt, calls)
				}
				if attempt < tc.againTill {
					return Again(final)
				}
				return tc.err
			})
			if err != tc.want || calls != tc.wantCalls || pauses != max(calls-1, 0) {
				t.Fatalf("got %v after %d calls and %d pauses, want %v after %d", err, calls, pauses, tc.want, tc.wantCalls)
			}
		})
	}
	// A pause that fails (a cancelled context) ends the loop with its error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	calls := 0
	err := Retry(cctx, 10, noPause, func(int) error { calls++; return Again(final) })
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("cancelled: %v after %d calls", err, calls)
	}
	// No pause at all.
	calls = 0
	if err := Retry(ctx, 3, nil, func(int) error { calls++; return Again(final) }); err != final || calls != 3 {
		t.Fatalf("no pause: %v after %d calls", err, calls)
	}
	if !errors.Is(Again(final), final) {
		t.Fatal("Again does not wrap its final error")
	}
}
