package gateway_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// selfTestStep is one step of the thoughtbox://tests/thoughtbox script, as
// the resource writes it: the call, made exactly as written, and what it
// should answer.
type selfTestStep struct {
	n      int
	call   string
	expect string
}

var selfTestStepRE = regexp.MustCompile("(?m)^\\*\\*Step (\\d+)\\.\\*\\* `(\\{.*\\})`\\n(Expect: .*)$")

// selfTestSteps reads the steps out of the resource's text.
func selfTestSteps(t *testing.T, text string) []selfTestStep {
	t.Helper()
	var out []selfTestStep
	for _, m := range selfTestStepRE.FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		if n != len(out)+1 {
			t.Fatalf("the self-test's steps are not numbered 1, 2, 3...: step %d after %d", n, len(out))
		}
		out = append(out, selfTestStep{n: n, call: m[2], expect: m[3]})
	}
	if got := strings.Count(text, "**Step "); got != len(out) {
		t.Fatalf("the self-test has %d steps, %d of them in the form **Step N.** `{call}` then Expect:", got, len(out))
	}
	return out
}

// TestSelfTestResource runs the server's own self-test,
// thoughtbox://tests/thoughtbox, through a real MCP client: every step,
// its call taken from the resource's text exactly as an agent would make
// it, and each step's Expect checked below. A step added to the resource
// without a check here fails the test, so the script and the server
// cannot drift apart.
func TestSelfTestResource(t *testing.T) {
	e := newEnv(t, gateway.Options{ExportDir: t.TempDir()})
	c := e.connect(t, clientOpts{})
	text, err := c.read("thoughtbox://tests/thoughtbox")
	if err != nil {
		t.Fatal(err)
	}
	steps := selfTestSteps(t, text)
	var sessionID string
	for _, st := range steps {
		check := selfTestChecks[st.n]
		if check == nil {
			t.Fatalf("step %d has no check in this test: %s", st.n, st.expect)
		}
		call := strings.NewReplacer("<id from step 3>", sessionID, "<id>", sessionID).Replace(st.call)
		var in map[string]any
		if err := json.Unmarshal([]byte(call), &in); err != nil {
			t.Fatalf("step %d: the call is not JSON: %v\n%s", st.n, err, call)
		}
		r := c.tool("thoughtbox_gateway", in)
		body := r.json(t)
		if problem := check(c, r.isError, body); problem != "" {
			t.Errorf("step %d FAIL: %s\ncall: %s\nexpect: %s\nreply: %s", st.n, problem, call, st.expect, r.texts[0])
		}
		if st.n == 3 {
			sessionID, _ = body["sessionId"].(string)
		}
	}
	if len(steps) != len(selfTestChecks) {
		t.Errorf("the resource has %d steps, this test checks %d", len(steps), len(selfTestChecks))
	}
}

// selfTestCheck says what is wrong with a step's reply ("" if nothing).
type selfTestCheck func(c *client, isError bool, body map[string]any) string

func wantCode(code ledger.Code, mentions ...string) selfTestCheck {
	return func(_ *client, isError bool, body map[string]any) string {
		if !isError || body["code"] != string(code) {
			return fmt.Sprintf("want an isError result with code %s", code)
		}
		msg, _ := body["message"].(string)
		for _, m := range mentions {
			if !strings.Contains(msg, m) {
				return fmt.Sprintf("the message does not mention %q", m)
			}
		}
		return ""
	}
}

func wantThought(n int, more func(map[string]any) string) selfTestCheck {
	return func(_ *client, isError bool, body map[string]any) string {
		if isError {
			return "want success"
		}
		if got := num(body["thoughtNumber"]); got != n {
			return fmt.Sprintf("thoughtNumber %d, want %d", got, n)
		}
		if more != nil {
			return more(body)
		}
		return ""
	}
}

func wantTexts(want ...string) selfTestCheck {
	return func(_ *client, isError bool, body map[string]any) string {
		if isError {
			return "want success"
		}
		var got []string
		for _, th := range list(body["thoughts"]) {
			got = append(got, th.(map[string]any)["thought"].(string))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Sprintf("thoughts %q, want %q", got, want)
		}
		return ""
	}
}

func stageIs(c *client, want int) string {
	if got := num(c.ok("get_state", nil)["stage"]); got != want {
		return fmt.Sprintf("get_state reports stage %d, want %d", got, want)
	}
	return ""
}

