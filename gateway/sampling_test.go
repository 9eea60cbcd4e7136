package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/gateway/rlm"
	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/sandbox"
)

// model is a scripted model behind the test client's sampling handler. It
// tells the three kinds of request apart by their system prompt.
type model struct {
	mu sync.Mutex
	// critique answers critique requests; default: a fixed critique.
	critique func(p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	// root are the RLM root model's replies, in turn; when they run out
	// it keeps saying "still thinking".
	root []string
	// onRoot, if set, runs before the n-th (1-based) root reply.
	onRoot func(ctx context.Context, n int)

	critiques, roots, subs []*mcp.CreateMessageParams
}

const (
	critiqueText  = "The step assumes the cache has one writer; with two, the flush races the write."
	criticModel   = "claude-sonnet-4-5-20250929-scripted"
	rootModelName = "scripted-root"
)

func (m *model) handle(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	p := req.Params
	text := func(s, model string) *mcp.CreateMessageResult {
		return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: s}, Model: model}
	}
	m.mu.Lock()
	switch p.SystemPrompt {
	case rlm.RootSystemPrompt:
		m.roots = append(m.roots, p)
		n := len(m.roots)
		reply := "still thinking"
		if len(m.root) > 0 {
			reply, m.root = m.root[0], m.root[1:]
		}
		hook := m.onRoot
		m.mu.Unlock()
		if hook != nil {
			hook(ctx, n)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
		return text(reply, rootModelName), nil
	case rlm.SubSystemPrompt:
		m.subs = append(m.subs, p)
		m.mu.Unlock()
		q := p.Messages[0].Content.(*mcp.TextContent).Text
		return text("sub-answer("+q+")", "scripted-sub"), nil
	}
	m.critiques = append(m.critiques, p)
	fn := m.critique
	m.mu.Unlock()
	if fn != nil {
		return fn(p)
	}
	return text(critiqueText, criticModel), nil
}

// lastRootPrompt is the last message the root model was sent.
func (m *model) lastRootPrompt() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.roots[len(m.roots)-1]
	return p.Messages[len(p.Messages)-1].Content.(*mcp.TextContent).Text
}

func (m *model) counts() (critiques, roots, subs int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.critiques), len(m.roots), len(m.subs)
}

// critiqueStore records who each critique commit is attributed to.
type critiqueStore struct {
	*recordingStore
	mu      sync.Mutex
	critics []ledger.Author
}

func (s *critiqueStore) AddCritique(ctx context.Context, req ledger.CritiqueRequest) (ledger.CommitID, error) {
	s.mu.Lock()
	s.critics = append(s.critics, req.Author)
	s.mu.Unlock()
	return s.Store.AddCritique(ctx, req)
}

// newSamplingEnv is newEnv over a store that records critique authors.
func newSamplingEnv(t *testing.T, opts gateway.Options) (*env, *critiqueStore) {
	t.Helper()
	cs := &critiqueStore{recordingStore: newStore(t)}
	e := &env{store: cs.recordingStore, log: &syncBuffer{}, events: &eventSink{}}
	e.l = ledger.New(cs, ledger.Options{})
	opts.ThoughtLog, opts.Events = e.log, e.events
	e.g = gateway.New(e.l, opts)
	return e, cs
}

// connectModel connects a client whose sampling handler is m (nil: a
// client without the sampling capability). methodNotFound makes the client
// advertise sampling but answer it with -32601.
func (e *env) connectModel(t *testing.T, m *model, methodNotFound bool) *client {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := e.g.NewServer().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c := &client{t: t, toolsChanged: make(chan struct{}, 16)}
	impl, opts := clientOptions(clientOpts{name: "sampling-agent", version: "2.0"}, c.toolsChanged)
	if m != nil {
		opts.CreateMessageHandler = m.handle
	}
	if methodNotFound {
		opts.Capabilities = &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}
	}
	cl := mcp.NewClient(impl, opts)
	if methodNotFound {
		cl.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "sampling/createMessage" {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}
				}
				return next(ctx, method, req)
			}
		})
	}
	c.cs, err = cl.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cs.Close() })
	return c
}

// stored reads a session's main chain back from the store.
func stored(t *testing.T, s ledger.Store, id string) []ledger.StoredThought {
	t.Helper()
	ss, err := s.LoadSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return ss.Main
}

