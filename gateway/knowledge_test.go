package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// newKnowledgeEnv is a gateway whose knowledge zone lives in the same
// in-memory Git store as its sessions, as `thoughtbox serve` wires it.
func newKnowledgeEnv(t *testing.T, opts gateway.Options) (*env, *ledger.Knowledge) {
	t.Helper()
	e := &env{store: newStore(t), log: &syncBuffer{}, events: &eventSink{}}
	e.l = ledger.New(e.store, ledger.Options{})
	k := ledger.NewKnowledge(e.store.Store, ledger.KnowledgeOptions{})
	opts.Knowledge = k
	opts.ThoughtLog = e.log
	e.g = gateway.New(e.l, opts)
	return e, k
}

// kn calls a knowledge sub-operation that must succeed.
func (c *client) kn(sub string, args map[string]any) map[string]any {
	c.t.Helper()
	in := map[string]any{"operation": sub}
	for k, v := range args {
		in[k] = v
	}
	return c.ok("knowledge", in)
}

// knFail calls a knowledge sub-operation that must fail with code.
func (c *client) knFail(sub string, args map[string]any, code ledger.Code) map[string]any {
	c.t.Helper()
	in := map[string]any{"operation": sub}
	for k, v := range args {
		in[k] = v
	}
	return c.fail("knowledge", in, code)
}

func ids(v any) []string {
	var out []string
	for _, item := range list(v) {
		out = append(out, item.(map[string]any)["id"].(string))
	}
	return out
}

func field(body map[string]any) any {
	d, _ := body["details"].(map[string]any)
	return d["field"]
}

