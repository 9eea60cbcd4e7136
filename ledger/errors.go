package ledger

import (
	"errors"
	"fmt"
	"strings"
)

// Code classifies a domain error for clients (seed 002, ErrorPayload). The
// gateway sends it as the "code" of an isError tool result, and the CLI maps
// it to an exit status, so its values are part of the protocol.
type Code string

// The error codes of seed 002.
const (
	CodeSessionNotFound        Code = "SESSION_NOT_FOUND"
	CodeThoughtNotFound        Code = "THOUGHT_NOT_FOUND"
	CodeInvalidOperation       Code = "INVALID_OPERATION"
	CodeStageRequirementNotMet Code = "STAGE_REQUIREMENT_NOT_MET"
	CodeInternal               Code = "INTERNAL_ERROR"
	CodeInvalidPayload         Code = "INVALID_PAYLOAD"
	CodeStorage                Code = "STORAGE_ERROR"
	CodeSamplingNotSupported   Code = "SAMPLING_NOT_SUPPORTED"
)

// ErrThoughtNotFound is returned when an input names a thought (to branch
// from or to revise) that does not exist where the rules allow it.
var ErrThoughtNotFound = errors.New("thought not found")

// ErrNumberTaken is returned when an explicit thoughtNumber is already used
// on the chain it is written to; nothing is stored in that case.
var ErrNumberTaken = errors.New("thought number already used")

// Error is a domain failure that a client can act on: a code, a message that
// names what was wrong and what was expected, and structured details. Its
// JSON form is the ErrorPayload of seed 002.
type Error struct {
	Code    Code           `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	// Err is the cause, kept for errors.Is and errors.As.
	Err error `json:"-"`
}

func (e *Error) Error() string {
	if e.Message == "" && e.Err != nil {
		return e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an Error with the formatted message. As with fmt.Errorf, a
// %w verb makes its operand the Error's cause.
func Errorf(code Code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), Err: errors.Unwrap(err)}
}

// InvalidField returns an INVALID_PAYLOAD error about one input field. The
// message starts with the field's name, as in
// `branchId: must match ^[a-z0-9-]+$, got "Redis"`.
func InvalidField(field, format string, args ...any) *Error {
	// The field name goes in as an operand, never into the format: names
	// can come from clients (an unknown argument), and may contain '%'.
	e := Errorf(CodeInvalidPayload, format, args...)
	e.Message = field + ": " + e.Message
	e.Details = map[string]any{"field": field}
	return e
}

// with adds one detail and returns e, so constructors read as one expression.
func (e *Error) with(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// AmbiguousIDError is the cause of the error Resolve returns when a prefix
// matches more than one session id.
type AmbiguousIDError struct {
	Prefix     string
	Candidates []string // sorted
}

func (e *AmbiguousIDError) Error() string {
	return fmt.Sprintf("session id prefix %q is ambiguous; candidates: %s",
		e.Prefix, strings.Join(e.Candidates, ", "))
}

// AsError converts any error returned by this package, or passed through it,
// into an Error, so that a boundary (the gateway, the CLI) has one shape to
// report. Errors of unknown origin become INTERNAL_ERROR.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	code := CodeInternal
	switch {
	case errors.Is(err, ErrSessionNotFound):
		code = CodeSessionNotFound
	case errors.Is(err, ErrThoughtNotFound):
		code = CodeThoughtNotFound
	case errors.Is(err, ErrNumberTaken):
		code = CodeInvalidPayload
	}
	return &Error{Code: code, Message: err.Error(), Err: err}
}

// CodeOf returns the code AsError would report for err.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	return AsError(err).Code
}

func sessionNotFound(id string) *Error {
	return Errorf(CodeSessionNotFound, "session %q: %w", id, ErrSessionNotFound).with("sessionId", id)
}

// storageError reports a store failure, keeping store sentinels reachable
// through errors.Is.
func storageError(op string, err error) *Error {
	return Errorf(CodeStorage, "%s: %w", op, err)
}
