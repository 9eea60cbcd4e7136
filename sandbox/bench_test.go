package sandbox

import (
	"context"
	"testing"
)

// BenchmarkStart is the cost of a fresh REPL: starting a child, its
// runtime, and closing it again.
func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		s, err := Start(b.Context(), Config{})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkRunWarm is a trivial block in a child already running: the
// protocol's round trip.
func BenchmarkRunWarm(b *testing.B) {
	s := start(b, Config{})
	for b.Loop() {
		if r, err := s.Run(b.Context(), `1 + 1`, RunOptions{}); err != nil || r.Value != "2" {
			b.Fatal(r, err)
		}
	}
}

// BenchmarkHostCall is a block making one host call (as llm_query does)
// with a host function that answers at once.
func BenchmarkHostCall(b *testing.B) {
	s := start(b, Config{HostFuncs: map[string]HostFunc{
		"echo": func(_ context.Context, a HostArg) (any, error) { return a.Text, nil },
	}})
	for b.Loop() {
		if r, err := s.Run(b.Context(), `echo("x")`, RunOptions{}); err != nil || r.Value != "x" {
			b.Fatal(r, err)
		}
	}
}
