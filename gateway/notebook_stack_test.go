package gateway_test

import (
	"regexp"
	"testing"
	"time"
)

// TestNotebookStackOverflow: a cell that recurses without end fails with
// JavaScript's RangeError text, the depth limit and where it happened, as
// an RLM block's does; the message is never empty of its cause.
func TestNotebookStackOverflow(t *testing.T) {
	e, _ := notebookEnv(t, time.Minute)
	c := e.connect(t, clientOpts{})
	c.ready("recursion")
	c.ok("notebook", map[string]any{"operation": "create", "name": "Deep", "language": "javascript"})
	c.ok("notebook", map[string]any{"operation": "add_cell", "notebookId": "deep", "type": "code", "filename": "deep.js",
		"content": "function down(n) { return down(n + 1) + 1; }\ndown(0);\n"})
	r := c.ok("notebook", map[string]any{"operation": "run_cell", "notebookId": "deep", "cellId": "deep.js"})
	msg, _ := r["error"].(string)
	want := regexp.MustCompile(`^RangeError: Maximum call stack size exceeded \(deeper than \d+ frames\) at cells/deep\.js:1:\d+$`)
	if r["status"] != "failed" || !want.MatchString(msg) {
		t.Errorf("run_cell of a runaway recursion: status %v, error %q; want one matching %s", r["status"], msg, want)
	}
}
