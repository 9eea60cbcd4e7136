package gateway

// Unknown arguments are found from the parameter struct's own fields, not
// from encoding/json's error text: the names a type accepts are read once
// by reflection over its json tags and kept per type.

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// argShape is what a parameter struct accepts: its JSON names, sorted, and
// for those that hold a struct, that struct's shape (so that a misspelt
// key inside range {start, end} is named as range.x).
type argShape struct {
	names  []string
	nested map[string]*argShape
}

var argShapes sync.Map // reflect.Type → *argShape

// shapeOf is the shape of t (a struct or a pointer to one), or nil for a
// type whose keys are not fixed (a map, an interface).
func shapeOf(t reflect.Type) *argShape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	if s, ok := argShapes.Load(t); ok {
		return s.(*argShape)
	}
	s := &argShape{nested: map[string]*argShape{}}
	collectFields(t, s)
	slices.Sort(s.names)
	s.names = slices.Compact(s.names)
	v, _ := argShapes.LoadOrStore(t, s)
	return v.(*argShape)
}

// collectFields adds t's JSON fields to s as encoding/json sees them: an
// untagged embedded struct's fields are promoted, "-" and unexported
// fields are skipped, an untagged field is named as declared.
func collectFields(t reflect.Type, s *argShape) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			collectFields(ft, s)
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s.names = append(s.names, name)
		if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[json.RawMessage]() {
			if n := shapeOf(ft); n != nil {
				s.nested[name] = n
			}
		}
	}
}

// field is the declared name a JSON key selects, matched as encoding/json
// matches it: exactly, else without regard to case.
func (s *argShape) field(key string) (string, bool) {
	if _, ok := slices.BinarySearch(s.names, key); ok {
		return key, true
	}
	for _, n := range s.names {
		if strings.EqualFold(n, key) {
			return n, true
		}
	}
	return "", false
}

// unknownField checks the keys of the JSON object raw against s and
// reports the first that no field takes, with its path (range.x) and the
// names expected there. raw that is not an object is left to the decoder.
func (s *argShape) unknownField(raw []byte, path string) error {
	raw = bytes.Trim(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil // the decoder reports the syntax error
		}
		key, _ := t.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil
		}
		name, ok := s.field(key)
		if !ok {
			if key == "" {
				key = `""`
			}
			return unknownFieldError(path+key, s.names)
		}
		if n := s.nested[name]; n != nil {
			if err := n.unknownField(value, path+name+"."); err != nil {
				return err
			}
		}
	}
	return nil
}
