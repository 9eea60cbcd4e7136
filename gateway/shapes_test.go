package gateway_test

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// volatile masks what differs between two otherwise identical runs: ids,
// commits, timestamps and durations.
var volatile = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{40}|\d{4}-\d\d-\d\dT[0-9:.]+Z|"(durationMs|timestamp|createdAt|updatedAt|lastAccessedAt|elapsedMs)":\s*\d+`)

// TestBothArgumentShapes runs every operation twice, on two fresh servers:
// once with its arguments under "args" (seeds 001, 004) and once with them
// flat beside "operation" (seed 000). Both shapes must give the same reply.
func TestBothArgumentShapes(t *testing.T) {
	steps := []struct {
		op   string
		args map[string]any
	}{
		{"get_state", nil},
		{"list_sessions", map[string]any{"limit": 5}},
		{"start_new", map[string]any{"sessionTitle": "shapes", "tags": []string{"t"}}},
		{"navigate", map[string]any{"task": "compare shapes"}},
		{"cipher", nil},
		{"thought", map[string]any{"thought": "first", "nextThoughtNeeded": true}},
		{"thought", map[string]any{"thought": "second", "nextThoughtNeeded": true, "totalThoughts": 3}},
		{"thought", map[string]any{"thought": "fork", "nextThoughtNeeded": true, "branchId": "alt", "branchFromThought": 1}},
		{"thought", map[string]any{"thought": "fix", "nextThoughtNeeded": true, "isRevision": true, "revisesThought": 1}},
		{"read_thoughts", map[string]any{"last": 2}},
		{"read_thoughts", map[string]any{"thoughtNumber": 1}},
		{"read_thoughts", map[string]any{"branchId": "alt"}},
		{"get_structure", nil},
		{"deep_analysis", map[string]any{"analysisType": "patterns"}},
		{"mental_models", map[string]any{"subOperation": "list_tags"}},
		{"mental_models", map[string]any{"subOperation": "get_model", "modelId": "five-whys"}},
		{"session", map[string]any{"subOperation": "list", "limit": 3}},
		{"session", map[string]any{"subOperation": "search", "query": "fork"}},
		{"knowledge", map[string]any{"subOperation": "list"}},
		{"knowledge", map[string]any{"subOperation": "create", "title": "P", "description": "d", "content": "c"}},
		{"list_roots", nil},
		{"thought", map[string]any{"thought": "bad", "nextThoughtNeeded": true, "thoughtNumber": 0}},
	}
	run := func(flat bool) []string {
		e := newEnv(t, gateway.Options{})
		e.g = gateway.New(e.l, gateway.Options{Knowledge: ledger.NewKnowledge(e.store.Store, ledger.KnowledgeOptions{})})
		c := e.connect(t, clientOpts{})
		var out []string
		for _, s := range steps {
			in := map[string]any{"operation": s.op}
			if flat {
				for k, v := range s.args {
					in[k] = v
				}
			} else if s.args != nil {
				in["args"] = s.args
			}
			r := c.tool("thoughtbox_gateway", in)
			text := ""
			if len(r.texts) > 0 {
				text = r.texts[0]
			}
			b, _ := json.Marshal(map[string]any{"op": s.op, "isError": r.isError, "reply": volatile.ReplaceAllString(text, "…")})
			out = append(out, string(b))
		}
		return out
	}
	nested, flat := run(false), run(true)
	if diff := cmp.Diff(nested, flat); diff != "" {
		t.Errorf("flat arguments replied differently from nested ones (-nested +flat):\n%s", diff)
	}
	// The run must have done real work in both shapes, not failed alike.
	for i, s := range steps[:len(steps)-1] {
		var r map[string]any
		json.Unmarshal([]byte(nested[i]), &r)
		if r["isError"] == true {
			t.Errorf("%s %v failed: %v", s.op, s.args, r["reply"])
		}
	}
}
