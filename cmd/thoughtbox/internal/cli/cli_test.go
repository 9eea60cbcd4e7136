package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// run calls Main in-process with buffers for its output.
func run(t *testing.T, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := Env{
		Stdin:  strings.NewReader("from stdin\n"),
		Stdout: &out,
		Stderr: &errOut,
		LookupEnv: func(k string) (string, bool) {
			v, ok := vars[k]
			return v, ok
		},
		NewID: func() string { return "c0ffee00-0000-4000-8000-000000000001" },
	}
	code = Main(context.Background(), args, env)
	return code, out.String(), errOut.String()
}

func TestMainInProcess(t *testing.T) {
	vars := map[string]string{"THOUGHTBOX_DATA_DIR": t.TempDir(), "HOME": "/nonexistent"}
	steps := []struct {
		args       []string
		code       int
		stdout     string // substring
		stderrPart string
	}{
		{args: []string{"start", "In process"}, stdout: "c0ffee00-0000-4000-8000-000000000001\n"},
		{args: []string{"add", "c0f", "-"}, stdout: "thought 1 recorded in c0ffee00-0000-4000-8000-000000000001\n"},
		{args: []string{"add", "c0f", "second", "--branch", "b", "--from", "1"}, stdout: "(new branch b from 1)"},
		{args: []string{"show", "c0f"}, stdout: "1  from stdin\n   └─ branch b (from 1, 1 thought)\n      2  second\n"},
		{args: []string{"add", "c0f", "dup", "--number", "1"}, code: ExitFailure, stderrPart: "thoughtbox: error: thoughtNumber: 1 is already used"},
		{args: []string{"--help"}, code: ExitOK, stdout: "Usage: thoughtbox <command>"},
		{args: []string{"show"}, code: ExitUsage, stderrPart: "hint: run 'thoughtbox show --help' for usage"},
	}
	for _, s := range steps {
		code, stdout, stderr := run(t, vars, s.args...)
		if code != s.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", s.args, code, s.code, stderr)
		}
		if !strings.Contains(stdout, s.stdout) {
			t.Errorf("%q: stdout %q, want it to contain %q", s.args, stdout, s.stdout)
		}
		if s.stderrPart == "" && stderr != "" && code == ExitOK {
			t.Errorf("%q: unexpected stderr %q", s.args, stderr)
		}
		if !strings.Contains(stderr, s.stderrPart) {
			t.Errorf("%q: stderr %q, want it to contain %q", s.args, stderr, s.stderrPart)
		}
	}
}