func TestCritique(t *testing.T) {
	e, cs := newSamplingEnv(t, gateway.Options{})
	m := &model{}
	c := e.connectModel(t, m, false)
	id := c.ready("cache design")
	c.think("The cache is stale after deploys.", nil)
	r := c.think("So we flush it on every write.", map[string]any{"critique": true, "verbose": true})
	if node, _ := r["node"].(map[string]any); node["data"].(map[string]any)["critique"] == nil {
		t.Errorf("the verbose node has no critique: %v", node)
	}

	crit, _ := r["critique"].(map[string]any)
	if crit == nil || crit["text"] != critiqueText || crit["model"] != criticModel || crit["timestamp"] == "" {
		t.Fatalf("reply critique = %v (reply %v)", crit, r)
	}
	if r["critiqueError"] != nil || num(r["thoughtNumber"]) != 2 {
		t.Errorf("reply = %v", r)
	}

	// What the critic was asked (seed 000, "Sampling Handler").
	if n, _, _ := m.counts(); n != 1 {
		t.Fatalf("%d critique requests", n)
	}
	p := m.critiques[0]
	if p.IncludeContext != "thisServer" || p.MaxTokens != 1000 {
		t.Errorf("includeContext %q, maxTokens %d", p.IncludeContext, p.MaxTokens)
	}
	mp := p.ModelPreferences
	if mp == nil || len(mp.Hints) != 1 || mp.Hints[0].Name != "claude-sonnet-4-5-20250929" || mp.IntelligencePriority != 0.9 || mp.CostPriority != 0.3 {
		t.Errorf("model preferences = %+v", mp)
	}
	for _, want := range []string{"Logical gaps", "Unstated assumptions", "Alternatives", "Edge cases", "Improvements"} {
		if !strings.Contains(p.SystemPrompt, want) {
			t.Errorf("critic system prompt does not ask for %q", want)
		}
	}
	prompt := p.Messages[0].Content.(*mcp.TextContent).Text
	if !strings.Contains(prompt, "The cache is stale after deploys.") || !strings.Contains(prompt, "Thought to critique:\n\n[Thought 2 of 2]\nSo we flush it on every write.") {
		t.Errorf("critique prompt lacks the chain's context or the thought:\n%s", prompt)
	}

	// Two commits for thought 2: the thought by the agent, then the
	// critique by the model.
	if a := e.store.lastAuthor(); a.Name != "sampling-agent 2.0" {
		t.Errorf("thought author = %+v", a)
	}
	if len(cs.critics) != 1 || cs.critics[0].Name != criticModel || !strings.HasSuffix(cs.critics[0].Email, "@models.thoughtbox.invalid") {
		t.Errorf("critique authors = %+v", cs.critics)
	}
	main := stored(t, e.store, id)
	if got := main[1].Data.Critique; got == nil || got.Text != critiqueText || got.Model != criticModel {
		t.Fatalf("stored critique = %+v", got)
	}
	if main[0].Data.Critique != nil {
		t.Error("thought 1 got a critique")
	}

	// The chain goes on from the critique's commit, and the view has it.
	c.think("Three.", nil)
	read := c.ok("read_thoughts", map[string]any{"thoughtNumber": 2})
	if b, _ := json.Marshal(read); !strings.Contains(string(b), critiqueText) {
		t.Errorf("read_thoughts does not show the critique: %v", read)
	}
	if !strings.Contains(e.log.String(), "critique of thought 2") {
		t.Errorf("thought log:\n%s", e.log.String())
	}
}

