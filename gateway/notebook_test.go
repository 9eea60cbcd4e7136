package gateway_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/notebook"
)

// notebookEnv is a gateway over a ledger in a bare repository on disk,
// with notebooks whose runs stop after timeout. Tests not about the limit
// give a minute: under -race on two busy cores a TypeScript cell has
// taken more than five seconds.
func notebookEnv(t *testing.T, timeout time.Duration) (*env, string) {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "p.git")
	s, err := gitstore.Open(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e := &env{store: &recordingStore{Store: s}, log: &syncBuffer{}, events: &eventSink{}}
	e.l = ledger.New(e.store, ledger.Options{})
	work := t.TempDir()
	e.g = gateway.New(e.l, gateway.Options{ThoughtLog: e.log, Events: e.events,
		Notebooks: func(project string, store ledger.NotebookStore) *notebook.Service {
			return notebook.NewService(store, notebook.Options{WorkDir: filepath.Join(work, project), Timeout: timeout})
		}})
	t.Cleanup(func() { e.g.Close() })
	return e, repo
}

func gitOut(t *testing.T, repo string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestNotebookThroughMCP drives the notebook operation as an agent would:
// both templates, cells added, run, edited and deleted, export and import,
// with every change a commit authored by the client.
func TestNotebookThroughMCP(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs the git CLI")
	}
	e, repo := notebookEnv(t, time.Minute)
	c := e.connect(t, clientOpts{})
	c.ok("start_new", map[string]any{"sessionTitle": "Notebooks"})
	body := c.fail("notebook", map[string]any{"operation": "list"}, ledger.CodeStageRequirementNotMet)
	if num(body["details"].(map[string]any)["requiredStage"]) != 2 {
		t.Errorf("notebook before the cipher: %v", body)
	}
	c.ok("cipher", nil)
	c.awaitToolsChanged()
	if !strings.Contains(strings.Join(c.toolNames(), " "), "thoughtbox_notebook") {
		t.Errorf("tools at stage 2: %v, want thoughtbox_notebook among them", c.toolNames())
	}

	// Both templates.
	blank := c.ok("notebook", map[string]any{"operation": "create", "name": "Scratch work", "template": "blank", "language": "javascript"})
	nb := blank["notebook"].(map[string]any)
	if nb["id"] != "scratch-work" || nb["language"] != "javascript" || blank["ref"] != "refs/heads/notebooks/scratch-work" {
		t.Fatalf("create blank = %v", blank)
	}
	feyn := c.ok("notebook", map[string]any{"subOperation": "create", "name": "Binary search", "template": "sequential-feynman"})
	fnb := feyn["notebook"].(map[string]any)
	if fnb["language"] != "typescript" || len(list(fnb["cells"])) < 6 {
		t.Fatalf("create sequential-feynman = %v", feyn)
	}
	// The template's own code runs: the check cell imports the explain
	// cell and passes.
	run := c.ok("notebook", map[string]any{"operation": "run_cell", "notebookId": "binary-search", "cellId": "check.ts"})
	if run["status"] != "completed" || run["error"] != nil {
		t.Errorf("template check cell: %v", run)
	}
	if got := c.ok("notebook", map[string]any{"operation": "list"}); num(got["total"]) != 2 || len(list(got["notebooks"])) != 2 || got["hasMore"] != false {
		t.Errorf("list = %v", got)
	}
	if got := c.ok("notebook", map[string]any{"operation": "list", "limit": 1}); num(got["total"]) != 2 || len(list(got["notebooks"])) != 1 || got["hasMore"] != true {
		t.Errorf("list with limit 1 = %v", got)
	}
	c.fail("notebook", map[string]any{"operation": "list", "limit": 0}, ledger.CodeInvalidPayload)
	c.fail("notebook", map[string]any{"operation": "list", "offset": -1}, ledger.CodeInvalidPayload)

	// A cell of seed 000's shape {type, content} runs and prints.
	id := "scratch-work"
	added := c.ok("notebook", map[string]any{"operation": "add_cell", "notebookId": id, "type": "code", "content": "console.log(1 + 1)"})
	cell := added["cell"].(map[string]any)
	if cell["type"] != "code" || cell["source"] != "console.log(1 + 1)" || cell["content"] != "console.log(1 + 1)" || cell["filename"] == "" {
		t.Fatalf("add_cell = %v", added)
	}
	cellID := cell["id"].(string)
	run = c.ok("notebook", map[string]any{"operation": "run_cell", "notebookId": id, "cellId": cellID})
	if run["output"] != "2\n" || run["error"] != nil || run["status"] != "completed" {
		t.Errorf("run_cell = %v", run)
	}
	if _, ok := run["durationMs"].(float64); !ok {
		t.Errorf("run_cell has no durationMs: %v", run)
	}
	c.ok("notebook", map[string]any{"operation": "update_cell", "notebookId": id, "cellId": cellID, "content": "console.log(6 * 7)"})
	if got := c.ok("notebook", map[string]any{"operation": "get_cell", "notebookId": id, "cellId": cellID}); got["cell"].(map[string]any)["source"] != "console.log(6 * 7)" {
		t.Errorf("get_cell after update = %v", got)
	}
	md := c.ok("notebook", map[string]any{"operation": "add_cell", "notebookId": id, "type": "markdown", "content": "A note to delete.", "afterCellId": "1"})
	if num(md["position"]) != 2 {
		t.Errorf("add_cell after the title landed at %v", md["position"])
	}
	cells := c.ok("notebook", map[string]any{"operation": "list_cells", "notebookId": id})
	if lines := list(cells["cells"]); len(lines) != 6 || lines[1].(map[string]any)["preview"] != "A note to delete." {
		t.Errorf("list_cells = %v", cells)
	}
	c.ok("notebook", map[string]any{"operation": "delete_cell", "notebookId": id, "cellId": md["cell"].(map[string]any)["id"]})

	// Export, import, export again: the same text.
	exp := c.ok("notebook", map[string]any{"operation": "export", "notebookId": "binary-search"})
	text := exp["content"].(string)
	if !strings.HasPrefix(text, "<!--") || !strings.Contains(text, "\n# Binary search\n") || !strings.Contains(text, "###### check.ts") {
		t.Errorf("export:\n%s", text)
	}
	imp := c.ok("notebook", map[string]any{"operation": "import", "content": text})
	newID := imp["notebook"].(map[string]any)["id"].(string)
	if newID == "binary-search" {
		t.Fatalf("import reused the id of the existing notebook")
	}
	again := c.ok("notebook", map[string]any{"operation": "export", "notebookId": newID})
	if again["content"] != text {
		a, b := strings.Split(again["content"].(string), "\n"), strings.Split(text, "\n")
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Errorf("export after import differs at line %d: %q, want %q", i+1, a[i], b[i])
				break
			}
		}
	}

	// Delete: the copy leaves the listing, the reply names the ref that
	// keeps its history, and a second delete is refused naming the field.
	del := c.ok("notebook", map[string]any{"operation": "delete", "notebookId": newID})
	if del["deleted"] != true || del["kept"] != "refs/thoughtbox/deleted/notebooks/"+newID+"/record" || del["ref"] != "refs/heads/notebooks/"+newID || del["tip"] == "" {
		t.Errorf("delete = %v", del)
	}
	left := list(c.ok("notebook", map[string]any{"operation": "list"})["notebooks"])
	if len(left) == 0 {
		t.Errorf("no notebooks listed after deleting one of several")
	}
	for _, nb := range left {
		if nb.(map[string]any)["id"] == newID {
			t.Errorf("the deleted notebook is still listed: %v", nb)
		}
	}

	// Refusals name the field.
	for _, tc := range []struct {
		args  map[string]any
		field string
	}{
		{map[string]any{"operation": "delete", "notebookId": newID}, "notebookId"},
		{map[string]any{"operation": "delete"}, "notebookId"},
		{map[string]any{"operation": "add_cell", "notebookId": id, "type": "code"}, "content"},
		{map[string]any{"operation": "load"}, "notebookId"},
		{map[string]any{"operation": "load", "notebookId": "no-such-notebook"}, "notebookId"},
		{map[string]any{"operation": "get_cell", "notebookId": id, "cellId": "nope.ts"}, "cellId"},
		{map[string]any{"operation": "create", "name": "x", "template": "fancy"}, "template"},
		{map[string]any{"operation": "install_deps", "notebookId": id}, "packages"},
		{map[string]any{"operation": "run_cell", "notebookId": id, "cellId": "1", "extra": true}, "extra"},
		{map[string]any{"operation": "nope"}, "operation"},
	} {
		body := c.fail("notebook", tc.args, ledger.CodeInvalidPayload)
		if f := body["details"].(map[string]any)["field"]; f != tc.field {
			t.Errorf("%v: field %v, want %s: %v", tc.args, f, tc.field, body["message"])
		}
	}

	if r := c.gw("session", map[string]any{"operation": "discovery"}); r.isError || !strings.Contains(r.texts[0], "thoughtbox_notebook") {
		t.Errorf("discovery does not list thoughtbox_notebook: %s", r.texts[0])
	}
	// The per-stage tool takes the same arguments.
	r := c.tool("thoughtbox_notebook", map[string]any{"operation": "load", "notebookId": id})
	if r.isError || r.json(t)["title"] != "Scratch work" {
		t.Errorf("thoughtbox_notebook load = %v", r.texts)
	}

	// One commit per change, by the client, readable with plain git.
	if err := e.store.Flush(); err != nil {
		t.Fatal(err)
	}
	log := gitOut(t, repo, "log", "--format=%s", "refs/heads/notebooks/"+id)
	want := []string{"Delete cell", "Add cell", "Update cell", "Run cell", "Add cell", "Create notebook scratch-work"}
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if len(lines) != len(want) {
		t.Fatalf("git log has %d commits, want %d:\n%s", len(lines), len(want), log)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("commit %d: %q, want %q…", i, lines[i], w)
		}
	}
	if got := gitOut(t, repo, "log", "-1", "--format=%an", "refs/heads/notebooks/"+id); got != "test-client 1.2.3\n" {
		t.Errorf("author = %q", got)
	}
	files := gitOut(t, repo, "ls-tree", "-r", "--name-only", "refs/heads/notebooks/"+id)
	if !strings.Contains(files, "notebooks/scratch-work/notebook.json\n") || strings.Count(files, "notebooks/scratch-work/cells/") != 5 {
		t.Errorf("tree:\n%s", files)
	}
	gitOut(t, repo, "fsck", "--strict", "--no-dangling")
}

