package gateway_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestCipherExportIDs is issue 33's repro through MCP: a thought whose
// text calls itself S5 while it is thought 2 must not make the export
// repeat S5. Every line of the export, read back by the cipher parser,
// has its thought number as its step id; the agent's own id is the
// line's alias; a revision written in plain words exports as type R.
func TestCipherExportIDs(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.ready("dup")
	for _, text := range []string{"S1|O|a", "S5|H|S1|b", "c", "d", "e"} {
		c.think(text, nil)
	}
	c.think("e, said better", map[string]any{"isRevision": true, "revisesThought": 5})
	ex := c.gw("session", map[string]any{"subOperation": "export", "format": "cipher"})
	if ex.isError {
		t.Fatalf("cipher export: %v", ex.texts)
	}
	var steps []string
	for _, line := range strings.Split(strings.Join(ex.texts, "\n"), "\n") {
		if !strings.HasPrefix(line, "S") {
			continue
		}
		info, ok := ledger.ParseCipher(line)
		if !ok {
			steps = append(steps, "plain:"+strings.SplitN(line, "|", 2)[0])
			continue
		}
		steps = append(steps, fmt.Sprintf("S%d=%d:%s", info.Step, info.Alias, info.Type))
	}
	want := []string{"S1=0:O", "S2=5:H", "plain:S3", "plain:S4", "plain:S5", "S6=0:R"}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("export lines as the parser reads them (-want +got):\n%s\n%s", diff, ex.texts)
	}
}

// TestResumeOtherSessionStepsBack is seed 000's state machine: "Stage2 -->
// Stage1: session.resume (different session)". The connection goes back
// to stage 1, the per-stage tools of stage 2 are withdrawn, a thought is
// refused until cipher is called again, and then it goes into the resumed
// session. Resuming the session already active, and load_context, keep the
// stage; thoughtbox://init and the gateway's description say so.
func TestResumeOtherSessionStepsBack(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	one := c.ready("one")
	c.think("in one", nil)
	two := c.ok("start_new", map[string]any{"sessionTitle": "two"})["sessionId"].(string)
	c.think("in two", nil)
	if r := c.ok("session", map[string]any{"operation": "resume", "sessionId": two}); num(r["stage"]) != 2 {
		t.Fatalf("resuming the active session moved the stage: %v", r)
	}
	r := c.ok("session", map[string]any{"operation": "resume", "sessionId": one})
	if num(r["stage"]) != 1 || !strings.Contains(fmt.Sprint(r["next"]), "cipher") {
		t.Fatalf("resume of another session at stage 2: stage %v, next %q; want stage 1 and a hint to call cipher", r["stage"], r["next"])
	}
	if got := num(c.ok("get_state", nil)["stage"]); got != 1 {
		t.Fatalf("get_state: stage %d, want 1", got)
	}
	if names := fmt.Sprint(c.toolNames()); strings.Contains(names, "thoughtbox_thought") || !strings.Contains(names, "thoughtbox_cipher") {
		t.Errorf("tools at stage 1 again: %s", names)
	}
	c.fail("thought", map[string]any{"thought": "too soon", "nextThoughtNeeded": true}, ledger.CodeStageRequirementNotMet)
	c.ok("cipher", nil)
	if r := c.think("back in one", nil); r["sessionId"] != one || num(r["thoughtNumber"]) != 2 {
		t.Errorf("thought after cipher again: %v", r)
	}
	if changes := e.events.ofType("stage_changed"); !strings.Contains(fmt.Sprint(changes), "session resume (different session)") {
		t.Errorf("no stage_changed event for the step back: %v", changes)
	}
	// load_context keeps the stage, as the seeds' load_context row has it.
	if r := c.ok("load_context", map[string]any{"sessionId": two}); num(r["stage"]) != 2 {
		t.Errorf("load_context of another session: stage %v, want 2", r["stage"])
	}

	init, err := c.read("thoughtbox://init")
	if err != nil {
		t.Fatal(err)
	}
	desc := c.tools()["thoughtbox_gateway"].Description
	for name, text := range map[string]string{"thoughtbox://init": init, "the gateway's description": desc} {
		if !strings.Contains(text, "session resume") || !strings.Contains(text, "stage 1") {
			t.Errorf("%s does not say that session resume of another session goes back to stage 1", name)
		}
	}
}

