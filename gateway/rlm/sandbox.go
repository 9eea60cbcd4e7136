package rlm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/thoughtbox/thoughtbox/sandbox"
)

// identifier is a JavaScript variable name, as FINAL_VAR takes one.
var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// replEnv is the REPL of one run: a sandbox session (a child process)
// whose global scope lives as long as the run, so that variables persist
// from block to block. The child is started at the first block, so that a
// run whose model never writes code starts none.
//
// Its globals are what ECMAScript itself provides plus context, print
// (console.log writes there too), llm_query, FINAL and FINAL_VAR. goja
// brings no require, filesystem, network, timers or process object, and
// none are added.
type replEnv struct {
	cfg  sandbox.Config
	opts Options
	sess *sandbox.Session

	// Set by FINAL and FINAL_VAR during a block; the caller clears them
	// before each block.
	final    *string
	finalVar string
}

func newREPL(contextJSON string, opts Options, subQuery func(context.Context, string) (string, error)) (*replEnv, error) {
	if !json.Valid([]byte(contextJSON)) {
		return nil, errors.New("context: expected a JSON document")
	}
	x := &replEnv{opts: opts}
	x.cfg = sandbox.Config{
		Limits:  opts.Sandbox,
		Globals: map[string]json.RawMessage{"context": json.RawMessage(contextJSON)},
		HostFuncs: map[string]sandbox.HostFunc{
			"llm_query": func(ctx context.Context, arg sandbox.HostArg) (any, error) {
				if arg.Nullish {
					return nil, errors.New("llm_query(prompt): prompt is required")
				}
				answer, err := subQuery(ctx, arg.Text)
				if err != nil {
					return nil, fmt.Errorf("llm_query failed: %w", err)
				}
				return answer, nil
			},
			"FINAL": func(_ context.Context, arg sandbox.HostArg) (any, error) {
				x.final = &arg.Text
				return nil, nil
			},
			"FINAL_VAR": func(_ context.Context, arg sandbox.HostArg) (any, error) {
				x.finalVar = arg.Text
				return nil, nil
			},
		},
	}
	return x, nil
}

// blockResult is what running one block produced.
type blockResult struct {
	output string
	// value is the block's completion value rendered as print would, if
	// it has one.
	value    string
	hasValue bool
	// err is the exception the block threw, or why it was stopped.
	err error
	// lost is set when the sandbox's process ended (a limit, a crash):
	// every variable of the run is gone, and the next block starts
	// afresh.
	lost bool
}

// run executes one block with the time limit, stopping it if ctx is done.
func (x *replEnv) run(ctx context.Context, code string, echo bool, maxValue int) blockResult {
	if x.sess == nil {
		s, err := sandbox.Start(ctx, x.cfg)
		if err != nil {
			return blockResult{err: err, lost: true}
		}
		x.sess = s
	}
	res, err := x.sess.Run(ctx, code, sandbox.RunOptions{
		Timeout: x.opts.BlockTimeout, MaxOutput: x.opts.MaxOutput, MaxValue: maxValue, Echo: echo,
	})
	if err != nil {
		x.close()
		return blockResult{err: fmt.Errorf("%w; the REPL was restarted and every variable is gone", err), lost: true}
	}
	r := blockResult{output: res.Output, value: res.Value, hasValue: res.HasValue}
	if res.Error != "" {
		r.err = errors.New(res.Error)
	}
	return r
}

// lookup reads a variable by name, for FINAL_VAR: global let and const
// bindings are not properties of the global object, so the name is
// evaluated, once it is known to be a bare identifier.
func (x *replEnv) lookup(ctx context.Context, name string) (string, error) {
	name = strings.Trim(strings.TrimSpace(name), `"'`+"`")
	if !identifier.MatchString(name) {
		return "", fmt.Errorf("FINAL_VAR(%s): expected a variable name", name)
	}
	r := x.run(ctx, "typeof "+name+` === "undefined" ? undefined : `+name, false, x.opts.MaxText)
	switch {
	case r.err != nil:
		return "", fmt.Errorf("FINAL_VAR(%s): %v", name, r.err)
	case !r.hasValue:
		return "", fmt.Errorf("FINAL_VAR(%s): no variable %s is defined", name, name)
	}
	return r.value, nil
}

// close ends the sandbox's process, if one is running.
func (x *replEnv) close() {
	if x.sess != nil {
		x.sess.Close()
		x.sess = nil
	}
}
