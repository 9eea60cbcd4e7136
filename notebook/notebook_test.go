package notebook

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/sandbox"
)

var agent = ledger.Author{Name: "claude", Email: "claude@agents.invalid"}

// newTestService returns a Service on a fresh in-memory store; storeFn
// lets a test give its own store (the gitstore suite does).
func newTestService(t *testing.T, opts Options) (*Service, *memStore) {
	t.Helper()
	st := newMemStore()
	if opts.WorkDir == "" {
		opts.WorkDir = t.TempDir()
	}
	svc := NewService(st, opts)
	t.Cleanup(func() { svc.Close() })
	return svc, st
}

func create(t *testing.T, svc *Service, name, tmpl, lang string) *Notebook {
	t.Helper()
	nb, err := svc.Create(t.Context(), CreateRequest{Name: name, Template: tmpl, Language: lang, Author: agent})
	if err != nil {
		t.Fatal(err)
	}
	return nb
}

func addCode(t *testing.T, svc *Service, id, filename, src string) Cell {
	t.Helper()
	_, c, err := svc.AddCell(t.Context(), AddCellRequest{NotebookID: id, Type: "code", Filename: filename, Content: src, Author: agent})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func run(t *testing.T, svc *Service, id, cell string) RunResult {
	t.Helper()
	r, err := svc.RunCell(t.Context(), id, cell, agent)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func errText(r RunResult) string {
	if r.Error == nil {
		return ""
	}
	return *r.Error
}

func TestTemplatesRunInBothLanguages(t *testing.T) {
	svc, _ := newTestService(t, Options{})
	for _, tmpl := range Templates {
		for _, lang := range []string{"typescript", "javascript"} {
			nb := create(t, svc, tmpl+" in "+lang, tmpl, lang)
			results, err := svc.RunAll(t.Context(), nb.ID, agent)
			if err != nil {
				t.Fatal(err)
			}
			if len(results) == 0 {
				t.Fatalf("%s/%s: no code cell ran", tmpl, lang)
			}
			for _, r := range results {
				if r.Status != StatusCompleted || r.Output == "" {
					t.Errorf("%s/%s: %s: %s, output %q, error %q", tmpl, lang, r.Filename, r.Status, r.Output, errText(r))
				}
			}
			loaded, err := svc.Load(t.Context(), nb.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range loaded.Cells {
				if c.Type == CodeCell && (c.Status != StatusCompleted || c.Output == nil) {
					t.Errorf("%s/%s: stored %s: %s", tmpl, lang, c.Filename, c.Status)
				}
				if c.Type == CodeCell && !strings.HasSuffix(c.Filename, map[string]string{"typescript": ".ts", "javascript": ".js"}[lang]) {
					t.Errorf("%s/%s: cell %s has the other language's extension", tmpl, lang, c.Filename)
				}
			}
			if tmpl == TemplateSequentialFeynman && !strings.Contains(results[1].Output, "all three claims hold on 200 sorted lists") {
				t.Errorf("%s/%s: the check cell printed %q", tmpl, lang, results[1].Output)
			}
		}
	}
}

func TestConsoleLogOnePlusOne(t *testing.T) {
	svc, st := newTestService(t, Options{})
	nb := create(t, svc, "Arithmetic", "blank", "javascript")
	c := addCode(t, svc, nb.ID, "sum.js", "console.log(1+1)")
	r := run(t, svc, nb.ID, c.ID)
	if r.Status != StatusCompleted || r.Output != "2\n" || r.Error != nil || r.CellID != c.ID {
		t.Fatalf("got %+v (error %q)", r, errText(r))
	}
	msgs := st.messages(nb.ID)
	if got := msgs[len(msgs)-1]; got != "Run cell 05-sum.js: completed" {
		t.Fatalf("last commit %q", got)
	}
}

func TestTypeScriptInterfaceAndEnum(t *testing.T) {
	svc, _ := newTestService(t, Options{})
	nb := create(t, svc, "Shapes", "blank", "typescript")
	c := addCode(t, svc, nb.ID, "shapes.ts", `interface Shape { kind: Kind; size: number }
enum Kind { Square = 'square', Circle = 'circle' }
const area = (s: Shape): number => s.kind === Kind.Square ? s.size ** 2 : Math.round(Math.PI * s.size ** 2);
const shapes: Shape[] = [{ kind: Kind.Square, size: 3 }, { kind: Kind.Circle, size: 2 }];
class Box<T> { constructor(private readonly v: T) {} get value(): T { return this.v } }
const total = shapes.map(area).reduce((a, b) => a + b, 0);
const nested = { a: { b: null as null | { c: number } } };
console.log(total, Kind.Circle, new Box(7).value, nested.a.b?.c ?? 'none', { ...{ x: 1 }, y: 2 });
`)
	r := run(t, svc, nb.ID, c.ID)
	if r.Status != StatusCompleted || r.Output != "22 circle 7 none {\"x\":1,\"y\":2}\n" {
		t.Fatalf("got %+v (error %q)", r, errText(r))
	}
}

func TestLaterCellUsesEarlierExport(t *testing.T) {
	svc, _ := newTestService(t, Options{})
	nb := create(t, svc, "Modules", "blank", "typescript")
	addCode(t, svc, nb.ID, "helpers.ts", "export const square = (x: number): number => x * x;\nexport default 'helpers';\nconsole.log('helpers loaded');\n")
	use := addCode(t, svc, nb.ID, "use.ts", `import name, { square } from './helpers.ts';
import { square as sq2 } from './helpers';
import * as h from './05-helpers.ts';
console.log(name, square(7), sq2(3), h.square(2));
`)
	r := run(t, svc, nb.ID, use.ID)
	// helpers ran once, before use, in the same runtime.
	if r.Status != StatusCompleted || r.Output != "helpers 49 9 4\n" {
		t.Fatalf("got %+v (error %q)", r, errText(r))
	}
	loaded, _ := svc.Load(t.Context(), nb.ID)
	h := loaded.Cells[loaded.index("helpers.ts")]
	if h.Status != StatusCompleted || h.Output == nil || *h.Output != "helpers loaded\n" {
		t.Fatalf("the earlier cell's stored result: %+v", h)
	}
}

// TestFailureStopsOnlyItsImporters: a failing cell stops the cells that
// import it, directly or through another, which say why; a later cell
// that imports nothing of it still runs.
func TestFailureStopsOnlyItsImporters(t *testing.T) {
	svc, _ := newTestService(t, Options{})
	nb := create(t, svc, "Broken chain", "blank", "javascript")
	addCode(t, svc, nb.ID, "bad.js", "\n\nthrow new RangeError('nope');\nexport const x = 1\n")
	user := addCode(t, svc, nb.ID, "user.js", "import { x } from './bad'\nexport const y = x + 1\nconsole.log('never')")
	second := addCode(t, svc, nb.ID, "second.js", "import { y } from './user.js'\nconsole.log('never', y)")
	free := addCode(t, svc, nb.ID, "free.js", "console.log('still runs')")
	r := run(t, svc, nb.ID, user.ID)
	if r.Status != StatusFailed || !strings.Contains(errText(r), "not run: it imports cell 05-bad.js, which failed: RangeError: nope at cells/bad.js:3:") || r.Output != "" {
		t.Fatalf("got %+v (error %q)", r, errText(r))
	}
	if r := run(t, svc, nb.ID, second.ID); !strings.Contains(errText(r), "imports cell 06-user.js, which was skipped") {
		t.Fatalf("a cell importing a skipped one: %+v (error %q)", r, errText(r))
	}
	if r := run(t, svc, nb.ID, free.ID); r.Status != StatusCompleted || r.Output != "still runs\n" {
		t.Fatalf("an independent cell after the failure: %+v (error %q)", r, errText(r))
	}
}

func TestInfiniteLoopIsInterrupted(t *testing.T) {
	svc, _ := newTestService(t, Options{Timeout: 500 * time.Millisecond})
	nb := create(t, svc, "Loop", "blank", "javascript")
	loop := addCode(t, svc, nb.ID, "loop.js", "console.log('start'); while (true) {}")
	start := time.Now()
	r := run(t, svc, nb.ID, loop.ID)
	if r.Status != StatusFailed || !strings.Contains(errText(r), "interrupted: the notebook run took longer than its 500ms limit (THOUGHTBOX_NOTEBOOK_TIMEOUT)") || r.Output != "start\n" {
		t.Fatalf("got %+v (error %q)", r, errText(r))
	}
	if elapsed := time.Since(start); elapsed > 30*time.Second {
		t.Fatalf("the run took %v", elapsed)
	}
	// The service goes on: fix the cell, run it again.
	if _, _, err := svc.UpdateCell(t.Context(), UpdateCellRequest{NotebookID: nb.ID, CellID: loop.ID, Content: "console.log('fixed')", Author: agent}); err != nil {
		t.Fatal(err)
	}
	if r := run(t, svc, nb.ID, loop.ID); r.Status != StatusCompleted || r.Output != "fixed\n" {
		t.Fatalf("after the loop: %+v (error %q)", r, errText(r))
	}
}

func TestRunawayAllocationIsStopped(t *testing.T) {
	svc, _ := newTestService(t, Options{Limits: sandbox.Limits{Memory: 64 << 20}})
	nb := create(t, svc, "Greedy", "blank", "javascript")
	c := addCode(t, svc, nb.ID, "greedy.js", "const a = []; for (;;) a.push('x'.repeat(1024) + a.length);")
	r := run(t, svc, nb.ID, c.ID)
	if r.Status != StatusFailed || errText(r) != "greedy.js: the sandbox ran out of memory (limit 64 MiB)" {
		t.Fatalf("got %+v (error %q)", r, errText(r))
	}
	// The child is gone; the next run has another.
	if _, err := svc.DeleteCell(t.Context(), nb.ID, c.ID, agent); err != nil {
		t.Fatal(err)
	}
	if r := run(t, svc, nb.ID, "code-1.js"); r.Status != StatusCompleted {
		t.Fatalf("after the out-of-memory run: %+v (error %q)", r, errText(r))
	}
}

func TestOutsideWorldIsRefused(t *testing.T) {
	svc, _ := newTestService(t, Options{})
	nb := create(t, svc, "Escape", "blank", "typescript")
	cases := map[string]string{
		"import * as fs from 'fs';\nconsole.log(fs.readFileSync('/etc/passwd', 'utf8'));":                  "module 'fs' is not available in notebooks",
		"const cp = require('child_process');\ncp.execSync('id');":                                         "module 'child_process' is not available in notebooks",
		"import { readFile } from 'node:fs/promises';\nreadFile('/etc/passwd');":                           "module 'node:fs/promises' is not available",
		"const passwd = require('/etc/passwd');\nconsole.log(passwd);":                                     "module '/etc/passwd' is outside the notebook's folder",
		"const passwd = require('../../../../../../../../etc/passwd');":                                    "is outside the notebook's folder",
		"console.log(typeof process, typeof fetch, typeof XMLHttpRequest, typeof Deno);\nprocess.exit(1);": "ReferenceError: process is not defined",
	}
	n := 0
	for src, want := range cases {
		n++
		c := addCode(t, svc, nb.ID, fmt.Sprintf("escape%d.ts", n), src)
		// Each case alone: the cells before it are the earlier cases,
		// which fail; delete them as we go.
		r := run(t, svc, nb.ID, c.ID)
		if r.Status != StatusFailed || !strings.Contains(errText(r), want) || strings.Contains(r.Output, "root:") {
			t.Errorf("%q: got %+v (error %q), want an error containing %q", src, r, errText(r), want)
		}
		if !strings.Contains(errText(r), fmt.Sprintf("cells/escape%d.ts:", n)) {
			t.Errorf("%q: error %q does not name the cell", src, errText(r))
		}
		if _, err := svc.DeleteCell(t.Context(), nb.ID, c.ID, agent); err != nil {
			t.Fatal(err)
		}
	}
}

func TestErrorsNameCellAndLine(t *testing.T) {
	svc, _ := newTestService(t, Options{})
	nb := create(t, svc, "Errors", "blank", "typescript")
	bad := addCode(t, svc, nb.ID, "syntax.ts", "const ok: number = 1;\n\nconst broken: = 2;\n")
	r := run(t, svc, nb.ID, bad.ID)
	if r.Status != StatusFailed || !strings.HasPrefix(errText(r), "syntax.ts:3:15: ") {
		t.Fatalf("syntax error: %+v (error %q)", r, errText(r))
	}
	if _, err := svc.DeleteCell(t.Context(), nb.ID, bad.ID, agent); err != nil {
		t.Fatal(err)
	}
	// A runtime error in a TypeScript cell points at the cell's own line,
	// through the types esbuild removed.
	thrower := addCode(t, svc, nb.ID, "throws.ts", `interface Point {
  x: number;
  y: number;
}
type Pair = [Point, Point];
function distance([a, b]: Pair): number {
  if (a.x === b.x) throw new Error('same x');
  return Math.hypot(a.x - b.x, a.y - b.y);
}
console.log(distance([{ x: 0, y: 0 }, { x: 3, y: 4 }]));
distance([{ x: 1, y: 0 }, { x: 1, y: 4 }]);
`)
	r = run(t, svc, nb.ID, thrower.ID)
	if r.Status != StatusFailed || r.Output != "5\n" || !strings.HasPrefix(errText(r), "Error: same x at cells/throws.ts:7:") {
		t.Fatalf("runtime error: %+v (error %q)", r, errText(r))
	}
}

func TestOutputIsCapped(t *testing.T) {
	svc, _ := newTestService(t, Options{MaxOutput: 1000})
	nb := create(t, svc, "Chatty", "blank", "javascript")
	c := addCode(t, svc, nb.ID, "chatty.js", "for (let i = 0; i < 10000; i++) console.log('line ' + i);")
	r := run(t, svc, nb.ID, c.ID)
	if r.Status != StatusCompleted || len(r.Output) > 1200 || !strings.Contains(r.Output, "output cut at 1000 bytes") {
		t.Fatalf("got status %s, %d bytes: %q", r.Status, len(r.Output), r.Output[:min(len(r.Output), 200)])
	}
}

func TestStorageLayoutAndCommits(t *testing.T) {
	svc, st := newTestService(t, Options{})
	nb := create(t, svc, "Layout: a test!", "blank", "typescript")
	if nb.ID != "layout-a-test" {
		t.Fatalf("id %q", nb.ID)
	}
	c := addCode(t, svc, nb.ID, "", "export const x = 1;\n")
	if c.Filename != "code-2.ts" || c.Language != TypeScript || c.Status != StatusIdle {
		t.Fatalf("added %+v", c)
	}
	if _, _, err := svc.UpdateCell(t.Context(), UpdateCellRequest{NotebookID: nb.ID, CellID: "code-2.ts", Content: "export const x = 2;\n", Author: agent}); err != nil {
		t.Fatal(err)
	}
	run(t, svc, nb.ID, "5")
	if _, err := svc.DeleteCell(t.Context(), nb.ID, "04-code-1.ts", agent); err != nil {
		t.Fatal(err)
	}
	files, _, err := st.ReadNotebook(t.Context(), nb.ID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	want := []string{"cells/01-title.md", "cells/02-package.json", "cells/03-markdown.md", "cells/04-code-2.ts", "notebook.json"}
	if diff := cmp.Diff(want, sorted(names)); diff != "" {
		t.Fatalf("files (-want +got):\n%s", diff)
	}
	if got := string(files["cells/04-code-2.ts"]); got != "export const x = 2;\n" {
		t.Fatalf("the cell file holds %q", got)
	}
	if got := string(files["cells/01-title.md"]); got != "Layout: a test!" {
		t.Fatalf("the title file holds %q", got)
	}
	wantMsgs := []string{
		"Create notebook layout-a-test from template blank (typescript)",
		"Add cell 05-code-2.ts",
		"Update cell 05-code-2.ts",
		"Run cell 05-code-2.ts: completed",
		"Delete cell 04-code-1.ts",
	}
	if diff := cmp.Diff(wantMsgs, st.messages(nb.ID)); diff != "" {
		t.Fatalf("commits (-want +got):\n%s", diff)
	}
	for _, w := range st.commits[nb.ID] {
		if w.Author != agent {
			t.Fatalf("commit %q by %+v", w.Message, w.Author)
		}
	}
	// A second notebook of the same name gets its own id.
	if again := create(t, svc, "Layout: a test!", "", ""); again.ID != "layout-a-test-2" {
		t.Fatalf("second id %q", again.ID)
	}
	list, err := svc.List(t.Context())
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %+v, %v", list, err)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	out, errMsg := "line\n", "Error: x at cells/a.ts:1:1"
	ts := `{"compilerOptions":{"strict":true}}`
	nb := &Notebook{ID: "rt", Language: JavaScript, TSConfig: &ts, CreatedAt: 1, UpdatedAt: 2, Cells: []Cell{
		{ID: "1", Type: TitleCell, Text: "T"},
		{ID: "2", Type: PackageJSONCell, Filename: "package.json", Source: "{}\n", Status: StatusCompleted, Output: &out},
		{ID: "3", Type: MarkdownCell, Text: ""},
		{ID: "4", Type: CodeCell, Language: TypeScript, Filename: "a.ts", Source: "```\n\n", Status: StatusFailed, Output: &out, Error: &errMsg},
		{ID: "5", Type: MarkdownCell, Text: "trailing\n\n"},
		{ID: "6", Type: CodeCell, Language: JavaScript, Filename: "b.js", Source: "", Status: StatusIdle},
	}}
	got, err := decode(encode(nb))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(nb, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	files := encode(nb)
	files["cells/07-stray.md"] = []byte("x")
	if _, err := decode(files); err == nil || !strings.Contains(err.Error(), "cells/07-stray.md is not a cell") {
		t.Fatalf("a stray file: %v", err)
	}
}

func TestExportImportRoundTrip(t *testing.T) {
	svc, _ := newTestService(t, Options{})
	var ids []string
	for _, tmpl := range Templates {
		for _, lang := range []string{"typescript", "javascript"} {
			ids = append(ids, create(t, svc, tmpl+" "+lang, tmpl, lang).ID)
		}
	}
	odd := create(t, svc, "Odd content", "blank", "typescript")
	for _, c := range []AddCellRequest{
		{Type: "markdown", Content: "Fences inside:\n\n```ts\nconst x = 1;\n```\n"},
		{Type: "markdown", Content: ""},
		{Type: "code", Filename: "ticks.ts", Content: "const s = `a ${'``'} b`;\n// ```` four\nconsole.log(s);"},
		{Type: "code", Filename: "empty.js", Content: ""},
		{Type: "markdown", Content: "###### not-a-cell.ts\n\ntext"},
		{Type: "code", Filename: "last.ts", Content: "\n\nconsole.log('blank lines around')\n\n"},
		{Type: "markdown", Content: "ends with newlines\n\n"},
	} {
		c.NotebookID, c.Author = odd.ID, agent
		if _, _, err := svc.AddCell(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	ids = append(ids, odd.ID)
	for _, id := range ids {
		first, err := svc.Export(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		imported, err := svc.Import(t.Context(), first, agent)
		if err != nil {
			t.Fatalf("%s: import: %v", id, err)
		}
		second, err := svc.Export(t.Context(), imported.ID)
		if err != nil {
			t.Fatal(err)
		}
		if first != second {
			t.Fatalf("%s: export → import → export differs:\n%s", id, cmp.Diff(first, second))
		}
		orig, _ := svc.Load(t.Context(), id)
		if len(orig.Cells) != len(imported.Cells) {
			t.Fatalf("%s: %d cells became %d", id, len(orig.Cells), len(imported.Cells))
		}
		for i := range orig.Cells {
			o, n := orig.Cells[i], imported.Cells[i]
			if o.Type != n.Type || o.Content() != n.Content() || o.Filename != n.Filename || o.Language != n.Language {
				t.Fatalf("%s: cell %d: %+v became %+v", id, i+1, o, n)
			}
		}
		if !strings.HasPrefix(first, `<!-- srcbook:{"language":"`) {
			t.Fatalf("%s: export starts %q", id, first[:40])
		}
	}
}

func TestBadInputNamesTheField(t *testing.T) {
	svc, st := newTestService(t, Options{})
	nb := create(t, svc, "Inputs", "blank", "javascript")
	before := len(st.messages(nb.ID))
	cases := []struct {
		err   error
		field string
	}{
		{second(svc.Create(t.Context(), CreateRequest{Name: "", Author: agent})), "name"},
		{second(svc.Create(t.Context(), CreateRequest{Name: "x", Language: "python", Author: agent})), "language"},
		{second(svc.Create(t.Context(), CreateRequest{Name: "x", Template: "nope", Author: agent})), "template"},
		{third(svc.AddCell(t.Context(), AddCellRequest{NotebookID: nb.ID, Type: "video", Author: agent})), "type"},
		{third(svc.AddCell(t.Context(), AddCellRequest{NotebookID: nb.ID, Type: "code", Filename: "../x.ts", Author: agent})), "filename"},
		{third(svc.AddCell(t.Context(), AddCellRequest{NotebookID: nb.ID, Type: "code", Filename: "code-1.js", Author: agent})), "filename"},
		{third(svc.AddCell(t.Context(), AddCellRequest{NotebookID: nb.ID, Type: "title", Content: "again", Author: agent})), "type"},
		{third(svc.AddCell(t.Context(), AddCellRequest{NotebookID: nb.ID, Type: "code", AfterCellID: "nope", Author: agent})), "afterCellId"},
		{third(svc.UpdateCell(t.Context(), UpdateCellRequest{NotebookID: nb.ID, CellID: "2", Content: "{not json", Author: agent})), "content"},
		{third(svc.AddCell(t.Context(), AddCellRequest{NotebookID: "Bad ID", Type: "code", Author: agent})), "notebookId"},
		{third(svc.AddCell(t.Context(), AddCellRequest{NotebookID: "missing", Type: "code", Author: agent})), "notebookId"},
		{second(svc.Cell(t.Context(), nb.ID, "99")), "cellId"},
		{second(svc.RunCell(t.Context(), nb.ID, "1", agent)), "cellId"},
		{second(svc.InstallDeps(t.Context(), nb.ID, []string{"https://evil.example/x.tgz"}, agent)), "packages[0]"},
		{second(svc.InstallDeps(t.Context(), nb.ID, []string{"ok", "--global"}, agent)), "packages[1]"},
		{second(svc.InstallDeps(t.Context(), nb.ID, []string{"../../etc"}, agent)), "packages[0]"},
		{second(svc.InstallDeps(t.Context(), nb.ID, []string{"github:user/repo"}, agent)), "packages[0]"},
		{second(svc.InstallDeps(t.Context(), nb.ID, []string{"x@git+ssh://h/r.git"}, agent)), "packages[0]"},
		{second(svc.InstallDeps(t.Context(), nb.ID, nil, agent)), "packages"},
		{second(svc.Import(t.Context(), "no title here\n", agent)), "content"},
	}
	for i, c := range cases {
		e := ledger.AsError(c.err)
		if e == nil || e.Code != ledger.CodeInvalidPayload || e.Details["field"] != c.field || !strings.HasPrefix(e.Message, c.field+": ") {
			t.Errorf("case %d: got %#v, want INVALID_PAYLOAD naming %s", i, e, c.field)
		}
	}
	if !errors.Is(cases[10].err, ledger.ErrNotebookNotFound) || !errors.Is(cases[11].err, ErrCellNotFound) {
		t.Errorf("not-found errors lost their sentinels: %v / %v", cases[10].err, cases[11].err)
	}
	if after := len(st.messages(nb.ID)); after != before {
		t.Fatalf("bad input made %d commits", after-before)
	}
}

func second[T any](_ T, err error) error        { return err }
func third[T, U any](_ T, _ U, err error) error { return err }

func TestSeed000CellShape(t *testing.T) {
	var c Cell
	if err := c.UnmarshalJSON([]byte(`{"id":"x","type":"code","content":"console.log(1)"}`)); err != nil {
		t.Fatal(err)
	}
	if c.Source != "console.log(1)" {
		t.Fatalf("%+v", c)
	}
	b, err := Cell{ID: "t", Type: TitleCell, Text: "Hi"}.MarshalJSON()
	if err != nil || string(b) != `{"id":"t","type":"title","text":"Hi","content":"Hi"}` {
		t.Fatalf("%s %v", b, err)
	}
	b, _ = Cell{ID: "c", Type: CodeCell, Language: TypeScript, Filename: "a.ts", Source: "1", Status: StatusIdle}.MarshalJSON()
	if string(b) != `{"id":"c","type":"code","language":"typescript","filename":"a.ts","source":"1","status":"idle","content":"1"}` {
		t.Fatalf("%s", b)
	}
}

// TestInstalledPackage installs a small pure-JS package from npm and
// requires it from a cell. It needs npm and the registry.
func TestInstalledPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no npm install")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not on PATH: install_deps cannot be shown here")
	}
	svc, st := newTestService(t, Options{})
	nb := create(t, svc, "Dates", "blank", "typescript")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	res, err := svc.InstallDeps(ctx, nb.ID, []string{"is-number@7.0.0"}, agent)
	if err != nil {
		if strings.Contains(err.Error(), "ENOTFOUND") || strings.Contains(err.Error(), "EAI_AGAIN") || strings.Contains(err.Error(), "ETIMEDOUT") || strings.Contains(err.Error(), "ECONNREFUSED") {
			t.Skipf("the npm registry is unreachable: %v", err)
		}
		t.Fatal(err)
	}
	if res.Installed["is-number"] != "7.0.0" || !strings.Contains(res.PackageJSON, `"is-number": "7.0.0"`) {
		t.Fatalf("install result %+v", res)
	}
	msgs := st.messages(nb.ID)
	if msgs[len(msgs)-1] != "Install is-number@7.0.0" {
		t.Fatalf("commit %q", msgs[len(msgs)-1])
	}
	c := addCode(t, svc, nb.ID, "use.ts", "import isNumber from 'is-number';\nconst isNum2 = require('is-number');\nconsole.log(isNumber('42'), isNumber('x'), isNum2(7));\n")
	if r := run(t, svc, nb.ID, c.ID); r.Status != StatusCompleted || r.Output != "true false true\n" {
		t.Fatalf("got %+v (error %q)", r, errText(r))
	}
	loaded, _ := svc.Load(t.Context(), nb.ID)
	if pj := loaded.Cells[1]; pj.Type != PackageJSONCell || !strings.Contains(pj.Source, `"is-number": "7.0.0"`) {
		t.Fatalf("package.json cell %+v", pj)
	}
}

func TestInstallWithoutNPM(t *testing.T) {
	svc, _ := newTestService(t, Options{NPM: ""})
	nb := create(t, svc, "No npm", "blank", "javascript")
	t.Setenv("PATH", t.TempDir())
	_, err := svc.InstallDeps(t.Context(), nb.ID, []string{"dayjs"}, agent)
	if !errors.Is(err, ErrNPMUnavailable) || !strings.Contains(err.Error(), "install Node.js and npm") {
		t.Fatalf("got %v", err)
	}
}

func TestMissingPackageSaysWhatToDo(t *testing.T) {
	svc, _ := newTestService(t, Options{})
	nb := create(t, svc, "Missing", "blank", "javascript")
	c := addCode(t, svc, nb.ID, "dep.js", "const dayjs = require('dayjs');")
	r := run(t, svc, nb.ID, c.ID)
	if r.Status != StatusFailed || !strings.Contains(errText(r), "cannot find module 'dayjs': it is not installed in this notebook's node_modules (install it with install_deps)") {
		t.Fatalf("got %+v (error %q)", r, errText(r))
	}
}

func TestWorkDirIsPerNotebook(t *testing.T) {
	dir := t.TempDir()
	svc, _ := newTestService(t, Options{WorkDir: dir})
	nb := create(t, svc, "Folder", "blank", "javascript")
	run(t, svc, nb.ID, "code-1.js")
	if fi, err := os.Stat(filepath.Join(dir, nb.ID)); err != nil || !fi.IsDir() {
		t.Fatalf("work folder: %v", err)
	}
}

func TestTSConfigIsHonoured(t *testing.T) {
	// TypeScript's experimental decorators get (target, key); standard
	// ones (method, context). Which one a cell gets is the tsconfig's say.
	svc, _ := newTestService(t, Options{})
	cell := "###### d.ts\n\n```typescript\nfunction log(target: any, key: any) { console.log('decorated', typeof key); }\nclass C { @log m() {} }\n```\n"
	outputs := map[string]string{}
	for name, meta := range map[string]string{
		"experimental": `<!-- srcbook:{"language":"typescript","tsconfig.json":{"compilerOptions":{"experimentalDecorators":true}}} -->`,
		"standard":     `<!-- srcbook:{"language":"typescript"} -->`,
	} {
		nb, err := svc.Import(t.Context(), meta+"\n\n# Decorators "+name+"\n\n"+cell, agent)
		if err != nil {
			t.Fatal(err)
		}
		if name == "experimental" && (nb.TSConfig == nil || !strings.Contains(*nb.TSConfig, "experimentalDecorators")) {
			t.Fatalf("tsconfig not imported: %v", nb.TSConfig)
		}
		r := run(t, svc, nb.ID, "d.ts")
		if r.Status != StatusCompleted {
			t.Fatalf("%s: %+v (error %q)", name, r, errText(r))
		}
		outputs[name] = r.Output
	}
	if outputs["experimental"] != "decorated string\n" || outputs["standard"] != "decorated object\n" {
		t.Fatalf("outputs %q", outputs)
	}
	bad := `{"compilerOptions": `
	if _, err := transpile("d.ts", "let x = 1", TypeScript, &bad); err == nil {
		t.Fatalf("a broken tsconfig.json: no error")
	}
}

func TestAsyncCellAndTimers(t *testing.T) {
	svc, _ := newTestService(t, Options{})
	nb := create(t, svc, "Async", "blank", "typescript")
	c := addCode(t, svc, nb.ID, "wait.ts", `const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
async function* ticks(n: number): AsyncGenerator<number> { for (let i = 0; i < n; i++) { await sleep(10); yield i; } }
(async () => {
  const seen: number[] = [];
  for await (const t of ticks(3)) seen.push(t);
  await sleep(1000);
  console.log('ticks', seen.join(','));
})();
`)
	r := run(t, svc, nb.ID, c.ID)
	if r.Status != StatusCompleted || r.Output != "ticks 0,1,2\n" {
		t.Fatalf("got %+v (error %q)", r, errText(r))
	}
	bad := addCode(t, svc, nb.ID, "reject.ts", "(async () => { await null; throw new TypeError('lost'); })();\n")
	if r := run(t, svc, nb.ID, bad.ID); r.Status != StatusFailed || !strings.Contains(errText(r), "Uncaught (in promise) TypeError: lost") {
		t.Fatalf("an async failure nobody caught: %+v (error %q)", r, errText(r))
	}
}

// A spare child waits for the next run only so long: after SpareIdle it
// is ended, and a later run starts its own child.
func TestSpareChildIsRetiredWhenIdle(t *testing.T) {
	svc, _ := newTestService(t, Options{SpareIdle: 300 * time.Millisecond})
	nb := create(t, svc, "Idle", "blank", "javascript")
	c := addCode(t, svc, nb.ID, "one.js", "console.log(1)")
	if r := run(t, svc, nb.ID, c.ID); r.Status != StatusCompleted {
		t.Fatalf("first run: %+v (error %q)", r, errText(r))
	}
	spare := func() *sandbox.Session {
		svc.spareMu.Lock()
		defer svc.spareMu.Unlock()
		return svc.spare
	}
	var seen *sandbox.Session
	for deadline := time.Now().Add(30 * time.Second); seen == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no spare child was started after the run")
		}
		seen = spare()
	}
	for deadline := time.Now().Add(30 * time.Second); spare() != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the spare child outlived SpareIdle")
		}
	}
	if _, err := seen.Run(context.Background(), "1", sandbox.RunOptions{}); err == nil {
		t.Fatal("the retired spare still runs code: it was not closed")
	}
	if r := run(t, svc, nb.ID, c.ID); r.Status != StatusCompleted || r.Output != "1\n" {
		t.Fatalf("run after the spare was retired: %+v (error %q)", r, errText(r))
	}
}

// TestTopLevelAwait: a cell may await at its top level (esbuild's ES2017
// target refused it); its output after the await, a timer it awaits and a
// rejection it awaits all come through. A cell that also imports or
// exports is refused with what to do.
func TestTopLevelAwait(t *testing.T) {
	svc, _ := newTestService(t, Options{})
	nb := create(t, svc, "Await", "blank", "typescript")
	ok := addCode(t, svc, nb.ID, "wait.ts", "const v: number = await Promise.resolve(41)\nawait new Promise(r => setTimeout(r, 5))\nconsole.log('got', v + 1)")
	if r := run(t, svc, nb.ID, ok.ID); r.Status != StatusCompleted || r.Output != "got 42\n" {
		t.Fatalf("top-level await: %+v (error %q)", r, errText(r))
	}
	bad := addCode(t, svc, nb.ID, "reject.ts", "await Promise.reject(new Error('no luck'))")
	if r := run(t, svc, nb.ID, bad.ID); r.Status != StatusFailed || !strings.Contains(errText(r), "no luck") {
		t.Fatalf("awaited rejection: %+v (error %q)", r, errText(r))
	}
	mixed := addCode(t, svc, nb.ID, "mixed.ts", "export const z = await Promise.resolve(1)")
	if r := run(t, svc, nb.ID, mixed.ID); r.Status != StatusFailed || !strings.Contains(errText(r), "neither imports nor exports") {
		t.Fatalf("await with export: %+v (error %q)", r, errText(r))
	}
}

func TestDeleteNotebook(t *testing.T) {
	svc, _ := newTestService(t, Options{})
	nb := create(t, svc, "Doomed", "blank", "typescript")
	other := create(t, svc, "Kept", "blank", "typescript")
	d, err := svc.Delete(t.Context(), nb.ID, agent)
	if err != nil || d.ID != nb.ID || d.Tip == "" {
		t.Fatalf("delete: %+v, %v", d, err)
	}
	if _, err := svc.Load(t.Context(), nb.ID); !errors.Is(err, ledger.ErrNotebookNotFound) {
		t.Errorf("loading a deleted notebook: %v, want ErrNotebookNotFound", err)
	}
	list, err := svc.List(t.Context())
	if err != nil || len(list) != 1 || list[0].ID != other.ID {
		t.Errorf("list after the delete: %+v, %v", list, err)
	}
	_, err = svc.Delete(t.Context(), nb.ID, agent)
	var le *ledger.Error
	if !errors.Is(err, ledger.ErrNotebookNotFound) || !errors.As(err, &le) || le.Code != ledger.CodeInvalidPayload || !strings.Contains(err.Error(), "notebookId") {
		t.Errorf("deleting it again: %v, want INVALID_PAYLOAD naming notebookId", err)
	}
	if _, err := svc.Delete(t.Context(), "Not An Id", agent); err == nil || !strings.Contains(err.Error(), "notebookId") {
		t.Errorf("a bad id: %v, want an error naming notebookId", err)
	}
}