// TestDeleteActiveSession: deleting the connection's active session says
// so in the reply, and the next thought without a session is refused with
// what to call, instead of silently starting a session; a thought that
// asks for a new session by title, or a start_new, goes on.
func TestDeleteActiveSession(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	id := c.ready("doomed")
	c.think("first", nil)
	other := e.connect(t, clientOpts{})
	keep := other.ready("kept")
	if r := c.ok("session", map[string]any{"operation": "delete", "sessionId": keep}); r["activeSessionDeleted"] != nil {
		t.Errorf("deleting another connection's session claims it was this one's: %v", r)
	}
	r := c.ok("session", map[string]any{"operation": "delete", "sessionId": id})
	if r["activeSessionDeleted"] != true || !strings.Contains(r["message"].(string), "active session") {
		t.Fatalf("delete of the active session does not say so: %v", r)
	}
	before := num(c.ok("list_sessions", nil)["total"])
	body := c.fail("thought", map[string]any{"thought": "lost?", "nextThoughtNeeded": true}, ledger.CodeSessionNotFound)
	if msg := body["message"].(string); !strings.Contains(msg, "deleted") || !strings.Contains(msg, "start_new") {
		t.Errorf("the refusal does not say why and what to call: %q", msg)
	}
	if after := num(c.ok("list_sessions", nil)["total"]); after != before {
		t.Errorf("a refused thought changed the session count from %d to %d", before, after)
	}
	if r := c.think("fresh start", map[string]any{"sessionTitle": "fresh"}); r["sessionCreated"] != true {
		t.Errorf("a thought with sessionTitle after the delete: %v", r)
	}
}

// promptStages reads the list_mcp_assets prompt's operations: by stage,
// each operation with its sub-operations.
func promptStages(text string) map[string]int {
	out := map[string]int{}
	stage := -1
	head := regexp.MustCompile(`^\*\*From stage (\d)`)
	item := regexp.MustCompile("^- `([a-z_]+)`")
	subs := regexp.MustCompile("Sub-operations \\(in `args.operation`\\): (.*?)\\.( Also|$)")
	for _, line := range strings.Split(text, "\n") {
		if m := head.FindStringSubmatch(line); m != nil {
			stage, _ = strconv.Atoi(m[1])
			continue
		}
		if strings.HasPrefix(line, "## ") {
			stage = -1
		}
		m := item.FindStringSubmatch(line)
		if m == nil || stage < 0 {
			continue
		}
		out[m[1]] = stage
		if s := subs.FindStringSubmatch(line); s != nil {
			for _, name := range strings.Split(s[1], ", ") {
				out[m[1]+" "+strings.Trim(name, "`")] = stage
			}
		}
	}
	return out
}

// TestListAssetsPromptStages: the list_mcp_assets prompt lists every
// operation at the stage the gateway's description gives it, and every
// sub-operation the description's args name (knowledge opens at stage 1;
// session update, delete, restore and list_deleted are there).
func TestListAssetsPromptStages(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	res, err := c.cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "list_mcp_assets"})
	if err != nil {
		t.Fatal(err)
	}
	got := promptStages(res.Messages[0].Content.(*mcp.TextContent).Text)
	desc := c.tools()["thoughtbox_gateway"].Description
	opLine := regexp.MustCompile(`(?m)^- ([a-z_]+) \((\d)\): (.*)$`)
	subName := regexp.MustCompile(`(?:operation: | \| )([a-z_]+)`)
	n := 0
	for _, m := range opLine.FindAllStringSubmatch(desc, -1) {
		stage, _ := strconv.Atoi(m[2])
		want := map[string]int{m[1]: stage}
		for _, s := range subName.FindAllStringSubmatch(m[3], -1) {
			want[m[1]+" "+s[1]] = stage
		}
		for name, st := range want {
			n++
			if have, ok := got[name]; !ok || have != st {
				t.Errorf("list_mcp_assets: %s at stage %d (listed: %v); the gateway opens it at stage %d", name, have, ok, st)
			}
		}
	}
	for _, name := range []string{"knowledge", "session update", "session delete", "session restore", "session list_deleted"} {
		if _, ok := got[name]; !ok {
			t.Errorf("list_mcp_assets does not list %s", name)
		}
	}
	if n < 40 {
		t.Fatalf("read only %d operations and sub-operations from the gateway's description", n)
	}
}

