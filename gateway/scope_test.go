package gateway

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/notebook"
)

// bearerTransport adds a bearer token to every request of an MCP client.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// scopeClient is a real MCP client over HTTP holding one token.
type scopeClient struct {
	t  *testing.T
	cs *mcp.ClientSession
}

func connectWithToken(t *testing.T, url, token string, roots ...*mcp.Root) *scopeClient {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "scope-test", Version: "1"}, nil)
	client.AddRoots(roots...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearerTransport{token}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return &scopeClient{t: t, cs: cs}
}

// call calls a tool; it returns the error body's code ("" on success) and
// the reply's text.
func (c *scopeClient) call(tool string, args map[string]any) (code, text string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		c.t.Fatalf("%s %v: %v", tool, args, err)
	}
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if !res.IsError {
		return "", text
	}
	var body struct{ Code string }
	json.Unmarshal([]byte(text), &body)
	return body.Code, text
}

// must calls the gateway operation op, which must succeed, and returns the
// reply's first JSON object decoded.
func (c *scopeClient) must(op string, args map[string]any) map[string]any {
	c.t.Helper()
	code, text := c.call(gatewayToolName, map[string]any{"operation": op, "args": args})
	if code != "" {
		c.t.Fatalf("%s %v: %s", op, args, text)
	}
	var out map[string]any
	json.NewDecoder(strings.NewReader(text)).Decode(&out)
	return out
}

// scopeCase is one call of the read-token matrix: an operation, or a
// sub-operation of one, with arguments that would make it succeed.
type scopeCase struct {
	op, sub string
	args    map[string]any
}

func with(m map[string]any, kv ...any) map[string]any {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]any{}
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// shapes are every way a client may name sub-operation sub of op with
// arguments args, each as the tool to call and its arguments: under args
// or flat, as operation or subOperation or both (equal), and through the
// operation's own tool when it has one.
func shapes(tool, op, sub string, args map[string]any) map[string][2]any {
	out := map[string][2]any{
		"args.operation":    {gatewayToolName, map[string]any{"operation": op, "args": with(args, "operation", sub)}},
		"args.subOperation": {gatewayToolName, map[string]any{"operation": op, "args": with(args, "subOperation", sub)}},
		"flat subOperation": {gatewayToolName, with(args, "operation", op, "subOperation", sub)},
		"both in args":      {gatewayToolName, map[string]any{"operation": op, "args": with(args, "operation", sub, "subOperation", sub)}},
		"both, split":       {gatewayToolName, map[string]any{"operation": op, "subOperation": sub, "args": with(args, "operation", sub)}},
	}
	if tool != "" {
		out["own tool, operation"] = [2]any{tool, with(args, "operation", sub)}
		out["own tool, subOperation"] = [2]any{tool, with(args, "subOperation", sub)}
		out["own tool, both"] = [2]any{tool, with(args, "operation", sub, "subOperation", sub)}
	}
	return out
}

// ledgerState is what plain git sees of the repository (every ref and
// where it points) and the files the server wrote outside it.
func ledgerState(t *testing.T, store *gitstore.Store, repo string, dirs ...string) string {
	t.Helper()
	if err := store.Flush(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "--git-dir", repo, "for-each-ref", "--format=%(refname) %(objectname)")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git for-each-ref: %v\n%s", err, out)
	}
	state := string(out)
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, _ os.DirEntry, _ error) error {
			state += "file " + p + "\n"
			return nil
		})
	}
	return state
}

