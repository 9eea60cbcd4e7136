package rlm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/sandbox"
)

// script is a scripted model: the root gets the replies in turn, and
// sub-queries are answered by sub.
type script struct {
	mu      sync.Mutex
	root    []string
	sub     func(ctx context.Context, prompt string) (string, error)
	rootErr error
	// seen holds the last message of every root request.
	seen []string
	subs int
}

func (s *script) sample(ctx context.Context, req Request) (Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.Sub {
		s.subs++
		s.mu.Unlock()
		defer s.mu.Lock()
		if s.sub == nil {
			return Reply{Text: "sub answer to: " + req.Messages[0].Text, Model: "sub-model"}, nil
		}
		text, err := s.sub(ctx, req.Messages[0].Text)
		return Reply{Text: text, Model: "sub-model"}, err
	}
	if req.System != RootSystemPrompt || req.MaxTokens != DefaultRootMaxTokens {
		return Reply{}, fmt.Errorf("root request: unexpected system prompt or maxTokens %d", req.MaxTokens)
	}
	s.seen = append(s.seen, req.Messages[len(req.Messages)-1].Text)
	if s.rootErr != nil {
		return Reply{}, s.rootErr
	}
	if len(s.root) == 0 {
		return Reply{Text: "still thinking", Model: "root-model"}, nil
	}
	text := s.root[0]
	s.root = s.root[1:]
	return Reply{Text: text, Model: "root-model"}, nil
}

const sessionJSON = `{"sessionId":"s1","title":"cache","thoughts":[{"thoughtNumber":1,"thought":"the cache is stale"},{"thoughtNumber":2,"thought":"flush it on write"}]}`

func repl(code string) string { return "```repl\n" + code + "\n```\n" }

func run(t *testing.T, s *script, opts Options) (*ledger.RLMResult, error) {
	t.Helper()
	return Run(t.Context(), s.sample, "What is the plan?", sessionJSON, opts)
}