// TestKnowledgeSelfTest follows gateway/content/resources/tests/knowledge.md,
// the script agents are given to check the zone, step by step.
func TestKnowledgeSelfTest(t *testing.T) {
	e, _ := newKnowledgeEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})

	// Stage 0 cannot use it; start_new opens it.
	c.knFail("list", nil, ledger.CodeStageRequirementNotMet)
	c.ok("start_new", map[string]any{"sessionTitle": "Knowledge self-test"})

	// Step 2: create; the id is a slug of the title.
	p := c.kn("create", map[string]any{"title": "Self-test: bisect a regression",
		"description": "Find the commit that broke a test by halving the range",
		"tags":        []string{"self-test", "debugging"},
		"content":     "## Steps\n1. Find a good and a bad commit\n2. Test the midpoint\n3. Repeat on the failing half"})["pattern"].(map[string]any)
	if p["id"] != "self-test-bisect-a-regression" || !cmp.Equal(p["tags"], []any{"self-test", "debugging"}) || p["createdAt"] != p["updatedAt"] {
		t.Fatalf("created = %v", p)
	}
	if p["createdBy"] != "test-client 1.2.3" {
		t.Errorf("createdBy = %v, want the MCP client", p["createdBy"])
	}
	id := p["id"].(string)

	// Step 3: get returns it whole.
	got := c.kn("get", map[string]any{"id": id})["pattern"].(map[string]any)
	if diff := cmp.Diff(p, got); diff != "" {
		t.Errorf("get (-created +got):\n%s", diff)
	}

	// Step 4: the same title again is refused; the first is unchanged.
	body := c.knFail("create", map[string]any{"title": "Self-test: bisect a regression", "description": "d", "content": "other"}, ledger.CodeInvalidPayload)
	if field(body) != "id" || !contains(body["message"].(string), "already exists") {
		t.Errorf("duplicate = %v", body)
	}
	if got := c.kn("get", map[string]any{"id": id})["pattern"].(map[string]any); got["content"] != p["content"] {
		t.Errorf("the first pattern changed: %v", got["content"])
	}

	// Step 5: missing fields are named.
	body = c.knFail("create", map[string]any{"title": "No content"}, ledger.CodeInvalidPayload)
	if f := field(body); f != "description" && f != "content" {
		t.Errorf("missing fields: %v", body)
	}

	// Step 6: update moves updatedAt, keeps createdAt.
	time.Sleep(2 * time.Millisecond)
	u := c.kn("update", map[string]any{"id": id, "content": "## Steps\n1. Find a good and a bad commit\n2. Use git bisect run with the test"})["pattern"].(map[string]any)
	if u["createdAt"] != p["createdAt"] || !later(t, u["updatedAt"], u["createdAt"]) || !contains(u["content"].(string), "git bisect run") {
		t.Errorf("updated = %v", u)
	}

	// Steps 7-9: tag filter, search with paging, tags AND.
	if l := c.kn("list", map[string]any{"tags": []string{"self-test"}}); !cmp.Equal(ids(l["patterns"]), []string{id}) {
		t.Errorf("list by tag = %v", l)
	}
	c.kn("create", map[string]any{"title": "Bisect flaky configs", "description": "halve the config", "content": "bisect the config", "tags": []string{"self-test"}})
	first := c.kn("list", map[string]any{"search": "bisect", "limit": 1, "offset": 0})
	second := c.kn("list", map[string]any{"search": "bisect", "limit": 1, "offset": 1})
	if num(first["count"]) != 1 || num(first["total"]) != 2 || first["hasMore"] != true || !contains(first["hint"].(string), "offset 1") {
		t.Errorf("first page = %v", first)
	}
	if a, b := ids(first["patterns"]), ids(second["patterns"]); len(a) != 1 || len(b) != 1 || a[0] == b[0] {
		t.Errorf("pages %v and %v", a, b)
	}
	if _, ok := list(first["patterns"])[0].(map[string]any)["content"]; ok {
		t.Errorf("a listing carries content: %v", first)
	}
	if l := c.kn("list", map[string]any{"tags": []string{"self-test", "nonexistent-tag"}}); num(l["count"]) != 0 || len(list(l["patterns"])) != 0 {
		t.Errorf("AND of tags = %v", l)
	}

	// Step 10: list_tags counts.
	tags := c.kn("list_tags", nil)
	if !cmp.Equal(tags["tags"], []any{map[string]any{"name": "self-test", "count": 2.0}, map[string]any{"name": "debugging", "count": 1.0}}) {
		t.Errorf("list_tags = %v", tags)
	}

	// Step 11: not found names the id.
	body = c.knFail("get", map[string]any{"id": "no-such-pattern"}, ledger.CodeInvalidPayload)
	if !contains(body["message"].(string), `"no-such-pattern"`) || !contains(body["message"].(string), "not found") {
		t.Errorf("not found = %v", body)
	}

	// Steps 12-16: notes.
	n1 := c.kn("write_note", map[string]any{"id": "self-test-note", "title": "Self-test note", "content": "first draft"})
	if n1["created"] != true || n1["note"].(map[string]any)["id"] != "self-test-note" {
		t.Errorf("write_note = %v", n1)
	}
	time.Sleep(2 * time.Millisecond)
	n2 := c.kn("write_note", map[string]any{"id": "self-test-note", "title": "Self-test note", "content": "second draft"})
	note1, note2 := n1["note"].(map[string]any), n2["note"].(map[string]any)
	if n2["created"] != false || note2["content"] != "second draft" || note2["createdAt"] != note1["createdAt"] || !later(t, note2["updatedAt"], note1["updatedAt"]) {
		t.Errorf("second write_note = %v", n2)
	}
	if r := c.kn("read_note", map[string]any{"id": "self-test-note"}); r["note"].(map[string]any)["content"] != "second draft" {
		t.Errorf("read_note = %v", r)
	}
	if l := c.kn("list_notes", nil); !cmp.Equal(ids(l["notes"]), []string{"self-test-note"}) || num(l["count"]) != 1 {
		t.Errorf("list_notes = %v", l)
	}
	if d := c.kn("delete_note", map[string]any{"id": "self-test-note"}); d["deleted"] != true || d["kind"] != "note" {
		t.Errorf("delete_note = %v", d)
	}
	c.knFail("read_note", map[string]any{"id": "self-test-note"}, ledger.CodeInvalidPayload)

	// Step 17: another connection sees the patterns: they are in Git.
	c2 := e.connect(t, clientOpts{name: "second", version: "1"})
	c2.ok("load_context", map[string]any{"sessionId": c.ok("get_state", nil)["sessionId"]})
	if got := c2.kn("get", map[string]any{"id": id})["pattern"].(map[string]any); got["content"] != u["content"] {
		t.Errorf("second connection sees %v", got)
	}

	// Step 18: clean up.
	for _, pid := range []string{id, "bisect-flaky-configs"} {
		if d := c.kn("delete", map[string]any{"id": pid}); d["deleted"] != true || d["id"] != pid {
			t.Errorf("delete = %v", d)
		}
	}
	c.knFail("get", map[string]any{"id": id}, ledger.CodeInvalidPayload)
	if l := c.kn("list", map[string]any{"tags": []string{"self-test"}}); num(l["total"]) != 0 {
		t.Errorf("after clean-up: %v", l)
	}
}

func later(t *testing.T, a, b any) bool {
	t.Helper()
	ta, err1 := time.Parse(time.RFC3339Nano, a.(string))
	tb, err2 := time.Parse(time.RFC3339Nano, b.(string))
	if err1 != nil || err2 != nil {
		t.Fatalf("timestamps %v, %v", a, b)
	}
	return ta.After(tb)
}

