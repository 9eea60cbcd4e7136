package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

func start(t testing.TB, cfg Config) *Session {
	t.Helper()
	s, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustRun(t *testing.T, s *Session, code string) Result {
	t.Helper()
	r, err := s.Run(t.Context(), code, RunOptions{Echo: true})
	if err != nil {
		t.Fatalf("%s: %v", code, err)
	}
	return r
}

func TestStatePersistsBetweenRuns(t *testing.T) {
	s := start(t, Config{Globals: map[string]json.RawMessage{"context": json.RawMessage(`{"thoughts":[{"n":1},{"n":2}]}`)}})
	if r := mustRun(t, s, `var total = context.thoughts.map(t => t.n).reduce((a, b) => a + b, 0); let seen = ["a"]; function twice(x) { return 2 * x }`); r.Error != "" {
		t.Fatal(r.Error)
	}
	r := mustRun(t, s, `seen.push("b"); print("seen", seen); twice(total)`)
	if r.Error != "" || r.Output != "seen [\"a\",\"b\"]\n=> 6\n" || r.Value != "6" || !r.HasValue {
		t.Fatalf("second run: %+v", r)
	}
}

func TestHostFunctionsRoundTrip(t *testing.T) {
	var got []HostArg
	s := start(t, Config{HostFuncs: map[string]HostFunc{
		"llm_query": func(ctx context.Context, arg HostArg) (any, error) {
			got = append(got, arg)
			if arg.Nullish {
				return nil, errors.New("prompt is required")
			}
			return "answer to " + arg.Text, nil
		},
		"lookup": func(ctx context.Context, arg HostArg) (any, error) {
			return map[string]any{"key": arg.Text, "n": 3}, nil
		},
	}})
	r := mustRun(t, s, `var a = llm_query("why?"); var b = lookup({x: 1}); var c; try { llm_query() } catch (e) { c = e.message }
[a, b.key, b.n + 1, c]`)
	want := `=> ["answer to why?","{\"x\":1}",4,"prompt is required"]` + "\n"
	if r.Error != "" || r.Output != want {
		t.Fatalf("output %q, error %q; want %q", r.Output, r.Error, want)
	}
	if len(got) != 2 || got[0] != (HostArg{Text: "why?"}) || got[1] != (HostArg{Text: "undefined", Nullish: true}) {
		t.Errorf("host saw %+v", got)
	}
}

func TestHostArgumentIsBounded(t *testing.T) {
	calls := 0
	s := start(t, Config{Limits: Limits{MaxHostArg: 100}, HostFuncs: map[string]HostFunc{
		"llm_query": func(context.Context, HostArg) (any, error) { calls++; return "", nil },
	}})
	r := mustRun(t, s, `llm_query("x".repeat(101))`)
	if !strings.Contains(r.Error, "llm_query: the argument is 101 bytes; the limit is 100") || calls != 0 {
		t.Fatalf("error %q after %d calls", r.Error, calls)
	}
}

// TestEndlessAllocation: a script that allocates without end ends its
// child with a clear error; the parent (this test) lives on, the session
// says so on every later run, and a new session works.
func TestEndlessAllocation(t *testing.T) {
	s := start(t, Config{Limits: Limits{Memory: 64 << 20}})
	mustRun(t, s, `var kept = 1`)
	_, err := s.Run(t.Context(), `const a = []; while (true) a.push(new Array(100000).fill(a.length))`, RunOptions{Timeout: time.Hour})
	if !errors.Is(err, ErrOutOfMemory) || err.Error() != "the sandbox ran out of memory (limit 64 MiB)" {
		t.Fatalf("err = %v", err)
	}
	if _, again := s.Run(t.Context(), `kept`, RunOptions{}); !errors.Is(again, ErrOutOfMemory) {
		t.Errorf("a run on the dead session: %v", again)
	}
	if alive(s.Pid()) {
		t.Errorf("child %d is still there", s.Pid())
	}
	s2 := start(t, Config{Limits: Limits{Memory: 64 << 20}})
	if r := mustRun(t, s2, `1 + 1`); r.Value != "2" {
		t.Errorf("a new session: %+v", r)
	}
}

// TestOneHugeAllocation: one allocation far beyond the limit, which the
// address-space limit refuses outright.
func TestOneHugeAllocation(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's child has no address-space limit")
	}
	s := start(t, Config{Limits: Limits{Memory: 64 << 20}})
	_, err := s.Run(t.Context(), `"x".repeat(1 << 29).length`, RunOptions{Timeout: time.Hour})
	if !errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("err = %v", err)
	}
}

// TestCatastrophicRegex: goja cannot interrupt a backtracking regular
// expression (the backreference makes it regexp2's, not Go's linear
// engine); the child is killed at the deadline and reaped, and nothing is
// left burning a processor. The timeout is long enough for the script to
// be inside the expression when it runs out, even on a loaded machine
// (before it, the child would interrupt the script itself).
func TestCatastrophicRegex(t *testing.T) {
	s := start(t, Config{Limits: Limits{Grace: 200 * time.Millisecond}})
	pid := s.Pid()
	_, err := s.Run(t.Context(), `/^(a+)+\1$/.test("a".repeat(40) + "b")`, RunOptions{Timeout: time.Second})
	if !errors.Is(err, ErrTimeLimit) || !strings.Contains(err.Error(), "could not be interrupted; it was killed") {
		t.Fatalf("err = %v", err)
	}
	if alive(pid) {
		t.Fatalf("child %d is still there after the deadline", pid)
	}
}