// TestNotebookRunawayCellIsStopped: a cell that never ends is stopped at
// the timeout, reported as failed, and the connection goes on working.
func TestNotebookRunawayCellIsStopped(t *testing.T) {
	e, _ := notebookEnv(t, time.Second)
	c := e.connect(t, clientOpts{})
	c.ready("Runaway")
	c.ok("notebook", map[string]any{"operation": "create", "name": "Loop", "language": "javascript"})
	cell := c.ok("notebook", map[string]any{"operation": "add_cell", "notebookId": "loop", "type": "code", "content": "while (true) {}"})
	run := c.ok("notebook", map[string]any{"operation": "run_cell", "notebookId": "loop", "cellId": cell["cell"].(map[string]any)["id"]})
	if run["status"] != "failed" || run["error"] == nil {
		t.Fatalf("runaway cell = %v", run)
	}
	if msg := run["error"].(string); !strings.Contains(strings.ToLower(msg), "time") {
		t.Errorf("error does not say the run timed out: %q", msg)
	}
	// The server still serves: once the loop is fixed, a later cell runs
	// on the same connection (a run goes through the cells before it).
	c.ok("notebook", map[string]any{"operation": "update_cell", "notebookId": "loop", "cellId": cell["cell"].(map[string]any)["id"], "content": "let n = 0; while (n < 10) n++;"})
	ok := c.ok("notebook", map[string]any{"operation": "add_cell", "notebookId": "loop", "type": "code", "content": "console.log('still here')"})
	run = c.ok("notebook", map[string]any{"operation": "run_cell", "notebookId": "loop", "cellId": ok["cell"].(map[string]any)["filename"]})
	if run["output"] != "still here\n" {
		t.Errorf("after the runaway: %v", run)
	}
	if st := c.ok("get_state", nil); num(st["stage"]) != 2 {
		t.Errorf("state after the runaway: %v", st)
	}
}