// TestKnowledgeIsSharedAndDurable: a gateway started afresh on the same
// repository (a restarted server) finds what an earlier one wrote.
func TestKnowledgeIsSharedAndDurable(t *testing.T) {
	e, _ := newKnowledgeEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.ok("start_new", map[string]any{"sessionTitle": "x"})
	c.kn("create", map[string]any{"id": "duck", "title": "Rubber duck", "description": "talk it through", "content": "Explain the code to a duck."})

	restarted := gateway.New(ledger.New(e.store, ledger.Options{}), gateway.Options{Knowledge: ledger.NewKnowledge(e.store.Store, ledger.KnowledgeOptions{})})
	e2 := &env{g: restarted, store: e.store}
	c2 := e2.connect(t, clientOpts{})
	c2.ok("start_new", nil)
	if got := c2.kn("get", map[string]any{"id": "duck"})["pattern"].(map[string]any); got["title"] != "Rubber duck" {
		t.Errorf("after restart: %v", got)
	}
}

func TestKnowledgeArguments(t *testing.T) {
	e, _ := newKnowledgeEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.ok("start_new", nil)
	for _, tc := range []struct {
		name  string
		args  any
		field string
		want  string
	}{
		{"no sub-operation", map[string]any{}, "operation", "create, update, get, list, list_tags, delete, write_note, read_note, list_notes, delete_note"},
		{"unknown sub-operation", map[string]any{"operation": "search"}, "operation", `got "search"`},
		{"sub-operation not a string", map[string]any{"operation": 3}, "operation", "expected string"},
		{"alias disagrees", map[string]any{"operation": "get", "subOperation": "list"}, "subOperation", "disagrees"},
		{"argument of another sub-operation", map[string]any{"operation": "get", "id": "x", "tags": []string{"a"}}, "tags", "unknown argument"},
		{"wrong type", map[string]any{"operation": "list", "limit": "5"}, "limit", "expected integer"},
		{"limit out of range", map[string]any{"operation": "list", "limit": 0}, "limit", "from 1 to 100"},
		{"bad sort", map[string]any{"operation": "list", "sortBy": "id"}, "sortBy", "createdAt, updatedAt or title"},
		{"get without id", map[string]any{"operation": "get"}, "id", "required"},
		{"bad id", map[string]any{"operation": "get", "id": "Bad Id"}, "id", "^[a-z0-9-]+$"},
		{"new note without title", map[string]any{"operation": "write_note", "id": "n", "content": "x"}, "title", "required"},
		{"update with nothing", map[string]any{"operation": "update", "id": "x"}, "id", "changes nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := c.fail("knowledge", tc.args, ledger.CodeInvalidPayload)
			if field(body) != tc.field || !contains(body["message"].(string), tc.want) {
				t.Errorf("error = %v; want field %s and %q", body, tc.field, tc.want)
			}
		})
	}
	if r := c.gw("knowledge", "not an object"); !r.isError || !contains(r.texts[0], "expected object") {
		t.Errorf("args as a string: %v", r.texts)
	}
	// subOperation is accepted as the name seed 000 uses.
	if l := c.ok("knowledge", map[string]any{"subOperation": "list_notes"}); num(l["count"]) != 0 {
		t.Errorf("subOperation alias: %v", l)
	}
}

func TestKnowledgeNotConfigured(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.ok("start_new", nil)
	body := c.fail("knowledge", map[string]any{"operation": "list"}, ledger.CodeInvalidOperation)
	if !contains(body["message"].(string), "not configured") {
		t.Errorf("error = %v", body)
	}
}

// TestKnowledgeCommitsAuthor: each change is one commit on
// refs/heads/knowledge, authored by the MCP client.
func TestKnowledgeCommitsAuthor(t *testing.T) {
	s, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	authors := &authorLog{KnowledgeStore: s}
	e := &env{store: &recordingStore{Store: s}, log: &syncBuffer{}, events: &eventSink{}}
	e.l = ledger.New(e.store, ledger.Options{})
	e.g = gateway.New(e.l, gateway.Options{Knowledge: ledger.NewKnowledge(authors, ledger.KnowledgeOptions{}), AgentName: "planner"})
	c := e.connect(t, clientOpts{})
	c.ok("start_new", nil)
	c.kn("write_note", map[string]any{"title": "Open questions", "content": "why?"})
	c.kn("delete_note", map[string]any{"id": "open-questions"})
	if !cmp.Equal(authors.names, []string{"planner", "planner"}) {
		t.Errorf("authors = %v", authors.names)
	}
}

type authorLog struct {
	ledger.KnowledgeStore
	names []string
}