// TestInfiniteLoop: an ordinary loop is interrupted inside the child at
// its timeout; the session and its state survive.
func TestInfiniteLoop(t *testing.T) {
	// A long grace: it is the child's own interrupt that is tested here,
	// not the parent's kill.
	s := start(t, Config{Limits: Limits{Grace: time.Minute}})
	mustRun(t, s, `var before = 41`)
	r, err := s.Run(t.Context(), `while (true) {}`, RunOptions{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Interrupted || r.Error != "interrupted: the block ran longer than 100ms" {
		t.Fatalf("result %+v", r)
	}
	if r := mustRun(t, s, `before + 1`); r.Value != "42" {
		t.Errorf("after the interrupt: %+v", r)
	}
}

// TestCPULimit: the child's processor time over its life is bounded,
// whatever each run's timeout.
func TestCPULimit(t *testing.T) {
	s := start(t, Config{Limits: Limits{CPU: time.Second}})
	_, err := s.Run(t.Context(), `while (true) {}`, RunOptions{Timeout: time.Hour})
	if !errors.Is(err, ErrCPULimit) || !strings.Contains(err.Error(), "(1s of processor time)") {
		t.Fatalf("err = %v", err)
	}
}

func TestCrash(t *testing.T) {
	s := start(t, Config{})
	_, err := s.Run(t.Context(), `crash()`, RunOptions{})
	if !errors.Is(err, ErrCrashed) || !strings.Contains(err.Error(), "panic: boom from the test") {
		t.Fatalf("err = %v", err)
	}
}

// TestCancelDuringHostCall: the run's context ending stops the script
// waiting on a host function; the session survives.
func TestCancelDuringHostCall(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s := start(t, Config{Limits: Limits{Grace: time.Minute}, HostFuncs: map[string]HostFunc{
		"wait": func(ctx context.Context, _ HostArg) (any, error) {
			cancel()
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}})
	r, err := s.Run(ctx, `wait(); while (true) {}`, RunOptions{Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Interrupted || r.Error != context.Canceled.Error() {
		t.Fatalf("result %+v", r)
	}
	if r := mustRun(t, s, `"still here"`); r.Value != "still here" {
		t.Errorf("after the cancel: %+v", r)
	}
}

func TestOutputIsBounded(t *testing.T) {
	s := start(t, Config{})
	r, err := s.Run(t.Context(), `for (let i = 0; i < 1000; i++) console.log("line " + i); "v".repeat(500)`, RunOptions{MaxOutput: 100, Echo: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Output, "line 0\nline 1\n") || len(r.Output) > 200 || !strings.Contains(r.Output, "output cut at 100 bytes") {
		t.Errorf("output (%d bytes):\n%s", len(r.Output), r.Output)
	}
	if len(r.Value) > 150 || !strings.Contains(r.Value, "[cut: 400 more bytes]") {
		t.Errorf("value (%d bytes): %s", len(r.Value), r.Value)
	}
}

func TestRecursionIsBounded(t *testing.T) {
	s := start(t, Config{Limits: Limits{MaxCallDepth: 500}})
	r := mustRun(t, s, `function f(n) { return f(n + 1) + 1 }; f(0)`)
	if r.Error != "RangeError: Maximum call stack size exceeded (deeper than 500 frames)" {
		t.Errorf("error %q", r.Error)
	}
}

func TestRefusesTheOutsideWorld(t *testing.T) {
	s := start(t, Config{})
	r := mustRun(t, s, `["require", "fetch", "XMLHttpRequest", "process", "setTimeout", "setInterval", "module", "Deno", "WebSocket", "importScripts"].filter(n => typeof globalThis[n] !== "undefined")`)
	if r.Value != "[]" {
		t.Fatalf("outside-world globals defined: %+v", r)
	}
}

func TestClose(t *testing.T) {
	s := start(t, Config{})
	pid := s.Pid()
	mustRun(t, s, `1`)
	s.Close()
	if alive(pid) {
		t.Errorf("child %d outlived Close", pid)
	}
	if _, err := s.Run(t.Context(), `1`, RunOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close: %v", err)
	}
}

func TestCloseStopsARun(t *testing.T) {
	s := start(t, Config{HostFuncs: map[string]HostFunc{
		"closeMe": func(context.Context, HostArg) (any, error) { go s0.Close(); return nil, nil },
	}})
	s0 = s
	_, err := s.Run(t.Context(), `closeMe(); while (true) {}`, RunOptions{Timeout: time.Hour})
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v", err)
	}
}

var s0 *Session

func TestGlobalsMustBeJSON(t *testing.T) {
	_, err := Start(t.Context(), Config{Globals: map[string]json.RawMessage{"context": json.RawMessage(`{`)}})
	if err == nil {
		t.Fatal("a global that is not JSON was accepted")
	}
	if !strings.Contains(err.Error(), `Config.Globals["context"]: expected a JSON document`) {
		t.Errorf("err = %v", err)
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// TestNoGoroutineLeft: a session's goroutines in the parent end with its
// child, whether it was closed or killed.
func TestNoGoroutineLeft(t *testing.T) {
	before := runtime.NumGoroutine()
	s, err := Start(t.Context(), Config{Limits: Limits{Grace: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(t.Context(), `/^(a+)+\1$/.test("a".repeat(40) + "b")`, RunOptions{Timeout: time.Second}); !errors.Is(err, ErrTimeLimit) {
		t.Fatalf("err = %v", err)
	}
	s.Close()
	s2, err := Start(t.Context(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, s2, `1`)
	s2.Close()
	// A goroutine of an earlier test may still have been ending when
	// before was counted, and one of ours may need a moment to return
	// after Close: fewer is fine, more must go away.
	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(10 * time.Second); after > before && time.Now().Before(deadline); after = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	if after > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines before, %d after:\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}