// TestNotebookNotConfigured: without Options.Notebooks the operation says
// so, and no notebook tool is offered.
func TestNotebookNotConfigured(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.ready("No notebooks")
	c.fail("notebook", map[string]any{"operation": "list"}, ledger.CodeInvalidOperation)
	if strings.Contains(strings.Join(c.toolNames(), " "), "thoughtbox_notebook") {
		t.Errorf("thoughtbox_notebook offered without notebooks: %v", c.toolNames())
	}
	if r := c.gw("session", map[string]any{"operation": "discovery"}); r.isError || strings.Contains(r.texts[0], "thoughtbox_notebook") {
		t.Errorf("discovery without notebooks: %s", r.texts[0])
	}
}

// TestNotebookCellsThroughMCP: what a cell may and may not do, seen by an
// agent: TypeScript with an interface and an enum, a later cell using an
// earlier one's export, the outside world refused, and npm packages
// installed and required (skipped where npm or its registry is absent).
func TestNotebookCellsThroughMCP(t *testing.T) {
	e, _ := notebookEnv(t, time.Minute)
	c := e.connect(t, clientOpts{})
	c.ready("Cells")
	c.ok("notebook", map[string]any{"operation": "create", "name": "Cells"})
	add := func(filename, src string) {
		t.Helper()
		c.ok("notebook", map[string]any{"operation": "add_cell", "notebookId": "cells", "type": "code", "filename": filename, "content": src})
	}
	run := func(cell string) map[string]any {
		t.Helper()
		return c.ok("notebook", map[string]any{"operation": "run_cell", "notebookId": "cells", "cellId": cell})
	}
	add("shapes.ts", "export interface Shape { area(): number }\nexport enum Kind { Square = 'square', Circle = 'circle' }\n"+
		"export class Square implements Shape { constructor(private s: number) {} area() { return this.s * this.s } }\n")
	add("use.ts", "import { Square, Kind } from './shapes.ts';\nconsole.log(Kind.Square, new Square(3).area());\n")
	if r := run("use.ts"); r["output"] != "square 9\n" || r["status"] != "completed" {
		t.Errorf("TypeScript cells: %v", r)
	}
	for i, src := range []string{
		"import * as fs from 'fs';\nconsole.log(fs.readFileSync('/etc/passwd', 'utf8'));",
		"require('child_process').execSync('id');",
		"console.log(require('/etc/passwd'));",
	} {
		name := "escape" + string(rune('1'+i)) + ".ts"
		add(name, src)
		r := run(name)
		if r["status"] != "failed" || r["error"] == nil || strings.Contains(r["output"].(string), "root:") {
			t.Errorf("%q was not refused: %v", src, r)
		}
		c.ok("notebook", map[string]any{"operation": "delete_cell", "notebookId": "cells", "cellId": name})
	}

	if _, err := exec.LookPath("npm"); err != nil || testing.Short() {
		t.Skip("npm is not on PATH (or -short): install_deps is shown without it below")
	}
	r := c.gw("notebook", map[string]any{"operation": "install_deps", "notebookId": "cells", "packages": []string{"is-number@7.0.0"}})
	if r.isError {
		for _, offline := range []string{"ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "ECONNREFUSED", "ENETUNREACH"} {
			if strings.Contains(r.texts[0], offline) {
				t.Skipf("the npm registry is unreachable: %s", r.texts[0])
			}
		}
		t.Fatalf("install_deps: %s", r.texts[0])
	}
	if inst := r.json(t); inst["installed"].(map[string]any)["is-number"] != "7.0.0" {
		t.Errorf("install_deps = %v", inst)
	}
	add("dep.ts", "import isNumber from 'is-number';\nconsole.log(isNumber('42'), isNumber('x'));\n")
	if r := run("dep.ts"); r["output"] != "true false\n" {
		t.Errorf("an installed package: %v", r)
	}
}

// TestNotebookInstallWithoutNPM: where npm is absent, install_deps says so
// and what to do; nothing else needs it.
func TestNotebookInstallWithoutNPM(t *testing.T) {
	e, _ := notebookEnv(t, time.Minute)
	c := e.connect(t, clientOpts{})
	c.ready("No npm")
	c.ok("notebook", map[string]any{"operation": "create", "name": "No npm", "language": "javascript"})
	t.Setenv("PATH", t.TempDir())
	body := c.fail("notebook", map[string]any{"operation": "install_deps", "notebookId": "no-npm", "packages": []string{"dayjs"}}, ledger.CodeInternal)
	if msg := body["message"].(string); !strings.Contains(msg, "npm") || !strings.Contains(msg, "install") {
		t.Errorf("message %q does not say what to do", msg)
	}
	if r := c.ok("notebook", map[string]any{"operation": "run_cell", "notebookId": "no-npm", "cellId": "code-1.js"}); r["status"] != "completed" {
		t.Errorf("a run without npm: %v", r)
	}
}
