package gateway_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// volatile masks what differs between two otherwise identical runs: ids,
// commits, timestamps and durations.
var volatile = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{40}|\d{4}-\d\d-\d\dT[0-9:.]+Z|"(durationMs|duration|thoughtDensity|timestamp|createdAt|updatedAt|lastAccessedAt|elapsedMs)":\s*\d+(\.\d+)?`)

// shapeID is the n-th session id of TestBothArgumentShapes.
func shapeID(n int) string { return fmt.Sprintf("5a0e5000-0000-4000-8000-%012d", n) }

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
		{"mental_models", map[string]any{"subOperation": "list_models", "tag": "debugging"}},
		{"mental_models", map[string]any{"subOperation": "get_model", "modelId": "five-whys"}},
		{"mental_models", map[string]any{"subOperation": "list_models", "model": "five-whys"}},
		{"load_context", map[string]any{"sessionId": shapeID(1)}},
		{"bind_root", map[string]any{"rootUri": "file:///work/shapes"}},
		{"session", map[string]any{"subOperation": "list", "limit": 3}},
		{"session", map[string]any{"subOperation": "search", "query": "fork"}},
		{"session", map[string]any{"subOperation": "get", "sessionId": shapeID(1)}},
		{"session", map[string]any{"subOperation": "resume", "sessionId": shapeID(1)[:8]}},
		{"session", map[string]any{"subOperation": "export", "format": "markdown"}},
		{"session", map[string]any{"subOperation": "export", "sessionId": shapeID(1), "format": "cipher"}},
		{"session", map[string]any{"subOperation": "analyze"}},
		{"session", map[string]any{"subOperation": "extract_learnings", "types": []string{"pattern"}}},
		{"session", map[string]any{"subOperation": "discovery", "action": "list"}},
		{"session", map[string]any{"subOperation": "update", "title": "shapes renamed", "tags": []string{"t", "u"}}},
		{"start_new", map[string]any{"sessionTitle": "to delete"}},
		{"session", map[string]any{"subOperation": "delete", "sessionId": shapeID(2)}},
		{"session", map[string]any{"subOperation": "list_deleted"}},
		{"session", map[string]any{"subOperation": "restore", "sessionId": shapeID(2)}},
		{"session", map[string]any{"subOperation": "list", "sortBy": "title", "sortOrder": "asc"}},
		{"knowledge", map[string]any{"subOperation": "list"}},
		{"knowledge", map[string]any{"subOperation": "create", "title": "P", "description": "d", "content": "c", "tags": []string{"k"}}},
		{"knowledge", map[string]any{"subOperation": "update", "id": "p", "content": "c2"}},
		{"knowledge", map[string]any{"subOperation": "get", "id": "p"}},
		{"knowledge", map[string]any{"subOperation": "list", "tags": []string{"k"}, "limit": 5}},
		{"knowledge", map[string]any{"subOperation": "list_tags"}},
		{"knowledge", map[string]any{"subOperation": "write_note", "title": "Scratch", "content": "n"}},
		{"knowledge", map[string]any{"subOperation": "read_note", "id": "scratch"}},
		{"knowledge", map[string]any{"subOperation": "list_notes"}},
		{"knowledge", map[string]any{"subOperation": "delete_note", "id": "scratch"}},
		{"knowledge", map[string]any{"subOperation": "delete", "id": "p"}},
		{"list_roots", nil},
		{"thought", map[string]any{"thought": "bad", "nextThoughtNeeded": true, "thoughtNumber": 0}},
	}
	run := func(flat bool) []string {
		e := newEnv(t, gateway.Options{})
		// The same session ids in both runs, so that steps can name them.
		n := 0
		e.l = ledger.New(e.store, ledger.Options{NewID: func() string { n++; return shapeID(n) }})
		e.g = gateway.New(e.l, gateway.Options{Knowledge: ledger.NewKnowledge(e.store.Store, ledger.KnowledgeOptions{})})
		c := e.connect(t, clientOpts{roots: []*mcp.Root{{URI: "file:///work", Name: "work"}}})
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
