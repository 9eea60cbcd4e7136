package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/notebook"
)

// TestNotebookDependencySpecs: every dependency spec that could reach npm
// — the package.json cell, as written by update_cell or import or as it
// arrives already stored (a pull), and install_deps' packages — is a
// registry name with a version or range. URLs, paths, tarballs, git,
// file:, link: and npm: specs are refused with INVALID_PAYLOAD naming the
// field, before npm runs: a server standing in for a tarball host gets no
// request, and node_modules is never made.
func TestNotebookDependencySpecs(t *testing.T) {
	var fetched atomic.Int32
	tarballs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		http.NotFound(w, r)
	}))
	defer tarballs.Close()
	evilURL := tarballs.URL + "/evil.tgz"

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
			return notebook.NewService(store, notebook.Options{WorkDir: filepath.Join(work, project)})
		}})
	t.Cleanup(func() { e.g.Close() })
	c := e.connect(t, clientOpts{})
	c.ready("dependencies")
	c.ok("notebook", map[string]any{"operation": "create", "name": "Deps"})
	refused := func(args map[string]any, field string) {
		t.Helper()
		body := c.fail("notebook", args, ledger.CodeInvalidPayload)
		if d, _ := body["details"].(map[string]any); d["field"] != field {
			t.Errorf("%v: refused on field %v, want %s: %v", args, d["field"], field, body["message"])
		}
	}
	cell := func(content string) map[string]any {
		return map[string]any{"operation": "update_cell", "notebookId": "deps", "cellId": "package.json", "content": content}
	}

	for spec, field := range map[string]string{
		`{"dependencies": {"evil": "` + evilURL + `"}}`:                    "dependencies.evil",
		`{"dependencies": {"etcdir": "file:/etc"}}`:                        "dependencies.etcdir",
		`{"dependencies": {"here": "link:../.."}}`:                         "dependencies.here",
		`{"dependencies": {"alias": "npm:left-pad@1.3.0"}}`:                "dependencies.alias",
		`{"devDependencies": {"g": "git+https://example.com/x.git"}}`:      "devDependencies.g",
		`{"devDependencies": {"gh": "github:someone/thing"}}`:              "devDependencies.gh",
		`{"optionalDependencies": {"short": "someone/thing"}}`:             "optionalDependencies.short",
		`{"peerDependencies": {"rel": "./vendor/rel"}}`:                    "peerDependencies.rel",
		`{"dependencies": {"abs": "/etc"}}`:                                "dependencies.abs",
		`{"dependencies": {"home": "~/secrets"}}`:                          "dependencies.home",
		`{"dependencies": {"tar": "evil.tgz"}}`:                            "dependencies.tar",
		`{"dependencies": {"dots": ".."}}`:                                 "dependencies.dots",
		`{"dependencies": {"n": 7}}`:                                       "dependencies.n",
		`{"dependencies": {"../up": "1.0.0"}}`:                             "dependencies.../up",
		`{"dependencies": ["left-pad"]}`:                                   "dependencies",
		`{"overrides": {"left-pad": "file:/etc"}}`:                         "overrides.left-pad",
		`{"overrides": {"a": {"b": "https://example.com/b.tgz"}}}`:         "overrides.a.b",
		`{"workspaces": ["../../etc"]}`:                                    "workspaces",
		`{"dependencies": {"ok": "^1.0.0", "bad": "git://example.com/x"}}`: "dependencies.bad",
	} {
		refused(cell(spec), field)
	}
	for _, p := range []string{"evil@" + evilURL, "file:/etc", "npm:left-pad", "someone/thing", "./x", "x@./y", "x@evil.tgz", "git+ssh://git@example.com/x.git", "x@"} {
		refused(map[string]any{"operation": "install_deps", "notebookId": "deps", "packages": []string{"left-pad@1.3.0", p}}, "packages[1]")
	}
	src := "# Imported\n\n###### package.json\n\n```json\n{\"dependencies\": {\"etcdir\": \"file:/etc\"}}\n```\n"
	refused(map[string]any{"operation": "import", "content": src}, "dependencies.etcdir")

	// What the registry offers is accepted.
	good := `{"type": "module", "dependencies": {"is-number": "^7.0.0", "left-pad": "1.3.0", "dayjs": "latest", "@scope/pkg": ">=1 <2 || 3.x", "any": "", "rc": "1.0.0-rc.1+build"}, "overrides": {"foo@1": {".": "1.2.3", "bar": "~2"}}}`
	c.ok("notebook", cell(good))

	// A cell stored without these checks (pulled from a teammate, or
	// written before them) is refused when install_deps would hand it to
	// npm, before npm runs.
	files, tip, err := s.ReadNotebook(context.Background(), "deps")
	if err != nil {
		t.Fatal(err)
	}
	var pj string
	for name := range files {
		if strings.HasSuffix(name, "-package.json") {
			pj = name
		}
	}
	if pj == "" {
		t.Fatalf("no package.json among %v", files)
	}
	files[pj] = []byte(`{"dependencies": {"evil": "` + evilURL + `", "etcdir": "file:/etc"}}`)
	if _, err := s.WriteNotebook(context.Background(), ledger.NotebookWrite{ID: "deps", Files: files, ExpectedTip: tip, Message: "Pulled"}); err != nil {
		t.Fatal(err)
	}
	body := c.fail("notebook", map[string]any{"operation": "install_deps", "notebookId": "deps", "packages": []string{"left-pad@1.3.0"}}, ledger.CodeInvalidPayload)
	if d, _ := body["details"].(map[string]any); d["field"] != "dependencies.etcdir" || !strings.Contains(body["message"].(string), "package.json cell") {
		b, _ := json.Marshal(body)
		t.Errorf("install_deps with a stored bad cell: %s", b)
	}
	if n := fetched.Load(); n != 0 {
		t.Errorf("the tarball host was asked %d times", n)
	}
	if _, err := os.Lstat(filepath.Join(work, "_default", "deps", "node_modules")); !os.IsNotExist(err) {
		t.Errorf("node_modules exists (%v): npm ran", err)
	}
}