func (a *authorLog) WriteKnowledge(ctx context.Context, w ledger.KnowledgeWrite) (ledger.KnowledgeVersion, error) {
	a.names = append(a.names, strings.TrimSpace(w.Author.Name))
	return a.KnowledgeStore.WriteKnowledge(ctx, w)
}

// FuzzKnowledgeArgs sends arbitrary arguments to the knowledge operation
// through a real client: a call either succeeds or fails with an
// INVALID_PAYLOAD error whose message starts with the field it names.
func FuzzKnowledgeArgs(f *testing.F) {
	for _, s := range []string{
		`{"operation":"create","title":"T","description":"d","content":"c","tags":["a"]}`,
		`{"operation":"create","id":"Bad","title":"T","description":"d","content":"c"}`,
		`{"operation":"update","id":"t","tags":null,"content":"x"}`,
		`{"operation":"list","tags":["a"],"search":"x","limit":1,"offset":2,"sortBy":"title","sortOrder":"asc"}`,
		`{"operation":"list","limit":1e3}`, `{"operation":"get","id":"t","x":1}`,
		`{"subOperation":"write_note","title":"N","content":"c"}`, `{"operation":"read_note","id":"n"}`,
		`{"operation":"delete","id":""}`, `{"operation":["list"]}`, `{}`, `null`, `[1]`, `"s"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // the client could not send it
		}
		e, _ := newKnowledgeEnv(t, gateway.Options{})
		c := e.connect(t, clientOpts{})
		c.ok("start_new", nil)
		r := c.tool("thoughtbox_gateway", map[string]any{"operation": "knowledge", "args": json.RawMessage(raw)})
		if !r.isError {
			return
		}
		body := r.json(t)
		f, _ := field(body).(string)
		if body["code"] != string(ledger.CodeInvalidPayload) || f == "" || !strings.HasPrefix(body["message"].(string), f+": ") {
			t.Fatalf("%s: error %v", raw, body)
		}
	})
}

// TestKnowledgeArgsNameTheExpectedFields: the pattern arguments embed the
// ledger's parameters; a misspelt one is refused with the promoted field
// names among those expected.
func TestKnowledgeArgsNameTheExpectedFields(t *testing.T) {
	e, _ := newKnowledgeEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.ok("start_new", map[string]any{"sessionTitle": "knowledge args"})
	body := c.knFail("create", map[string]any{"titel": "typo", "description": "d", "content": "c"}, ledger.CodeInvalidPayload)
	msg, _ := body["message"].(string)
	for _, want := range []string{"titel", "title", "derivedFromSessions", "subOperation"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not name %q", msg, want)
		}
	}
}

// TestKnowledgeFollowsTheProject: after navigate {project} (and bind_root),
// the knowledge operation serves the connection's project's zone — it used
// to refuse every call with INVALID_OPERATION — and never the server's.
func TestKnowledgeFollowsTheProject(t *testing.T) {
	otherStore := newStore(t)
	other := ledger.New(otherStore, ledger.Options{})
	e, home := newKnowledgeEnv(t, gateway.Options{OpenProject: func(_ context.Context, name string, _ bool) (*ledger.Ledger, func(), error) {
		if name != "other" {
			return nil, nil, gateway.ErrNoProject
		}
		return other, func() {}, nil
	}})
	c := e.connect(t, clientOpts{roots: []*mcp.Root{{URI: "file:///src/other"}}})
	c.ready("knowledge here")
	c.kn("create", map[string]any{"title": "Home pattern", "description": "d", "content": "c"})
	c.ok("navigate", map[string]any{"project": "other"})
	c.kn("create", map[string]any{"title": "Other pattern", "description": "d", "content": "c"})
	titles := func(k *ledger.Knowledge) []string {
		page, err := k.ListPatterns(t.Context(), ledger.PatternFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range page.Patterns {
			out = append(out, p.Title)
		}
		return out
	}
	otherK := other.Knowledge()
	if got := titles(otherK); len(got) != 1 || got[0] != "Other pattern" {
		t.Errorf("the other project's zone holds %v", got)
	}
	if got := titles(home); len(got) != 1 || got[0] != "Home pattern" {
		t.Errorf("the server's zone holds %v", got)
	}
	if l := c.kn("list", nil); len(list(l["patterns"])) != 1 {
		t.Errorf("list in the other project = %v", l)
	}
	c2 := e.connect(t, clientOpts{roots: []*mcp.Root{{URI: "file:///src/other"}}})
	c2.ok("bind_root", map[string]any{"rootUri": "file:///src/other"})
	c2.ready("in other")
	if l := c2.kn("list", nil); len(list(l["patterns"])) != 1 {
		t.Errorf("list after bind_root = %v", l)
	}
}