// TestReadTokenCannotWrite calls every operation and sub-operation, in
// every argument shape the gateway accepts, with a read-only token through
// a real MCP client over HTTP: each writing one is refused with
// PERMISSION_DENIED, each reading one answers, operation and subOperation
// that disagree are refused naming both fields, and afterwards plain git
// sees the same refs and the export folder is as it was.
// codeRepoForTest is a code repository with one commit, for why.
func codeRepoForTest(t *testing.T) *coderepo.Repo {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", "git init -q -b main && git commit -q --allow-empty -m first")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Dev", "GIT_AUTHOR_EMAIL=dev@example.com", "GIT_COMMITTER_NAME=Dev", "GIT_COMMITTER_EMAIL=dev@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	r, err := coderepo.Find(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReadTokenCannotWrite(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	const writer, reader = "writer-token-0123456789", "reader-token-0123456789"
	tokens, err := ParseTokens(strings.NewReader(writer+" alice write:_default\n"+reader+" bob read:_default\n"), "tokens")
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(t.TempDir(), "p.git")
	store, err := gitstore.Open(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	exports, work := t.TempDir(), t.TempDir()
	code := codeRepoForTest(t)
	g := New(ledger.New(store, ledger.Options{}), Options{
		Tokens: tokens, ExportDir: exports,
		CodeRepo:  func(string) *coderepo.Repo { return code },
		Knowledge: ledger.NewKnowledge(store, ledger.KnowledgeOptions{}),
		Notebooks: func(project string, s ledger.NotebookStore) *notebook.Service {
			return notebook.NewService(s, notebook.Options{WorkDir: filepath.Join(work, project)})
		},
	})
	t.Cleanup(func() { g.Close() })
	srv := httptest.NewServer(g.HTTPHandler())
	t.Cleanup(srv.Close)

	// What the reader will find: two sessions (one deleted), a pattern, a
	// note, a notebook with a code cell.
	url := srv.URL + "/mcp"
	w := connectWithToken(t, url, writer)
	gone := w.must("start_new", map[string]any{"sessionTitle": "gone"})["sessionId"].(string)
	w.must("cipher", nil)
	w.must("thought", map[string]any{"thought": "to be deleted", "nextThoughtNeeded": true})
	w.must("session", map[string]any{"operation": "delete", "sessionId": gone})
	kept := w.must("start_new", map[string]any{"sessionTitle": "kept"})["sessionId"].(string)
	w.must("thought", map[string]any{"thought": "the cache is stale", "nextThoughtNeeded": true})
	w.must("knowledge", map[string]any{"operation": "create", "id": "p1", "title": "P1", "description": "d", "content": "c"})
	w.must("knowledge", map[string]any{"operation": "write_note", "id": "n1", "title": "N1", "content": "c"})
	nb := w.must("notebook", map[string]any{"operation": "create", "name": "scratch"})["notebook"].(map[string]any)["id"].(string)
	cell := w.must("notebook", map[string]any{"operation": "add_cell", "notebookId": nb, "type": "code", "filename": "check.js", "content": "console.log(1)"})["cell"].(map[string]any)["id"].(string)
	_, srcMD := w.call(gatewayToolName, map[string]any{"operation": "notebook", "args": map[string]any{"operation": "export", "notebookId": nb}})

	before := ledgerState(t, store, repo, exports)

	root := t.TempDir()
	rootURI := "file://" + filepath.ToSlash(root)
	session := map[string]any{"sessionId": kept}
	ofNotebook := map[string]any{"notebookId": nb}
	ofCell := map[string]any{"notebookId": nb, "cellId": cell}
	writes := []scopeCase{
		{"start_new", "", map[string]any{"sessionTitle": "bob's"}},
		{"thought", "", map[string]any{"thought": "bob was here", "nextThoughtNeeded": true, "sessionId": kept}},
		{"session", "export", with(session, "save", true)},
		{"session", "extract_learnings", session},
		{"session", "update", with(session, "title", "retitled")},
		{"session", "delete", session},
		{"session", "restore", map[string]any{"sessionId": gone}},
		{"knowledge", "create", map[string]any{"title": "P2", "description": "d", "content": "c"}},
		{"knowledge", "update", map[string]any{"id": "p1", "title": "changed"}},
		{"knowledge", "delete", map[string]any{"id": "p1"}},
		{"knowledge", "write_note", map[string]any{"title": "N2", "content": "c"}},
		{"knowledge", "delete_note", map[string]any{"id": "n1"}},
		{"notebook", "create", map[string]any{"name": "bob's notebook"}},
		{"notebook", "add_cell", with(ofNotebook, "type", "markdown", "content", "more")},
		{"notebook", "update_cell", with(ofCell, "content", "console.log(2)")},
		{"notebook", "delete_cell", ofCell},
		{"notebook", "run_cell", ofCell},
		{"notebook", "run_all", ofNotebook},
		{"notebook", "install_deps", with(ofNotebook, "packages", []string{"left-pad@1.3.0"})},
		{"notebook", "import", map[string]any{"content": srcMD}},
		{"notebook", "delete", ofNotebook},
	}
	reads := []scopeCase{
		{"get_state", "", nil},
		{"load_context", "", session},
		{"list_sessions", "", nil},
		{"navigate", "", map[string]any{"domain": "debugging"}},
		{"list_roots", "", nil},
		{"bind_root", "", map[string]any{"rootUri": rootURI}},
		{"cipher", "", nil},
		{"read_thoughts", "", session},
		{"get_structure", "", session},
		{"deep_analysis", "", session},
		{"why", "", map[string]any{"commit": "HEAD"}},
		{"session", "list", nil},
		{"session", "get", session},
		{"session", "search", map[string]any{"query": "cache"}},
		{"session", "resume", session},
		{"session", "analyze", session},
		{"session", "discovery", map[string]any{"action": "list"}},
		{"session", "list_deleted", nil},
		{"knowledge", "get", map[string]any{"id": "p1"}},
		{"knowledge", "list", nil},
		{"knowledge", "list_tags", nil},
		{"knowledge", "read_note", map[string]any{"id": "n1"}},
		{"knowledge", "list_notes", nil},
		{"mental_models", "get_model", map[string]any{"modelId": "five-whys"}},
		{"mental_models", "list_models", nil},
		{"mental_models", "list_tags", nil},
		{"notebook", "list", nil},
		{"notebook", "load", ofNotebook},
		{"notebook", "list_cells", ofNotebook},
		{"notebook", "get_cell", ofCell},
		{"notebook", "export", ofNotebook},
	}
	// The matrix covers the whole table, so that an operation added later
	// is classified here too.
	covered := map[string]bool{}
	for _, c := range append(slices.Clone(writes), reads...) {
		covered[c.op+"/"+c.sub] = true
	}
	for _, op := range newOperations().list {
		if op.subOps == nil && !covered[op.name+"/"] {
			t.Errorf("operation %s is not in the matrix", op.name)
		}
		for _, s := range op.subOps {
			if !covered[op.name+"/"+s.name] {
				t.Errorf("sub-operation %s %s is not in the matrix", op.name, s.name)
			}
		}
	}

	r := connectWithToken(t, url, reader, &mcp.Root{URI: rootURI, Name: "work"})
	r.must("load_context", session)
	r.must("cipher", nil)
	tools := map[string]string{}
	for _, op := range newOperations().list {
		tools[op.name] = op.tool
	}
	run := func(c scopeCase, want func(shape, code, text string)) {
		t.Helper()
		try := func(shape, tool string, args map[string]any) {
			code, text := r.call(tool, args)
			want(shape, code, text)
		}
		if c.sub == "" {
			try("args", gatewayToolName, map[string]any{"operation": c.op, "args": c.args})
			try("flat", gatewayToolName, with(c.args, "operation", c.op))
			if tools[c.op] != "" {
				try("own tool", tools[c.op], c.args)
			}
			return
		}
		for shape, call := range shapes(tools[c.op], c.op, c.sub, c.args) {
			try(shape, call[0].(string), call[1].(map[string]any))
		}
	}
	for _, c := range writes {
		run(c, func(shape, code, text string) {
			if code != string(CodePermissionDenied) || !strings.Contains(text, "may not write to project") {
				t.Errorf("%s %s (%s) with a read token: want PERMISSION_DENIED, got %s", c.op, c.sub, shape, text)
			}
		})
	}
	for _, c := range reads {
		run(c, func(shape, code, text string) {
			if code != "" {
				t.Errorf("%s %s (%s) with a read token failed: %s", c.op, c.sub, shape, text)
			}
		})
	}
	// operation and subOperation that disagree, in either order and in
	// every place, are refused naming both fields before anything runs.
	for _, c := range writes {
		if c.sub == "" {
			continue
		}
		read := "list"
		if c.op == "notebook" {
			read = "load"
		}
		for _, args := range []map[string]any{
			with(c.args, "operation", c.sub, "subOperation", read),
			with(c.args, "operation", read, "subOperation", c.sub),
		} {
			code, text := r.call(gatewayToolName, map[string]any{"operation": c.op, "args": args})
			if code != string(ledger.CodeInvalidPayload) || !strings.Contains(text, "subOperation") || !strings.Contains(text, `"fields":["operation","subOperation"]`) {
				t.Errorf("%s %v: want INVALID_PAYLOAD naming operation and subOperation, got %s", c.op, args, text)
			}
		}
	}
	// A connection that has not gone through the stages reaches the same
	// refusals (a call naming a session may skip them).
	fresh := connectWithToken(t, url, reader)
	for _, c := range writes {
		if c.op != "session" {
			continue
		}
		for shape, call := range shapes("", c.op, c.sub, c.args) {
			if code, text := fresh.call(call[0].(string), call[1].(map[string]any)); code != string(CodePermissionDenied) {
				t.Errorf("%s %s (%s) at stage 0: want PERMISSION_DENIED, got %s", c.op, c.sub, shape, text)
			}
		}
	}

	if after := ledgerState(t, store, repo, exports); after != before {
		t.Errorf("the read token changed the ledger:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if _, err := os.Stat(filepath.Join(work, "_default", nb, "node_modules")); err == nil {
		t.Error("install_deps ran for a read token")
	}
}
