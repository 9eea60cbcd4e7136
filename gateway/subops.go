package gateway

// Operations with sub-operations (session, knowledge, mental_models,
// notebook) share one table type and one dispatcher, so that picking the
// sub-operation, refusing an unknown one and decoding its arguments give
// the same errors whichever operation it is.

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// subOp is one sub-operation: its name, the type of its arguments (for the
// schema and the "args:" summary) and its handler, which decodes them.
type subOp struct {
	name    string
	params  reflect.Type
	handler handlerFunc
}

// sub makes the row of a sub-operation whose arguments are P, decoded
// strictly: an argument only another sub-operation takes is reported as
// unknown.
func sub[P any](name string, fn func(ctx context.Context, c *call, p *P) (any, error)) subOp {
	return subOp{name: name, params: reflect.TypeFor[P](), handler: typed(fn)}
}

// subOpNames lists the names of ops in table order, the order error
// messages and descriptions name them in.
func subOpNames(ops []subOp) []string {
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = op.name
	}
	return names
}

// runSubOp picks the sub-operation named by "operation" (or its alias
// "subOperation") inside args and runs it on the other arguments.
//
// The refusals are the same for every table: INVALID_PAYLOAD on the field
// "operation", with details {field, problem: missing|unknown, expected:
// [the names], got} — so a client learns the valid names from any of them.
func runSubOp(ctx context.Context, c *call, ops []subOp) (any, error) {
	var fields map[string]json.RawMessage
	if err := decodeLoose(c.args, &fields); err != nil {
		return nil, err
	}
	var op, alt string
	for _, f := range []struct {
		name string
		dst  *string
	}{{"operation", &op}, {"subOperation", &alt}} {
		raw, ok := fields[f.name]
		delete(fields, f.name)
		if !ok || string(raw) == "null" {
			continue
		}
		if json.Unmarshal(raw, f.dst) != nil {
			e := ledger.InvalidField(f.name, "expected string, got %s", jsonKind(raw))
			e.Details["expected"] = "string"
			return nil, e
		}
	}
	if err := alias(&op, alt, "operation", "subOperation"); err != nil {
		return nil, err
	}
	names := subOpNames(ops)
	i := slices.IndexFunc(ops, func(o subOp) bool { return o.name == op })
	switch {
	case op == "":
		e := ledger.InvalidField("operation", "is required: one of %s", strings.Join(names, ", "))
		e.Details["problem"] = "missing"
		e.Details["expected"] = names
		return nil, e
	case i < 0:
		e := fieldError("operation", "must be one of %s, got %q", strings.Join(names, ", "), op)
		e.Details["problem"] = "unknown"
		e.Details["expected"] = names
		e.Details["got"] = op
		return nil, e
	}
	rest, err := json.Marshal(fields)
	if err != nil {
		return nil, ledger.InvalidField("args", "%v", err)
	}
	// The same call, not a copy: a project the sub-operation opens is held
	// in c.holds and released when the call ends.
	c.args = rest
	reply, err := ops[i].handler(ctx, c)
	return reply, withRouting(err)
}

// routingFields are the arguments that pick the sub-operation; every
// sub-operation accepts them.
var routingFields = []string{"operation", "subOperation"}

// withRouting adds the routing fields to the expected ones of an unknown
// argument error, so that it lists every name the call could have used.
func withRouting(err error) error {
	e, ok := err.(*ledger.Error)
	if !ok || e.Code != ledger.CodeInvalidPayload || e.Details["problem"] != "unknown" {
		return err
	}
	field, _ := e.Details["field"].(string)
	known, _ := e.Details["expected"].([]string)
	if field == "" {
		return err
	}
	return unknownFieldError(field, append(slices.Clone(known), routingFields...))
}

// decodeLoose decodes an arguments object without checking its fields
// (absent or null is {}); anything but an object is the error decodeArgs
// gives.
func decodeLoose(raw json.RawMessage, dst *map[string]json.RawMessage) error {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		*dst = map[string]json.RawMessage{}
		return nil
	}
	if raw[0] != '{' {
		e := ledger.InvalidField("args", "expected object, got %s", jsonKind(raw))
		e.Details["expected"] = "object"
		return e
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return ledger.InvalidField("args", "invalid JSON: %v", err)
	}
	return nil
}