// TestLearningScores: extract_learnings gives each learning seed 002's
// behaviorCharacteristics, four scores from 1 to 10, when the session
// has enough thoughts to score it, and leaves them out when it has not.
func TestLearningScores(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	id := c.ready("scored")
	c.think("S1|O||p99 latency rose to 900ms on /api/v2/users", nil)
	c.think("S2|H|S1|a missing index on users.email", nil)
	c.think("S3|H|S2|the cache hit rate fell", map[string]any{"branchFromThought": 2, "branchId": "cache"})
	c.think("S4|X|S3|cache ruled out: hit rate is 97%", map[string]any{"branchId": "cache"})
	c.think("S3|E|S2|EXPLAIN shows a sequential scan on users", map[string]any{"thoughtNumber": 3})
	c.think("S4|R|^S2|the index exists but is not used: a type mismatch", nil)
	c.ok("thought", map[string]any{"thought": "S5|C|S3,S4|cast the parameter; p99 back to 120ms", "nextThoughtNeeded": false})
	r := c.ok("session", map[string]any{"operation": "extract_learnings", "sessionId": id})
	learnings := list(r["learnings"])
	if len(learnings) == 0 {
		t.Fatalf("no learnings: %v", r)
	}
	scored := 0
	for _, l := range learnings {
		md := l.(map[string]any)["metadata"].(map[string]any)
		bc, _ := md["behaviorCharacteristics"].(map[string]any)
		if len(list(md["sourceThoughts"])) < 2 {
			if bc != nil {
				t.Errorf("a learning of one thought is scored: %v", md)
			}
			continue
		}
		scored++
		for _, k := range []string{"specificity", "applicability", "complexity", "maturity"} {
			if v, ok := bc[k].(float64); !ok || v < 1 || v > 10 || v != float64(int(v)) {
				t.Errorf("%s learning: %s = %v, want an integer from 1 to 10", md["rule"], k, bc[k])
			}
		}
	}
	if scored == 0 {
		t.Fatalf("no learning was scored: %v", learnings)
	}

	c.ok("start_new", map[string]any{"sessionTitle": "too short"})
	c.think("S1|H||one guess", nil)
	c.think("S2|X|S1|ruled out", nil)
	short := list(c.ok("session", map[string]any{"operation": "extract_learnings"})["learnings"])
	if len(short) == 0 {
		t.Fatal("the two-thought session gave no learning to check")
	}
	for _, l := range short {
		if md := l.(map[string]any)["metadata"].(map[string]any); md["behaviorCharacteristics"] != nil {
			t.Errorf("a two-thought session's learning is scored: %v", md)
		}
	}
}

// TestNotebookRunSkipsOnlyImporters runs a notebook through the gateway's
// notebook operations and the real sandbox: a failing cell stops only the
// cells that import it, run_all's reply says which cells ran and which
// were skipped, and why, and a cell may await at its top level.
func TestNotebookRunSkipsOnlyImporters(t *testing.T) {
	e, _ := notebookEnv(t, 10*time.Second)
	c := e.connect(t, clientOpts{})
	c.ready("notebooks")
	id := c.ok("notebook", map[string]any{"operation": "create", "name": "Chain", "language": "javascript"})["notebook"].(map[string]any)["id"].(string)
	add := func(name, src string) {
		c.ok("notebook", map[string]any{"operation": "add_cell", "notebookId": id, "type": "code", "filename": name, "content": src})
	}
	add("bad.js", "throw new Error('broken on purpose')\nexport const x = 1")
	add("user.js", "import { x } from './bad.js'\nconsole.log(x)")
	add("free.js", "console.log('independent')")
	add("await.js", "const v = await Promise.resolve(7)\nconsole.log('awaited', v)")
	r := c.ok("notebook", map[string]any{"operation": "run_all", "notebookId": id})
	// The blank template's own cell comes first.
	if got := fmt.Sprint(r["ran"]); got != "[code-1.js bad.js free.js await.js]" {
		t.Errorf("ran = %s, want [code-1.js bad.js free.js await.js]: %v", got, r)
	}
	skipped := list(r["skipped"])
	if len(skipped) != 1 || skipped[0].(map[string]any)["cell"] != "user.js" ||
		!strings.Contains(skipped[0].(map[string]any)["reason"].(string), "bad.js, which failed: Error: broken on purpose") {
		t.Errorf("skipped = %v", skipped)
	}
	for _, res := range list(r["results"]) {
		m := res.(map[string]any)
		if m["filename"] == "free.js" && (m["status"] != "completed" || m["output"] != "independent\n") {
			t.Errorf("free.js after the failure: %v", m)
		}
		if m["filename"] == "await.js" && (m["status"] != "completed" || m["output"] != "awaited 7\n") {
			t.Errorf("a cell with top-level await: %v", m)
		}
	}
}