var selfTestChecks = map[int]selfTestCheck{
	1: func(_ *client, isError bool, b map[string]any) string {
		if isError || num(b["stage"]) != 0 || b["sessionId"] != nil {
			return "want stage 0 and no session"
		}
		if s := fmt.Sprint(b); !strings.Contains(s, "start_new") || !strings.Contains(s, "load_context") {
			return "no hint naming start_new and load_context"
		}
		return ""
	},
	2: func(c *client, isError bool, b map[string]any) string {
		if p := wantCode(ledger.CodeStageRequirementNotMet, "start_new")(c, isError, b); p != "" {
			return p
		}
		d, _ := b["details"].(map[string]any)
		if num(d["currentStage"]) != 0 || num(d["requiredStage"]) != 2 {
			return "details do not name stage 0 and stage 2"
		}
		return ""
	},
	3: func(_ *client, isError bool, b map[string]any) string {
		if isError || b["sessionId"] == nil || num(b["stage"]) != 1 {
			return "want a sessionId and stage 1"
		}
		return ""
	},
	4: func(c *client, isError bool, b map[string]any) string {
		s := fmt.Sprint(b)
		if isError || !strings.Contains(s, "S{n}|{type}|{refs}|{content}") || num(b["stage"]) != 2 {
			return "want the guide with its line format, and stage 2"
		}
		markers, _ := b["markers"].(map[string]any)
		for _, m := range strings.Fields("H E C Q R P O A X") {
			if markers[m] == nil {
				return "the guide does not list marker " + m
			}
		}
		return stageIs(c, 2)
	},
	5: wantThought(1, func(b map[string]any) string {
		if num(b["totalThoughts"]) != 1 || b["nextThoughtNeeded"] != true || b["thoughtHistory"] != nil || len(b) > 12 {
			return "want totalThoughts 1, nextThoughtNeeded true, a short reply"
		}
		return ""
	}),
	6: wantThought(2, nil),
	7: wantThought(3, func(b map[string]any) string {
		if num(b["totalThoughts"]) != 5 {
			return "want totalThoughts 5"
		}
		return ""
	}),
	8: wantCode(ledger.CodeInvalidPayload, "2"),
	9: wantThought(3, func(b map[string]any) string {
		if b["branchId"] != "alt" {
			return "want branchId alt"
		}
		return ""
	}),
	10: wantThought(4, func(b map[string]any) string {
		if b["branchId"] != "alt" {
			return "want branchId alt"
		}
		return ""
	}),
	11: wantCode(ledger.CodeInvalidPayload, "branchFromThought"),
	12: wantCode(ledger.CodeInvalidPayload, "branchId", "^[a-z0-9-]+$"),
	13: wantThought(4, func(b map[string]any) string {
		if b["branchId"] != nil {
			return "want it on the main chain"
		}
		return ""
	}),
	14: wantCode(ledger.CodeThoughtNotFound, "99"),
	15: wantThought(5, func(b map[string]any) string {
		node, _ := b["node"].(map[string]any)
		ci, _ := node["cipher"].(map[string]any)
		var refs []int
		for _, r := range list(ci["refs"]) {
			refs = append(refs, num(r.(map[string]any)["thought"]))
		}
		if ci["type"] != string(ledger.CipherConclusion) || fmt.Sprint(refs) != "[3 4]" {
			return "want the full node with type C (conclusion) and references to 3 and 4"
		}
		return ""
	}),
	16: wantThought(6, nil),
	17: wantTexts("Second step"),
	18: wantTexts("S5|C|S3,S4|Both paths agree", "S6|Z|not a real marker"),
	19: wantTexts("First step", "Second step", "Third step"),
	20: func(c *client, isError bool, b map[string]any) string {
		if p := wantTexts("Alternative path", "Alternative, continued")(c, isError, b); p != "" {
			return p
		}
		for _, th := range list(b["thoughts"]) {
			m := th.(map[string]any)
			if m["branchId"] != "alt" {
				return "a branch thought without branchId alt"
			}
		}
		return ""
	},
	21: func(_ *client, isError bool, b map[string]any) string {
		got, _ := json.Marshal(map[string]any{"main": b["mainChain"], "branches": b["branches"], "revisions": b["revisions"], "summary": b["summary"]})
		want := `{"branches":[{"count":2,"fromThought":2,"id":"alt"}],"main":{"count":6,"range":{"first":1,"last":6}},"revisions":[{"revises":1,"thoughtNumber":4}],"summary":{"totalBranches":1,"totalRevisions":1,"totalThoughts":8}}`
		if isError || string(got) != want {
			return "structure " + string(got) + ", want " + want
		}
		return ""
	},
	22: func(_ *client, isError bool, b map[string]any) string {
		ri, _ := b["restorationInfo"].(map[string]any)
		if isError || num(ri["thoughtCount"]) != 8 || num(ri["currentThoughtNumber"]) != 6 || num(ri["branchCount"]) != 1 || !strings.Contains(fmt.Sprint(ri), "#7") {
			return "want thoughtCount 8, currentThoughtNumber 6, branchCount 1 and next thought #7"
		}
		return ""
	},
	23: func(c *client, isError bool, b map[string]any) string {
		if p := wantThought(7, nil)(c, isError, b); p != "" {
			return p
		}
		return stageIs(c, 2)
	},
	24: wantThought(8, func(b map[string]any) string {
		if b["sessionClosed"] != true || !strings.HasSuffix(fmt.Sprint(b["exportPath"]), ".json") {
			return "want sessionClosed and an exportPath ending in .json"
		}
		return ""
	}),
	25: func(_ *client, isError bool, b map[string]any) string {
		if isError {
			return "want success"
		}
		m, _ := b["metadata"].(map[string]any)
		if m == nil {
			m = b
		}
		q, _ := b["quality"].(map[string]any)
		get := func(k string) any {
			for _, src := range []map[string]any{b, m, q, b["structure"].(map[string]any)} {
				if v, ok := src[k]; ok {
					return v
				}
			}
			return nil
		}
		if get("isComplete") != true || num(get("maxDepth")) != 1 || get("revisionRate").(float64) <= 0 || get("linearityScore").(float64) >= 1 || get("hasConvergence") != true {
			return "want isComplete, maxDepth 1, revisionRate > 0, linearityScore < 1, hasConvergence"
		}
		return ""
	},
}