func TestCritiqueOnDiskIsASecondCommitByTheModel(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	dir := filepath.Join(t.TempDir(), "p.git")
	s, err := gitstore.Open(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	l := ledger.New(s, ledger.Options{})
	e := &env{g: gateway.New(l, gateway.Options{}), l: l}
	c := e.connectModel(t, &model{}, false)
	id := c.ready("on disk")
	c.think("Only thought.", map[string]any{"critique": true})
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "--git-dir", dir, "log", "--format=%an <%ae>|%cn|%s", "sessions/"+id+"/main").CombinedOutput()
	if err != nil {
		t.Fatalf("git log: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := []string{
		criticModel + " <" + criticModel + "@models.thoughtbox.invalid>|Thoughtbox|Critique of thought 1 by " + criticModel,
		"sampling-agent 2.0 <sampling-agent-2.0@agents.thoughtbox.invalid>|Thoughtbox|Thought 1: Only thought.",
	}
	if len(lines) < 2 || lines[0] != want[0] || lines[1] != want[1] {
		t.Errorf("git log:\n%s\nwant it to start with:\n%s", out, strings.Join(want, "\n"))
	}
}

func TestCritiqueWithoutSampling(t *testing.T) {
	for name, methodNotFound := range map[string]bool{"no capability": false, "method not found": true} {
		t.Run(name, func(t *testing.T) {
			e, cs := newSamplingEnv(t, gateway.Options{})
			c := e.connectModel(t, nil, methodNotFound)
			id := c.ready("no sampling")
			r := c.think("Recorded anyway.", map[string]any{"critique": true})
			if r["critique"] != nil {
				t.Fatalf("reply has a critique: %v", r)
			}
			ce, _ := r["critiqueError"].(map[string]any)
			if ce == nil || ce["code"] != string(ledger.CodeSamplingNotSupported) {
				t.Fatalf("critiqueError = %v", r["critiqueError"])
			}
			msg, _ := ce["message"].(string)
			why := "did not advertise the sampling capability"
			if methodNotFound {
				why = "-32601"
			}
			if !strings.Contains(msg, "thought 1 was recorded without a critique") || !strings.Contains(msg, why) {
				t.Errorf("message %q does not say what happened and why (%s)", msg, why)
			}
			if d, _ := ce["details"].(map[string]any); num(d["thoughtNumber"]) != 1 {
				t.Errorf("details = %v", ce["details"])
			}
			main := stored(t, e.store, id)
			if len(main) != 1 || main[0].Data.Thought != "Recorded anyway." || main[0].Data.Critique != nil {
				t.Errorf("stored = %+v", main)
			}
			if len(cs.critics) != 0 {
				t.Errorf("a critique was committed: %+v", cs.critics)
			}
		})
	}
}

func TestCritiqueSamplingError(t *testing.T) {
	e, _ := newSamplingEnv(t, gateway.Options{})
	m := &model{critique: func(*mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
		return nil, errors.New("the user declined the sampling request")
	}}
	c := e.connectModel(t, m, false)
	id := c.ready("declined")
	r := c.think("Kept.", map[string]any{"critique": true})
	ce, _ := r["critiqueError"].(map[string]any)
	if ce == nil || ce["code"] != string(ledger.CodeInternal) || !strings.Contains(ce["message"].(string), "the user declined the sampling request") {
		t.Fatalf("critiqueError = %v", r["critiqueError"])
	}
	if main := stored(t, e.store, id); len(main) != 1 || main[0].Data.Critique != nil {
		t.Errorf("stored = %+v", main)
	}
	// A model answering with something other than text is a failure too.
	m.critique = func(*mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
		return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.ImageContent{MIMEType: "image/png", Data: []byte{1}}, Model: "painter"}, nil
	}
	r = c.think("Kept too.", map[string]any{"critique": true})
	if ce, _ := r["critiqueError"].(map[string]any); ce == nil || !strings.Contains(ce["message"].(string), "image content") {
		t.Errorf("critiqueError = %v", r["critiqueError"])
	}
	if main := stored(t, e.store, id); len(main) != 2 {
		t.Errorf("stored %d thoughts, want 2", len(main))
	}
}

func repl(code string) string { return "```repl\n" + code + "\n```\n" }

// rlmThought records a thought with an RLM run and returns the reply and
// its rlm part.
func rlmThought(c *client, query string) (reply, res map[string]any) {
	c.t.Helper()
	reply = c.think("Which assumption recurs?", map[string]any{"rlm": true, "rlmQuery": query})
	res, _ = reply["rlm"].(map[string]any)
	if res == nil {
		c.t.Fatalf("reply has no rlm result: %v", reply)
	}
	return reply, res
}

