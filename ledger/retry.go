package ledger

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Retry is the one loop around a compare-and-swap write, for the ledger
// and its store alike. It calls write with attempt = 1, 2, … and returns
// what write returns, except when write returns Again(final): then, while
// fewer than max attempts were made, it waits pause(ctx, attempt) (nil:
// no pause) and calls write again; at the max it returns final. A write
// that needs a fresh view before its next try takes it at the start of
// that try (attempt > 1).
func Retry(ctx context.Context, max int, pause func(ctx context.Context, attempt int) error, write func(attempt int) error) error {
	for attempt := 1; ; attempt++ {
		err := write(attempt)
		var again *againError
		if !errors.As(err, &again) {
			return err
		}
		if attempt >= max {
			return again.final
		}
		if pause != nil {
			if err := pause(ctx, attempt); err != nil {
				return err
			}
		}
	}
}

// Again tells Retry that the write lost its compare-and-swap and may be
// tried again; final is the error to return when no attempt is left.
func Again(final error) error { return &againError{final: final} }

type againError struct{ final error }

func (e *againError) Error() string { return "lost a compare-and-swap: " + e.final.Error() }
func (e *againError) Unwrap() error { return e.final }

// RandomPause waits up to min(attempt, 10) ms at random, so that writers
// racing for one ref stop colliding in step; a cancelled ctx ends it.
func RandomPause(ctx context.Context, attempt int) error {
	pause := time.Duration(rand.Int64N(int64(min(attempt, 10)) * int64(time.Millisecond)))
	select {
	case <-time.After(pause):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
