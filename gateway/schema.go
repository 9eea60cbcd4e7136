package gateway

// Tool schemas and the "args:" lines of the gateway description are made
// from the parameter structs, so that what a tool announces is what its
// decoder takes. jsonschema.For reads the json tags (a field without
// omitempty is required) and the jsonschema tag (the description); the
// schema tag adds what For has no tag for, as ";"-separated items:
//
//	enum=a|b|c     the allowed values
//	minimum=N      for integers
//	maxLength=N    for strings
//	pattern=RE     for strings
//	note=text      said in the "args:" line after the field, e.g. "1-100, 20"
//	alias          another name of a field; in the schema, not in "args:"
//	ignored        accepted and unused by this sub-operation; not in "args:"

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// fieldTags are a field's schema tag, parsed.
type fieldTags struct {
	enum      []string
	minimum   *float64
	maxLength *int
	pattern   string
	note      string
	hidden    bool // alias or ignored
}

func parseSchemaTag(tag string) fieldTags {
	var ft fieldTags
	for item := range strings.SplitSeq(tag, ";") {
		key, value, _ := strings.Cut(strings.TrimSpace(item), "=")
		switch key {
		case "":
		case "enum":
			ft.enum = strings.Split(value, "|")
		case "minimum":
			f, err := strconv.ParseFloat(value, 64)
			if err != nil {
				panic(fmt.Sprintf("schema tag %q: %v", tag, err))
			}
			ft.minimum = &f
		case "maxLength":
			n, err := strconv.Atoi(value)
			if err != nil {
				panic(fmt.Sprintf("schema tag %q: %v", tag, err))
			}
			ft.maxLength = &n
		case "pattern":
			ft.pattern = value
		case "note":
			ft.note = value
		case "alias", "ignored":
			ft.hidden = true
		default:
			panic(fmt.Sprintf("schema tag %q: unknown item %q", tag, key))
		}
	}
	return ft
}

// structFields lists t's JSON fields in declaration order with their
// schema tags, embedded structs promoted (as shapeOf reads them).
func structFields(t reflect.Type) []structField {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []structField
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			out = append(out, structFields(ft)...)
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, structField{name: name, typ: f.Type, tags: parseSchemaTag(f.Tag.Get("schema"))})
	}
	return out
}

type structField struct {
	name string
	typ  reflect.Type
	tags fieldTags
}

// schemaOf is the input schema of parameters of type t.
// schemaOptions give the schema of the types whose JSON form is not their
// Go kind's: a cell reference is a string or a position number.
var schemaOptions = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	cellRefType: {Types: []string{"string", "integer"}},
}}

func schemaOf(t reflect.Type) *jsonschema.Schema {
	s, err := jsonschema.ForType(t, schemaOptions)
	if err != nil {
		panic(fmt.Sprintf("schema of %s: %v", t, err)) // a programming error, caught by every test
	}
	refine(s, t)
	if s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{}
	}
	return s
}

// refine applies the schema tags of t's fields to s, and drops the "null"
// For allows beside a pointer's or a slice's type: the decoder treats null
// as absent, and a single type reads better to a model.
func refine(s *jsonschema.Schema, t reflect.Type) {
	singleType(s)
	for _, f := range structFields(t) {
		p := s.Properties[f.name]
		if p == nil {
			continue
		}
		singleType(p)
		if p.Items != nil {
			singleType(p.Items)
		}
		for _, v := range f.tags.enum {
			p.Enum = append(p.Enum, v)
		}
		p.Minimum, p.MaxLength, p.Pattern = cmpOr(f.tags.minimum, p.Minimum), cmpOr(f.tags.maxLength, p.MaxLength), cmpOrString(f.tags.pattern, p.Pattern)
		if p.Type == "object" && p.Properties != nil {
			refine(p, f.typ)
		}
	}
}

func cmpOr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func cmpOrString(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func singleType(s *jsonschema.Schema) {
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
}

// unionSchema is the schema of a tool that takes a sub-operation and its
// arguments flat: operation (and its alias subOperation) naming one of
// ops, and every argument any of them takes, described where it first
// appears. closed refuses other properties in the schema too.
func unionSchema(ops []subOp, closed bool) *jsonschema.Schema {
	names := make([]any, len(ops))
	for i, op := range ops {
		names[i] = op.name
	}
	u := &jsonschema.Schema{
		Type:     "object",
		Required: []string{"operation"},
		Properties: map[string]*jsonschema.Schema{
			"operation":    {Type: "string", Enum: names, Description: "The sub-operation."},
			"subOperation": {Type: "string", Enum: names, Description: "Alias of operation."},
		},
		PropertyOrder: []string{"operation", "subOperation"},
	}
	if closed {
		u.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	}
	for _, op := range ops {
		s := schemaOf(op.params)
		for _, name := range s.PropertyOrder {
			if _, ok := u.Properties[name]; ok {
				continue
			}
			u.Properties[name] = s.Properties[name]
			u.PropertyOrder = append(u.PropertyOrder, name)
		}
	}
	return u
}

// schemaText renders a schema as the tool's input schema.
func schemaText(s *jsonschema.Schema) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("encoding a schema: %v", err))
	}
	return string(b)
}

// argsLine is the "args:" text of parameters of type t: each field, "?"
// when optional, its allowed values, the fields of a nested object and
// its note; aliases and ignored fields are left out.
func argsLine(t reflect.Type) string {
	s := schemaOf(t)
	var parts []string
	for _, f := range structFields(t) {
		if f.tags.hidden {
			continue
		}
		part := f.name
		if !slices.Contains(s.Required, f.name) {
			part += "?"
		}
		if len(f.tags.enum) > 0 {
			part += " " + strings.Join(f.tags.enum, "|")
		}
		if ft := derefType(f.typ); ft.Kind() == reflect.Struct {
			part += " {" + argsLine(ft) + "}"
		}
		if f.tags.note != "" {
			part += " (" + f.tags.note + ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// subOpsLine is the "args:" text of an operation with sub-operations:
// "operation: a {x, y?} | b | …".
func subOpsLine(ops []subOp) string {
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = op.name
		if line := argsLine(op.params); line != "" {
			parts[i] += " {" + line + "}"
		}
	}
	return "operation: " + strings.Join(parts, " | ")
}
