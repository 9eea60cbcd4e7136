package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBranchIDsAgree: MCP's thought and the command line's add --branch
// accept and refuse the same branch ids, the ledger's one rule (pattern and
// a 100-character limit) deciding for both.
func TestBranchIDsAgree(t *testing.T) {
	bin := thoughtboxBinary(t)
	ids := []struct {
		id string
		ok bool
	}{
		{"alt", true},
		{"redis-approach-2", true},
		{strings.Repeat("a", 100), true},
		{strings.Repeat("b", 101), false},
		{strings.Repeat("c", 128), false},
		{"Net", false},
		{"a_b", false},
	}

	// Over MCP, against `thoughtbox serve` on stdio.
	s, _, _ := serveStdio(t, bin, agent("branch-test", "1"), "THOUGHTBOX_DATA_DIR="+t.TempDir())
	for _, step := range []struct {
		op   string
		args map[string]any
	}{
		{"start_new", map[string]any{"sessionTitle": "branch ids"}},
		{"cipher", map[string]any{}},
		{"thought", map[string]any{"thought": "one", "nextThoughtNeeded": true}},
	} {
		if r := callGateway(t, s, step.op, step.args); r.isError {
			t.Fatalf("%s: %s", step.op, r.text)
		}
	}
	for _, c := range ids {
		r := callGateway(t, s, "thought", map[string]any{"thought": "on " + c.id, "nextThoughtNeeded": true, "branchId": c.id, "branchFromThought": 1})
		if r.isError == c.ok {
			t.Errorf("MCP thought with branchId %q: error %v, want accepted %v: %s", c.id, r.isError, c.ok, r.text)
		}
		if !c.ok && !strings.Contains(r.text, "INVALID_PAYLOAD") {
			t.Errorf("MCP refusal of %q is not INVALID_PAYLOAD: %s", c.id, r.text)
		}
	}

	// On the command line, against its own data directory.
	data := t.TempDir()
	cli := func(args ...string) (int, string, string) {
		c := exec.Command(bin, args...)
		c.Env = append(os.Environ(), "THOUGHTBOX_DATA_DIR="+data)
		var out, errOut strings.Builder
		c.Stdout, c.Stderr = &out, &errOut
		err := c.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), out.String(), errOut.String()
		}
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return 0, out.String(), errOut.String()
	}
	code, out, errOut := cli("start", "branch ids")
	if code != 0 {
		t.Fatalf("start: exit %d: %s", code, errOut)
	}
	sid := strings.TrimSpace(out)
	if code, _, errOut := cli("add", sid, "one"); code != 0 {
		t.Fatalf("add: exit %d: %s", code, errOut)
	}
	for _, c := range ids {
		code, _, errOut := cli("add", sid, "on "+c.id, "--branch", c.id, "--from", "1")
		switch {
		case c.ok && code != 0:
			t.Errorf("add --branch %q: exit %d, want 0: %s", c.id, code, errOut)
		case !c.ok && code != 2:
			t.Errorf("add --branch %q: exit %d, want 2 (a usage error, refused before the ledger is opened): %s", c.id, code, errOut)
		case !c.ok && !strings.Contains(errOut, "--branch"):
			t.Errorf("add --branch %q: the refusal does not name --branch: %s", c.id, errOut)
		}
	}
}
