package gateway

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGeneratedSchemasMatchTheHandKeptOnes compares the tool schemas made
// from the parameter structs with the ones written by hand before them
// (testdata/schemas/hand-kept.json, as they were at the switch), as JSON
// values. The generator's own additions are named here and nowhere else:
// a description of the sub-operation, and an enum on subOperation (which
// the decoder enforced already).
func TestGeneratedSchemasMatchTheHandKeptOnes(t *testing.T) {
	b, err := os.ReadFile("testdata/schemas/hand-kept.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]map[string]any
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	ops := newOperations()
	got := map[string]map[string]any{}
	add := func(name string, schema []byte) {
		var v map[string]any
		if err := json.Unmarshal(schema, &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got[name] = v
	}
	for _, op := range ops.list {
		if op.tool != "" {
			add(op.tool, []byte(op.schema))
		}
	}
	add(gatewayToolName, ops.gatewayTool().InputSchema.(json.RawMessage))
	for _, name := range []string{"thoughtbox_mental_models", "thoughtbox_notebook"} {
		props := got[name]["properties"].(map[string]any)
		if d := props["operation"].(map[string]any); d["description"] == "The sub-operation." {
			delete(d, "description")
		}
		wantSub := want[name]["properties"].(map[string]any)["subOperation"].(map[string]any)
		if _, ok := wantSub["enum"]; !ok {
			if e := props["subOperation"].(map[string]any); reflect.DeepEqual(e["enum"], props["operation"].(map[string]any)["enum"]) {
				delete(e, "enum")
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("generated schemas differ from the hand-kept ones (-hand-kept +generated):\n%s", diff)
	}
}

// TestArgsLines pins how the "args:" line is made from a struct: required
// and optional fields, allowed values, nested objects, notes, and aliases
// and ignored fields left out.
func TestArgsLines(t *testing.T) {
	for _, tc := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[noParams](), ""},
		{reflect.TypeFor[readThoughtsParams](), "sessionId? (default: the active session), thoughtNumber?, last?, range? {start, end}, branchId?, limit? (1-100: page the thoughts selected, with offset), offset?"},
		{reflect.TypeFor[sessionListParams](), "tags?, search?, task?, project?, limit? (1-100, 20), offset?, sortBy? createdAt|updatedAt|title, sortOrder? asc|desc"},
		{reflect.TypeFor[getModelParams](), "modelId"},
		{reflect.TypeFor[discoveryParams](), "action? list|hide|show, tools?"},
	} {
		if got := argsLine(tc.typ); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.typ, got, tc.want)
		}
	}
	if got, want := subOpsLine(mentalModelOps), "operation: get_model {modelId} | list_models {tag?} | list_tags"; got != want {
		t.Errorf("mental_models: %q, want %q", got, want)
	}
}