func TestRLMFinal(t *testing.T) {
	e, _ := newSamplingEnv(t, gateway.Options{})
	m := &model{root: []string{
		"Let me look at the session.\n" + repl(`print(context.title, context.thoughts.length, context.thoughts.map(t => t.thought).join(" | "))`),
		"Thought 1 assumes a single writer.\nFINAL(the single-writer assumption)",
	}}
	c := e.connectModel(t, m, false)
	id := c.ready("rlm session")
	c.think("One writer updates the cache.", nil)
	reply, res := rlmThought(c, "Which assumption recurs?")

	if res["status"] != "final" || res["answer"] != "the single-writer assumption" || num(res["iterations"]) != 2 || num(res["subQueries"]) != 0 {
		t.Fatalf("rlm = %v", res)
	}
	if res["model"] != rootModelName || len(list(res["transcript"])) != 3 {
		t.Errorf("model %v, transcript %v", res["model"], res["transcript"])
	}
	if reply["rlmError"] != nil || num(reply["thoughtNumber"]) != 2 {
		t.Errorf("reply = %v", reply)
	}
	if got := m.lastRootPrompt(); !strings.Contains(got, "rlm session 1 One writer updates the cache.") {
		t.Errorf("the root model did not see the session through context:\n%s", got)
	}
	first := m.roots[0]
	if first.MaxTokens != int64(rlm.DefaultRootMaxTokens) || first.ModelPreferences.Hints[0].Name != "claude-sonnet-4-5-20250929" {
		t.Errorf("root request = %+v", first)
	}

	// One commit: the thought with its result.
	main := stored(t, e.store, id)
	if len(main) != 2 || main[1].Data.RLM == nil || main[1].Data.RLM.Answer != "the single-writer assumption" || len(main[1].Data.RLM.Transcript) != 3 {
		t.Fatalf("stored = %+v", main)
	}
	if len(e.store.authors) != 2 {
		t.Errorf("%d Append calls, want 2 (one per thought)", len(e.store.authors))
	}
}

func TestRLMFinalVarWithSubQueries(t *testing.T) {
	e, _ := newSamplingEnv(t, gateway.Options{})
	m := &model{root: []string{
		repl(`var verdicts = context.thoughts.map(t => llm_query("Is this an assumption? " + t.thought));
print(verdicts.length)`),
		repl(`var summary = verdicts.join("; ");`) + "FINAL_VAR(summary)",
	}}
	c := e.connectModel(t, m, false)
	c.ready("rlm vars")
	c.think("A.", nil)
	c.think("B.", nil)
	_, res := rlmThought(c, "Classify each thought.")
	want := "sub-answer(Is this an assumption? A.); sub-answer(Is this an assumption? B.)"
	if res["status"] != "final" || res["answer"] != want || num(res["subQueries"]) != 2 {
		t.Fatalf("rlm = %v", res)
	}
	if _, _, subs := m.counts(); subs != 2 {
		t.Errorf("%d sub-queries reached the client", subs)
	}
	if !strings.Contains(e.log.String(), "llm_query to scripted-sub") {
		t.Errorf("sub-queries not logged:\n%s", e.log.String())
	}
}

func TestRLMRunsOutOfIterations(t *testing.T) {
	e, _ := newSamplingEnv(t, gateway.Options{Sampling: gateway.SamplingOptions{RLM: rlm.Options{MaxIterations: 3}}})
	m := &model{root: []string{repl("var n = 1"), repl("n++")}} // then "still thinking"
	c := e.connectModel(t, m, false)
	id := c.ready("endless")
	reply, res := rlmThought(c, "Never answered.")
	if res["status"] != "iteration_limit" || num(res["iterations"]) != 3 || res["answer"] != nil {
		t.Fatalf("rlm = %v", res)
	}
	if _, roots, _ := m.counts(); roots != 3 {
		t.Errorf("root sampled %d times, want 3", roots)
	}
	if reply["rlmError"] != nil {
		t.Errorf("rlmError = %v", reply["rlmError"])
	}
	if main := stored(t, e.store, id); main[0].Data.RLM == nil || main[0].Data.RLM.Status != ledger.RLMIterationLimit {
		t.Errorf("stored = %+v", main[0].Data.RLM)
	}
}

