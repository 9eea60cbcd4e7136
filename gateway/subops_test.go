package gateway_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/notebook"
)

// TestSubOperationErrorsAreUniform calls each operation with
// sub-operations (session, knowledge, mental_models, notebook) without one,
// with an unknown one and with an argument none of them takes: each
// refusal has the same code and the same details, naming the field and
// what was expected.
func TestSubOperationErrorsAreUniform(t *testing.T) {
	e := &env{store: newStore(t), log: &syncBuffer{}, events: &eventSink{}}
	e.l = ledger.New(e.store, ledger.Options{})
	work := t.TempDir()
	e.g = gateway.New(e.l, gateway.Options{
		Knowledge: ledger.NewKnowledge(e.store.Store, ledger.KnowledgeOptions{}),
		Notebooks: func(project string, store ledger.NotebookStore) *notebook.Service {
			return notebook.NewService(store, notebook.Options{WorkDir: filepath.Join(work, project)})
		}})
	t.Cleanup(func() { e.g.Close() })
	c := e.connect(t, clientOpts{})
	c.ok("start_new", map[string]any{"sessionTitle": "uniform"})
	c.ok("cipher", nil)

	families := map[string]struct {
		names []string
		valid string // a sub-operation that takes no required argument
	}{
		"session":       {[]string{"list", "get", "search", "resume", "export", "analyze", "extract_learnings", "discovery", "update", "delete", "restore", "list_deleted"}, "list"},
		"knowledge":     {[]string{"create", "update", "get", "list", "list_tags", "delete", "write_note", "read_note", "list_notes", "delete_note"}, "list"},
		"mental_models": {[]string{"get_model", "list_models", "list_tags"}, "list_tags"},
		"notebook":      {[]string{"create", "list", "load", "list_cells", "get_cell", "add_cell", "update_cell", "delete_cell", "run_cell", "run_all", "install_deps", "export", "import", "delete"}, "list"},
	}
	details := func(body map[string]any) map[string]any {
		d, _ := body["details"].(map[string]any)
		return d
	}
	strs := func(v any) []string {
		var out []string
		for _, x := range list(v) {
			s, _ := x.(string)
			out = append(out, s)
		}
		return out
	}
	for op, f := range families {
		t.Run(op, func(t *testing.T) {
			joined := strings.Join(f.names, ", ")

			body := c.fail(op, map[string]any{}, ledger.CodeInvalidPayload)
			d := details(body)
			if d["field"] != "operation" || d["problem"] != "missing" || !slices.Equal(strs(d["expected"]), f.names) ||
				body["message"] != "operation: is required: one of "+joined {
				t.Errorf("no sub-operation: %v", body)
			}

			body = c.fail(op, map[string]any{"subOperation": "teleport"}, ledger.CodeInvalidPayload)
			d = details(body)
			if d["field"] != "operation" || d["problem"] != "unknown" || d["got"] != "teleport" || !slices.Equal(strs(d["expected"]), f.names) ||
				body["message"] != `operation: must be one of `+joined+`, got "teleport"` {
				t.Errorf("unknown sub-operation: %v", body)
			}

			body = c.fail(op, map[string]any{"operation": 7}, ledger.CodeInvalidPayload)
			if d = details(body); d["field"] != "operation" || d["expected"] != "string" {
				t.Errorf("sub-operation not a string: %v", body)
			}

			body = c.fail(op, map[string]any{"operation": f.valid, "wibble": 1}, ledger.CodeInvalidPayload)
			d = details(body)
			expected := strs(d["expected"])
			if d["field"] != "wibble" || d["problem"] != "unknown" || !slices.Contains(expected, "subOperation") ||
				!slices.Contains(expected, "operation") || !strings.HasPrefix(body["message"].(string), "wibble: unknown argument; expected one of ") {
				t.Errorf("unknown argument: %v", body)
			}
		})
	}
}