func TestFinal(t *testing.T) {
	s := &script{root: []string{
		"Let me look.\n" + repl(`print(context.thoughts.length, context.thoughts.map(t => t.thought).join(" / "))`),
		"The plan is clear.\nFINAL(flush the cache on write (after checking (twice)))",
	}}
	res, err := run(t, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != ledger.RLMFinal || res.Answer != "flush the cache on write (after checking (twice))" {
		t.Fatalf("status %s, answer %q", res.Status, res.Answer)
	}
	if res.Iterations != 2 || res.Model != "root-model" {
		t.Errorf("iterations %d, model %q", res.Iterations, res.Model)
	}
	if !strings.Contains(s.seen[1], "2 the cache is stale / flush it on write") {
		t.Errorf("the root model was not shown the block's output:\n%s", s.seen[1])
	}
	kinds := []ledger.RLMStepKind{}
	for _, st := range res.Transcript {
		kinds = append(kinds, st.Kind)
	}
	if fmt.Sprint(kinds) != "[root repl root]" {
		t.Errorf("transcript kinds %v", kinds)
	}
}

func TestFinalVar(t *testing.T) {
	for name, final := range map[string]string{
		"as text":  repl("let plan = llm_query('summarise: ' + context.thoughts[1].thought);") + "FINAL_VAR(plan)",
		"in code":  repl("let plan = llm_query('summarise: ' + context.thoughts[1].thought);\nFINAL_VAR('plan')"),
		"in later": repl("var plan = llm_query('summarise: ' + context.thoughts[1].thought);"),
	} {
		t.Run(name, func(t *testing.T) {
			s := &script{root: []string{final}}
			if name == "in later" {
				s.root = append(s.root, "Done.\nFINAL_VAR(plan)")
			}
			res, err := run(t, s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != ledger.RLMFinal || res.Answer != "sub answer to: summarise: flush it on write" {
				t.Fatalf("status %s, answer %q", res.Status, res.Answer)
			}
			if res.SubQueries != 1 || s.subs != 1 {
				t.Errorf("sub-queries counted %d, made %d", res.SubQueries, s.subs)
			}
			var sub *ledger.RLMStep
			for i := range res.Transcript {
				if res.Transcript[i].Kind == ledger.RLMStepSubQuery {
					sub = &res.Transcript[i]
				}
			}
			if sub == nil || sub.Prompt != "summarise: flush it on write" || sub.Model != "sub-model" {
				t.Errorf("sub-query step %+v", sub)
			}
		})
	}
}

func TestFinalVarUndefinedKeepsGoing(t *testing.T) {
	s := &script{root: []string{"FINAL_VAR(nothing)", repl("FINAL({n: context.thoughts.length})")}}
	res, err := run(t, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != `{"n":2}` || res.Iterations != 2 {
		t.Fatalf("answer %q after %d iterations", res.Answer, res.Iterations)
	}
	if !strings.Contains(s.seen[1], "no variable nothing is defined") {
		t.Errorf("feedback: %s", s.seen[1])
	}
}

func TestIterationLimit(t *testing.T) {
	s := &script{root: []string{repl("var i = 1"), repl("++i"), repl("++i")}}
	res, err := run(t, s, Options{MaxIterations: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != ledger.RLMIterationLimit || res.Iterations != 3 || res.Answer != "" {
		t.Fatalf("status %s after %d iterations, answer %q", res.Status, res.Iterations, res.Answer)
	}
	if len(s.seen) != 3 {
		t.Errorf("root sampled %d times, want 3", len(s.seen))
	}
	if !strings.Contains(s.seen[2], "=> 2") || !strings.Contains(s.seen[2], "One turn left") {
		t.Errorf("state did not persist, or no warning:\n%s", s.seen[2])
	}
}

func TestDefaults(t *testing.T) {
	o := Options{}.WithDefaults()
	if o.MaxIterations != 12 || o.BlockTimeout != 5*time.Second {
		t.Errorf("defaults: %d iterations, %v per block; want 12, 5s", o.MaxIterations, o.BlockTimeout)
	}
	// The default limit is the one the REPL enforces and the model is told.
	if !strings.Contains(firstMessage("q", "{}", o), "5s of computing time") {
		t.Error("the first message does not state the 5s limit")
	}
}

// TestBlockTimeout stops a block that loops forever, and the REPL carries
// on with the next block.
func TestBlockTimeout(t *testing.T) {
	limit := 200 * time.Millisecond
	if os.Getenv("THOUGHTBOX_SLOW_TESTS") != "" {
		limit = 0 // the real default, 5s of one busy core
	}
	s := &script{root: []string{
		repl("var before = 1;\nwhile (true) {}"),
		repl("FINAL(before + 1)"),
	}}
	start := time.Now()
	// A long grace: the child's own interrupt is tested, not the kill.
	res, err := run(t, s, Options{BlockTimeout: limit, Sandbox: sandbox.Limits{Grace: time.Minute}})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	want := Options{BlockTimeout: limit}.WithDefaults().BlockTimeout
	if took < want {
		t.Errorf("run took %v with a %v limit", took, want)
	}
	block := res.Transcript[1]
	if block.Kind != ledger.RLMStepRepl || !strings.Contains(block.Error, "interrupted: the block ran longer than "+want.String()) {
		t.Fatalf("block step %+v", block)
	}
	if !strings.Contains(s.seen[1], "interrupted") {
		t.Errorf("the model was not told: %s", s.seen[1])
	}
	if res.Answer != "2" {
		t.Errorf("answer %q: the REPL did not survive the interrupt", res.Answer)
	}
}

// TestSubQueryTimeNotCounted: waiting for llm_query is not computing time.
func TestSubQueryTimeNotCounted(t *testing.T) {
	s := &script{
		root: []string{repl("FINAL(llm_query('slow') + llm_query('slow'))")},
		sub: func(ctx context.Context, prompt string) (string, error) {
			time.Sleep(150 * time.Millisecond)
			return "ok", nil
		},
	}
	res, err := run(t, s, Options{BlockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "okok" {
		t.Fatalf("answer %q; transcript %+v", res.Answer, res.Transcript)
	}
}

// newTestREPL is a run's REPL on its own, closed with the test.
func newTestREPL(t *testing.T, opts Options) *replEnv {
	t.Helper()
	x, err := newREPL(sessionJSON, opts.WithDefaults(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.close)
	return x
}

func TestSandboxRefusesTheOutsideWorld(t *testing.T) {
	sb := newTestREPL(t, Options{})
	r := sb.run(t.Context(), `const names = ["require", "fetch", "XMLHttpRequest", "process", "setTimeout", "setInterval", "module", "Deno", "WebSocket", "importScripts"];
names.filter(n => typeof globalThis[n] !== "undefined")`, true, 0)
	if r.err != nil || r.output != "=> []\n" {
		t.Fatalf("outside-world globals defined: %q %v", r.output, r.err)
	}
	for _, code := range []string{
		`require("fs").readFileSync("/etc/passwd")`,
		`fetch("http://example.com")`,
		`new XMLHttpRequest()`,
		`process.exit(1)`,
		`setTimeout(() => {}, 1)`,
	} {
		r := sb.run(t.Context(), code, true, 0)
		if r.err == nil || !strings.Contains(r.err.Error(), "ReferenceError") {
			t.Errorf("%s: err = %v, want a ReferenceError", code, r.err)
		}
	}
	// import is not even syntax in a script.
	if r := sb.run(t.Context(), `import fs from "fs"`, true, 0); r.err == nil {
		t.Error("import was accepted")
	}
}

func TestOutputIsBounded(t *testing.T) {
	sb := newTestREPL(t, Options{MaxOutput: 100})
	r := sb.run(t.Context(), `for (let i = 0; i < 1000; i++) console.log("line " + i)`, true, 0)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !strings.HasPrefix(r.output, "line 0\nline 1\n") || len(r.output) > 200 || !strings.Contains(r.output, "output cut at 100 bytes") {
		t.Errorf("output (%d bytes):\n%s", len(r.output), r.output)
	}
}

func TestRecursionIsBounded(t *testing.T) {
	sb := newTestREPL(t, Options{})
	r := sb.run(t.Context(), `function f(n) { return f(n + 1) + 1 }; f(0)`, true, 0)
	if r.err == nil || !strings.Contains(r.err.Error(), "call stack") {
		t.Errorf("err = %v", r.err)
	}
	if r := sb.run(t.Context(), `1 + 1`, true, 0); r.output != "=> 2\n" {
		t.Errorf("after overflow: %q %v", r.output, r.err)
	}
}

func TestSubQueryLimit(t *testing.T) {
	s := &script{root: []string{repl("var got = []; try { for (let i = 0; i < 5; i++) got.push(llm_query('q' + i)) } catch (e) { print(String(e)) }\nFINAL(got.length)")}}
	res, err := run(t, s, Options{MaxSubQueries: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "3" || res.SubQueries != 3 || s.subs != 3 {
		t.Fatalf("answer %q, counted %d, made %d", res.Answer, res.SubQueries, s.subs)
	}
	// The sub-queries are logged as they happen, inside the block.
	last := res.Transcript[len(res.Transcript)-1]
	if last.Kind != ledger.RLMStepRepl || !strings.Contains(last.Output, "llm_query limit reached") {
		t.Errorf("block step %+v", last)
	}
}

func TestSubQueryFailureIsThrown(t *testing.T) {
	s := &script{
		root: []string{repl("try { llm_query('x') } catch (e) { FINAL('caught: ' + e.message) }")},
		sub:  func(context.Context, string) (string, error) { return "", errors.New("user declined") },
	}
	res, err := run(t, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "caught: llm_query failed: user declined" || res.SubQueries != 1 {
		t.Errorf("answer %q, sub-queries %d", res.Answer, res.SubQueries)
	}
	if res.Transcript[1].Kind != ledger.RLMStepSubQuery || res.Transcript[1].Error != "user declined" {
		t.Errorf("sub-query step %+v", res.Transcript[1])
	}
}

func TestRootFailure(t *testing.T) {
	s := &script{rootErr: errors.New("rate limited")}
	res, err := run(t, s, Options{})
	var re *RootError
	if !errors.As(err, &re) || re.Iteration != 1 || res.Status != ledger.RLMFailed || !strings.Contains(res.Error, "rate limited") {
		t.Fatalf("err %v, result %+v", err, res)
	}
}

// TestCancel: cancelling stops a block waiting on a sub-query, and no
// model is asked anything afterwards.
func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s := &script{
		root: []string{repl("llm_query('wait'); while (true) {}")},
		sub: func(ctx context.Context, _ string) (string, error) {
			cancel()
			<-ctx.Done()
			return "", ctx.Err()
		},
	}
	start := time.Now()
	res, err := Run(ctx, s.sample, "q", sessionJSON, Options{BlockTimeout: time.Hour})
	if !errors.Is(err, context.Canceled) || res.Status != ledger.RLMFailed {
		t.Fatalf("err %v, status %s", err, res.Status)
	}
	// Not a measure of speed: without the cancel the block would run for
	// its hour.
	if time.Since(start) > 10*time.Minute {
		t.Errorf("cancel took %v", time.Since(start))
	}
	if len(s.seen) != 1 {
		t.Errorf("root sampled %d times after the cancel", len(s.seen))
	}
}

func TestFinalIsNotTakenFromCode(t *testing.T) {
	if _, ok := finalIn("```js\nFINAL(x)\n```\nno answer yet"); ok {
		t.Error("FINAL inside a code block was taken as the answer")
	}
	if _, ok := finalIn("I will call FINAL(answer) when done"); ok {
		t.Error("FINAL in the middle of a line was taken as the answer")
	}
	if got, ok := finalIn("ok\n  FINAL(42)\n"); !ok || got != "42" {
		t.Errorf("finalIn = %q, %v", got, ok)
	}
	if got, ok := finalVarIn("FINAL_VAR(\"result\")"); !ok || got != "result" {
		t.Errorf("finalVarIn = %q, %v", got, ok)
	}
}

// TestStuckBuiltinIsKilled: goja cannot interrupt a native built-in; a
// regular expression that backtracks for ever is stopped by killing the
// REPL's process at the deadline. The model is told, and its next block
// runs in a fresh REPL.
func TestStuckBuiltinIsKilled(t *testing.T) {
	s := &script{root: []string{
		repl("var before = 1") + repl(`/^(a+)+\1$/.test("a".repeat(40) + "b")`) + repl("print('never')"),
		repl("FINAL(typeof before)"),
	}}
	// Long enough, even on a loaded machine, for the first block to
	// finish and for the second to be inside the regular expression when
	// its time runs out; the expression itself never finishes.
	res, err := run(t, s, Options{BlockTimeout: time.Second, Sandbox: sandbox.Limits{Grace: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != ledger.RLMFinal || res.Answer != "undefined" {
		t.Fatalf("status %s, answer %q", res.Status, res.Answer)
	}
	stuck := res.Transcript[2]
	if stuck.Kind != ledger.RLMStepRepl || !strings.Contains(stuck.Error, "the sandbox exceeded its time limit") || !strings.Contains(stuck.Error, "the REPL was restarted and every variable is gone") {
		t.Fatalf("block step %+v", stuck)
	}
	if !strings.Contains(s.seen[1], "exceeded its time limit") || !strings.Contains(s.seen[1], "The 1 later block(s) of this reply were not run.") {
		t.Errorf("the model was not told:\n%s", s.seen[1])
	}
}

// TestEndlessAllocation: a block that allocates without end ends its REPL
// with a clear error instead of the process running the test; the run
// goes on.
func TestEndlessAllocation(t *testing.T) {
	s := &script{root: []string{
		repl("const a = []; while (true) a.push(new Array(100000).fill(a.length))"),
		repl("FINAL(context.thoughts.length)"),
	}}
	res, err := run(t, s, Options{BlockTimeout: time.Hour, Sandbox: sandbox.Limits{Memory: 64 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Transcript[1].Error, "the sandbox ran out of memory (limit 64 MiB)") {
		t.Fatalf("block step %+v", res.Transcript[1])
	}
	if res.Status != ledger.RLMFinal || res.Answer != "2" {
		t.Errorf("status %s, answer %q", res.Status, res.Answer)
	}
}