// TestNotebookCellPosition: cellId (and afterCellId) take a cell's
// 1-based position as a JSON number, as the README and the schema say, as
// well as a string; anything else is refused naming the field.
func TestNotebookCellPosition(t *testing.T) {
	e, _ := notebookEnv(t, time.Minute)
	c := e.connect(t, clientOpts{})
	c.ready("positions")
	nb := c.ok("notebook", map[string]any{"operation": "create", "name": "Positions", "language": "javascript"})
	cells := nb["notebook"].(map[string]any)["cells"].([]any)
	last := len(cells)
	c.ok("notebook", map[string]any{"operation": "add_cell", "notebookId": "positions", "type": "code", "filename": "two.js", "content": "console.log(2)", "afterCellId": last})
	at := last + 1
	got := c.ok("notebook", map[string]any{"operation": "get_cell", "notebookId": "positions", "cellId": at})
	if cell := got["cell"].(map[string]any); cell["filename"] != "two.js" {
		t.Fatalf("get_cell %d: %v", at, got)
	}
	if r := c.ok("notebook", map[string]any{"operation": "run_cell", "notebookId": "positions", "cellId": at}); r["output"] != "2\n" {
		t.Errorf("run_cell %d: %v", at, r)
	}
	c.ok("notebook", map[string]any{"operation": "update_cell", "notebookId": "positions", "cellId": at, "content": "console.log(3)"})
	if r := c.ok("notebook", map[string]any{"operation": "run_cell", "notebookId": "positions", "cellId": strconv.Itoa(at)}); r["output"] != "3\n" {
		t.Errorf("run_cell %q: %v", strconv.Itoa(at), r)
	}
	for _, bad := range []any{0, -1, 1.5, true, []int{1}} {
		body := c.fail("notebook", map[string]any{"operation": "get_cell", "notebookId": "positions", "cellId": bad}, ledger.CodeInvalidPayload)
		if d, _ := body["details"].(map[string]any); d["field"] != "cellId" || !strings.Contains(body["message"].(string), "1-based position") {
			t.Errorf("cellId %v: %v", bad, body)
		}
	}
	body := c.fail("notebook", map[string]any{"operation": "get_cell", "notebookId": "positions", "cellId": 99}, ledger.CodeInvalidPayload)
	if d, _ := body["details"].(map[string]any); d["field"] != "cellId" {
		t.Errorf("cellId 99: %v", body)
	}
	c.ok("notebook", map[string]any{"operation": "delete_cell", "notebookId": "positions", "cellId": at})
	if l := c.ok("notebook", map[string]any{"operation": "list_cells", "notebookId": "positions"}); len(l["cells"].([]any)) != last {
		t.Errorf("after delete_cell %d: %v", at, l)
	}
}
