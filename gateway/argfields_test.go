package gateway

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestUnknownFieldsFromTheStruct: the accepted names come from the struct's
// json tags (embedded structs promoted, "-" and unexported fields left out,
// case folded as encoding/json does), nested structs are checked under
// their path, and the shape of a type is computed once.
func TestUnknownFieldsFromTheStruct(t *testing.T) {
	type inner struct {
		Start int `json:"start"`
		End   int `json:"end"`
	}
	type embedded struct {
		Title string `json:"title,omitempty"`
	}
	type params struct {
		embedded
		Name    string `json:"name"`
		Skipped string `json:"-"`
		hidden  string
		Plain   bool
		Range   *inner `json:"range"`
	}
	_ = params{}.hidden
	s := shapeOf(reflect.TypeFor[*params]())
	if want := []string{"Plain", "name", "range", "title"}; !slices.Equal(s.names, want) {
		t.Errorf("names = %v, want %v", s.names, want)
	}
	if shapeOf(reflect.TypeFor[params]()) != s {
		t.Error("the shape of a type is computed again instead of reused")
	}
	for _, tc := range []struct {
		raw, field string
		expected   []string
	}{
		{`{"name":"a","title":"t","Plain":true,"range":{"start":1,"end":2}}`, "", nil},
		{`{"NAME":"a","plain":true}`, "", nil}, // encoding/json folds case
		{`{"name":"a","Skipped":"x"}`, "Skipped", []string{"Plain", "name", "range", "title"}},
		{`{"hidden":"x"}`, "hidden", []string{"Plain", "name", "range", "title"}},
		{`{"range":{"start":1,"stop":2}}`, "range.stop", []string{"end", "start"}},
		{`{"":1}`, `""`, []string{"Plain", "name", "range", "title"}},
		{`{"name":`, "", nil}, // a syntax error is the decoder's to report
	} {
		err := s.unknownField([]byte(tc.raw), "")
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.raw, err)
			}
			continue
		}
		var e *ledger.Error
		if !errors.As(err, &e) || e.Code != ledger.CodeInvalidPayload {
			t.Fatalf("%s: error %v, want INVALID_PAYLOAD", tc.raw, err)
		}
		if e.Details["field"] != tc.field || e.Details["problem"] != "unknown" || !slices.Equal(e.Details["expected"].([]string), tc.expected) {
			t.Errorf("%s: details %v, want field %s expecting %v", tc.raw, e.Details, tc.field, tc.expected)
		}
	}
	var e *ledger.Error
	if err := decodeArgs([]byte(`{"x":1}`), new(noParams)); !errors.As(err, &e) || e.Message != "x: unknown argument; this call takes no arguments" {
		t.Errorf("no-argument call: %v", err)
	}
	if err := decodeArgs([]byte(`{"range":{"start":1,"end":2,"x":3}}`), new(readThoughtsParams)); !errors.As(err, &e) || e.Details["field"] != "range.x" {
		t.Errorf("nested unknown field: %v", err)
	}
}