// TestRLMBlockLoopsForever: the block is interrupted at its limit (200ms
// here; 5s by default, see rlm.TestDefaults) and the run goes on.
func TestRLMBlockLoopsForever(t *testing.T) {
	// A long grace: the sandbox's own interrupt is tested, not its kill,
	// which a loaded machine could reach first with the default second.
	e, _ := newSamplingEnv(t, gateway.Options{Sampling: gateway.SamplingOptions{RLM: rlm.Options{BlockTimeout: 200_000_000, Sandbox: sandbox.Limits{Grace: time.Minute}}}})
	m := &model{root: []string{
		repl("var spins = 0; while (true) { spins++ }"),
		"It was stopped.\n" + repl("FINAL(spins > 0)"),
	}}
	c := e.connectModel(t, m, false)
	c.ready("spin")
	_, res := rlmThought(c, "Spin.")
	if res["status"] != "final" || res["answer"] != "true" {
		t.Fatalf("rlm = %v", res)
	}
	block := list(res["transcript"])[1].(map[string]any)
	if block["kind"] != "repl" || !strings.Contains(block["error"].(string), "interrupted: the block ran longer than 200ms") || num(block["durationMs"]) < 200 {
		t.Errorf("block = %v", block)
	}
	if got := m.lastRootPrompt(); !strings.Contains(got, "interrupted") {
		t.Errorf("the model was not told:\n%s", got)
	}
}

func TestRLMSandboxRefusesFilesystemAndNetwork(t *testing.T) {
	e, _ := newSamplingEnv(t, gateway.Options{})
	m := &model{root: []string{
		repl(`require("fs").readFileSync("/etc/passwd", "utf8")`) +
			repl(`fetch("https://example.com/")`) +
			repl(`new XMLHttpRequest()`) +
			repl(`print(typeof process, typeof setTimeout, typeof require)`),
		"FINAL(refused)",
	}}
	c := e.connectModel(t, m, false)
	c.ready("escape")
	_, res := rlmThought(c, "Read a file.")
	if res["answer"] != "refused" {
		t.Fatalf("rlm = %v", res)
	}
	got := m.lastRootPrompt()
	for _, want := range []string{
		"ReferenceError: require is not defined",
		"ReferenceError: fetch is not defined",
		"ReferenceError: XMLHttpRequest is not defined",
		"undefined undefined undefined",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("feedback lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "root:") {
		t.Errorf("a file was read:\n%s", got)
	}
}

func TestRLMWithoutSampling(t *testing.T) {
	e, _ := newSamplingEnv(t, gateway.Options{})
	c := e.connectModel(t, nil, false)
	id := c.ready("no sampling")
	r := c.think("Still recorded.", map[string]any{"rlm": true, "rlmQuery": "q"})
	re, _ := r["rlmError"].(map[string]any)
	if r["rlm"] != nil || re == nil || re["code"] != string(ledger.CodeSamplingNotSupported) || !strings.Contains(re["message"].(string), "thought 1 was recorded without an RLM run") {
		t.Fatalf("reply = %v", r)
	}
	if main := stored(t, e.store, id); len(main) != 1 || main[0].Data.RLM != nil {
		t.Errorf("stored = %+v", main)
	}
	c.fail("thought", map[string]any{"thought": "x", "nextThoughtNeeded": true, "rlm": true}, ledger.CodeInvalidPayload)
	c.fail("thought", map[string]any{"thought": "x", "nextThoughtNeeded": true, "rlmQuery": "q"}, ledger.CodeInvalidPayload)
}

// TestRLMCancelled: the client cancelling the call stops the loop, and
// nothing is recorded.
func TestRLMCancelled(t *testing.T) {
	e, _ := newSamplingEnv(t, gateway.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	m := &model{
		root: []string{repl("var a = 1"), repl("var b = 2"), repl("var c = 3")},
		onRoot: func(hctx context.Context, n int) {
			if n == 2 {
				cancel() // the agent gives up while the model is thinking
				<-hctx.Done()
			}
		},
	}
	c := e.connectModel(t, m, false)
	id := c.ready("cancel")
	_, err := c.cs.CallTool(ctx, toolCall("thought", map[string]any{
		"thought": "Never mind.", "nextThoughtNeeded": true, "rlm": true, "rlmQuery": "q",
	}))
	if err == nil {
		t.Fatal("the cancelled call returned a result")
	}
	// The session stays usable, the loop has stopped, and the cancelled
	// thought was not recorded.
	r := c.think("Next.", nil)
	if num(r["thoughtNumber"]) != 1 {
		t.Errorf("next thought numbered %v: the cancelled one was recorded", r["thoughtNumber"])
	}
	if _, roots, _ := m.counts(); roots != 2 {
		t.Errorf("root sampled %d times, want 2 (none after the cancel)", roots)
	}
	if main := stored(t, e.store, id); len(main) != 1 {
		t.Errorf("stored %d thoughts", len(main))
	}
}
