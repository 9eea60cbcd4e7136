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
// schema and the "args:" summary), its handler, which decodes them, and
// whether it changes the ledger (a read-only token may not run it).
type subOp struct {
	name    string
	params  reflect.Type
	handler handlerFunc
	writes  bool
}

// sub makes the row of a sub-operation whose arguments are P, decoded
// strictly: an argument only another sub-operation takes is reported as
// unknown.
func sub[P any](name string, fn func(ctx context.Context, c *call, p *P) (any, error)) subOp {
	return subOp{name: name, params: reflect.TypeFor[P](), handler: typed(fn)}
}

// writing marks a sub-operation that changes the ledger (or, for session
// export, the server's disk).
func (s subOp) writing() subOp {
	s.writes = true
	return s
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

// route is what one call runs: its operation and, for an operation with
// sub-operations, the sub-operation its arguments name. It is resolved
// once, before the stage and scope checks, and those checks and the
// dispatch all read it, so that what is checked is what runs.
type route struct {
	op  *operation
	sub *subOp
	// args are the arguments the handler decodes: for a sub-operation,
	// without the fields that named it.
	args json.RawMessage
}

// name is the route as the scope check and errors spell it:
// "session/delete", or the operation alone.
func (r route) name() string {
	if r.sub == nil {
		return r.op.name
	}
	return r.op.name + "/" + r.sub.name
}

// writes reports whether the route changes the ledger.
func (r route) writes() bool {
	if r.sub != nil {
		return r.sub.writes
	}
	return r.op.writes
}

// resolveRoute picks the sub-operation named by "operation" (or its alias
// "subOperation") inside args; an operation without sub-operations routes
// to itself with args unchanged.
//
// The refusals are the same for every table: INVALID_PAYLOAD on the field
// "operation", with details {field, problem: missing|unknown, expected:
// [the names], got} — so a client learns the valid names from any of them.
// operation and subOperation given with different values are refused
// naming both fields (problem: conflict).
func resolveRoute(op *operation, args json.RawMessage) (route, error) {
	if op.subOps == nil {
		return route{op: op, args: args}, nil
	}
	ops := op.subOps
	var fields map[string]json.RawMessage
	if err := decodeLoose(args, &fields); err != nil {
		return route{}, err
	}
	var name, alt string
	for _, f := range []struct {
		name string
		dst  *string
	}{{"operation", &name}, {"subOperation", &alt}} {
		raw, ok := fields[f.name]
		delete(fields, f.name)
		if !ok || string(raw) == "null" {
			continue
		}
		if json.Unmarshal(raw, f.dst) != nil {
			e := ledger.InvalidField(f.name, "expected string, got %s", jsonKind(raw))
			e.Details["expected"] = "string"
			return route{}, e
		}
	}
	if name != "" && alt != "" && name != alt {
		e := ledger.InvalidField("subOperation", "is another name for operation and disagrees with it (%q vs %q); give one of operation and subOperation", alt, name)
		e.Details["problem"] = "conflict"
		e.Details["fields"] = routingFields
		return route{}, e
	}
	if name == "" {
		name = alt
	}
	names := subOpNames(ops)
	i := slices.IndexFunc(ops, func(o subOp) bool { return o.name == name })
	switch {
	case name == "":
		e := ledger.InvalidField("operation", "is required: one of %s", strings.Join(names, ", "))
		e.Details["problem"] = "missing"
		e.Details["expected"] = names
		return route{}, e
	case i < 0:
		e := fieldError("operation", "must be one of %s, got %q", strings.Join(names, ", "), name)
		e.Details["problem"] = "unknown"
		e.Details["expected"] = names
		e.Details["got"] = name
		return route{}, e
	}
	rest, err := json.Marshal(fields)
	if err != nil {
		return route{}, ledger.InvalidField("args", "%v", err)
	}
	return route{op: op, sub: &ops[i], args: rest}, nil
}

// runSubOp runs the sub-operation the call was routed to (see
// resolveRoute) on the other arguments.
func runSubOp(ctx context.Context, c *call) (any, error) {
	// The same call, not a copy: a project the sub-operation opens is held
	// in c.holds and released when the call ends.
	reply, err := c.route.sub.handler(ctx, c)
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
