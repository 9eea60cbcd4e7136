package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// sess calls a session sub-operation that must succeed.
func (c *client) sess(op string, args map[string]any) map[string]any {
	c.t.Helper()
	in := map[string]any{"operation": op}
	for k, v := range args {
		in[k] = v
	}
	return c.ok("session", in)
}

// apiSession records a session with a branch the main chain came back
// from and a revision, on connection c (at stage 2), and returns its id.
func apiSession(c *client, title string, tags ...string) string {
	c.t.Helper()
	s := c.ok("start_new", map[string]any{"sessionTitle": title, "tags": tags})
	id := s["sessionId"].(string)
	c.think("S1|O||p99 latency doubled after the release", nil)
	c.think("S2|H|S1|the cache or the database", nil)
	c.think("S3|H|S2|cache hit rate fell", map[string]any{"branchFromThought": 2, "branchId": "cache"})
	c.think("S4|X|S3|cache ruled out", map[string]any{"branchFromThought": 2, "branchId": "cache"})
	c.think("S5|H|S2|a full table scan on users", map[string]any{"thoughtNumber": 5})
	c.think("S6|R|^S5|the scan comes from the ORM query", map[string]any{"isRevision": true, "revisesThought": 5})
	return id
}

func TestSessionListAndSearch(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.ready("setup")
	apiSession(c, "Why is the API slow?", "perf", "api")
	apiSession(c, "Slow builds in CI", "perf", "ci")
	c.ok("start_new", map[string]any{"sessionTitle": "Pick a queue", "tags": []string{"planning"}, "description": "order events"})

	titles := func(r map[string]any, key string) []string {
		var out []string
		for _, s := range list(r[key]) {
			m := s.(map[string]any)
			if sess, ok := m["session"]; ok {
				m = sess.(map[string]any)
			}
			out = append(out, m["title"].(string))
		}
		return out
	}
	r := c.sess("list", map[string]any{"tags": []string{"perf", "api"}})
	if diff := cmp.Diff([]string{"Why is the API slow?"}, titles(r, "sessions")); diff != "" || num(r["total"]) != 1 {
		t.Errorf("tags AND (-want +got):\n%s", diff)
	}
	r = c.sess("list", map[string]any{"sortBy": "title", "sortOrder": "asc", "limit": 2, "offset": 1})
	// Titles sort ignoring case: Pick, setup, Slow, Why.
	if diff := cmp.Diff([]string{"setup", "Slow builds in CI"}, titles(r, "sessions")); diff != "" || num(r["total"]) != 4 || r["hasMore"] != true {
		t.Errorf("sorted page (-want +got):\n%s\n%v", diff, r)
	}
	if r["activeSessionId"] == nil || r["project"] != "_default" {
		t.Errorf("list = %v", r)
	}
	r = c.sess("list", map[string]any{"search": "ORDER"})
	if diff := cmp.Diff([]string{"Pick a queue"}, titles(r, "sessions")); diff != "" {
		t.Errorf("search in description (-want +got):\n%s", diff)
	}
	r = c.ok("session", map[string]any{"subOperation": "list", "task": "ci"})
	if diff := cmp.Diff([]string{"Slow builds in CI"}, titles(r, "sessions")); diff != "" {
		t.Errorf("task (-want +got):\n%s", diff)
	}

	// search ranks title matches above content matches.
	r = c.sess("search", map[string]any{"query": "api"})
	if diff := cmp.Diff([]string{"Why is the API slow?"}, titles(r, "hits")); diff != "" {
		t.Errorf("search api (-want +got):\n%s", diff)
	}
	r = c.sess("search", map[string]any{"query": "orm scan"})
	hits := list(r["hits"])
	if len(hits) != 2 || num(r["total"]) != 2 {
		t.Fatalf("search orm scan = %v", r)
	}
	r = c.sess("search", map[string]any{"query": "slow"})
	if got := titles(r, "hits"); len(got) != 2 || got[0] != "Slow builds in CI" && got[0] != "Why is the API slow?" {
		t.Errorf("search slow = %v", got)
	}
	first := list(r["hits"])[0].(map[string]any)
	if first["matched"].(map[string]any)["title"] != true || first["score"].(float64) <= 0 {
		t.Errorf("hit = %v", first)
	}

	for _, tt := range []struct {
		args  map[string]any
		field string
	}{
		{map[string]any{"operation": "list", "limit": 0}, "limit"},
		{map[string]any{"operation": "list", "limit": 101}, "limit"},
		{map[string]any{"operation": "list", "sortBy": "size"}, "sortBy"},
		{map[string]any{"operation": "list", "format": "json"}, "format"},        // an export argument
		{map[string]any{"operation": "list", "project": "elsewhere"}, "project"}, // no OpenProject
		{map[string]any{"operation": "search"}, "query"},
		{map[string]any{"operation": "search", "query": "?!"}, "query"},
		{map[string]any{}, "operation"},
		{map[string]any{"operation": "remove"}, "operation"},
		{map[string]any{"operation": "delete"}, "sessionId"},
		{map[string]any{"operation": 3}, "operation"},
		{map[string]any{"operation": "list", "subOperation": "get"}, "subOperation"},
	} {
		body := c.fail("session", tt.args, ledger.CodeInvalidPayload)
		if f := body["details"].(map[string]any)["field"]; f != tt.field {
			t.Errorf("%v: field %v, want %s (%v)", tt.args, f, tt.field, body["message"])
		}
	}
}

func TestSessionListOtherProject(t *testing.T) {
	other := ledger.New(newStore(t), ledger.Options{})
	if _, err := other.StartSession(t.Context(), ledger.CreateSessionParams{Title: "elsewhere"}, ledger.Author{}); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, gateway.Options{OpenProject: ignoreCreate(func(_ context.Context, p string) (*ledger.Ledger, error) {
		if p != "other" {
			return nil, fmt.Errorf("no project %s", p)
		}
		return other, nil
	})})
	c := e.connect(t, clientOpts{})
	c.ok("start_new", map[string]any{"sessionTitle": "here"})
	r := c.sess("list", map[string]any{"project": "other"})
	if r["project"] != "other" || num(r["count"]) != 1 || r["activeSessionId"] != nil {
		t.Errorf("list in another project = %v", r)
	}
	// Listing another project does not move the connection.
	if st := c.ok("get_state", nil); st["project"] != "_default" {
		t.Errorf("project after listing elsewhere = %v", st["project"])
	}
}

func TestSessionGetResumeAndStages(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.fail("session", map[string]any{"operation": "get"}, ledger.CodeStageRequirementNotMet)
	c.ready("first")
	id := apiSession(c, "Why is the API slow?")

	g := c.sess("get", nil)
	if g["session"].(map[string]any)["id"] != id || num(g["session"].(map[string]any)["thoughtCount"]) != 6 {
		t.Fatalf("get = %v", g["session"])
	}
	if n := len(list(g["mainChain"])); n != 4 {
		t.Errorf("main chain has %d thoughts, want 4", n)
	}
	br := list(g["branches"])
	if len(br) != 1 || br[0].(map[string]any)["id"] != "cache" || len(list(br[0].(map[string]any)["thoughts"])) != 2 {
		t.Errorf("branches = %v", br)
	}
	want := []any{map[string]any{"nodeId": id + ":6", "thoughtNumber": 6.0, "revisesThought": 5.0, "revisesNode": id + ":5",
		"revisionDepth": 1.0, "revisionChainId": id + ":5"}}
	if diff := cmp.Diff(want, g["revisions"]); diff != "" {
		t.Errorf("revisions (-want +got):\n%s", diff)
	}
	fork := list(g["mainChain"])[1].(map[string]any)
	if !cmp.Equal(fork["next"], []any{id + ":cache:3", id + ":5"}) {
		t.Errorf("fork point next = %v", fork["next"])
	}

	// resume moves the connection to another session, like load_context,
	// and back to stage 1 (seed 000): the cipher comes first again.
	other := c.ok("start_new", map[string]any{"sessionTitle": "other"})["sessionId"].(string)
	c.think("elsewhere", nil)
	r := c.sess("resume", map[string]any{"sessionId": id[:8]})
	if r["restorationInfo"].(map[string]any)["message"] != "Next thought will be #7" || num(r["stage"]) != 1 {
		t.Errorf("resume = %v", r)
	}
	c.ok("cipher", nil)
	if got := c.think("back again", nil); got["sessionId"] != id || num(got["thoughtNumber"]) != 7 {
		t.Errorf("thought after resume = %v", got)
	}
	if g := c.sess("get", map[string]any{"sessionId": other}); num(g["session"].(map[string]any)["thoughtCount"]) != 1 {
		t.Errorf("get by id = %v", g["session"])
	}
	c.fail("session", map[string]any{"operation": "resume"}, ledger.CodeInvalidPayload)
	c.fail("session", map[string]any{"operation": "get", "sessionId": "nope"}, ledger.CodeSessionNotFound)
}

func TestSessionExport(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, gateway.Options{ExportDir: dir})
	c := e.connect(t, clientOpts{})
	c.ready("setup")
	api := apiSession(c, "Why is the API slow?", "api")
	c.ok("start_new", map[string]any{"sessionTitle": "Pick a queue"})
	c.think("See @api:S1-S2 and @nowhere:S3", nil)

	export := func(args map[string]any) (map[string]any, string) {
		t.Helper()
		in := map[string]any{"operation": "export"}
		for k, v := range args {
			in[k] = v
		}
		r := c.gw("session", in)
		if r.isError || len(r.texts) != 2 {
			t.Fatalf("export(%v) = %v", args, r.texts)
		}
		return r.json(t), r.texts[1]
	}

	h, doc := export(map[string]any{"sessionId": api})
	var x struct {
		Version string `json:"version"`
		Nodes   []struct {
			ID   string   `json:"id"`
			Next []string `json:"next"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(doc), &x); err != nil {
		t.Fatalf("json export: %v\n%s", err, doc)
	}
	if x.Version != "1.0" || len(x.Nodes) != 6 || h["format"] != "json" || num(h["thoughts"]) != 6 || h["exportPath"] != nil {
		t.Errorf("json export: header %v, %d nodes", h, len(x.Nodes))
	}

	_, md := export(map[string]any{"sessionId": api, "format": "markdown"})
	if !strings.Contains(md, "- **Thoughts:** 6: 4 on the main chain, 2 on 1 branch; 1 revision\n") {
		t.Errorf("markdown:\n%s", md)
	}
	_, ci := export(map[string]any{"sessionId": api, "format": "cipher"})
	if lines := strings.Count(ci, "\nS"); lines != 6 {
		t.Errorf("cipher export has %d thought lines:\n%s", lines, ci)
	}

	// Anchors of the active session; one resolves by tag.
	h, doc = export(map[string]any{"resolveAnchors": true, "save": true})
	a := h["anchors"].(map[string]any)
	if len(list(a["resolved"])) != 1 || len(list(a["unresolved"])) != 1 {
		t.Errorf("anchors = %v", a)
	}
	if !strings.Contains(doc, `"anchors": {`) {
		t.Errorf("json export lacks the anchor report:\n%s", doc)
	}
	path, _ := h["exportPath"].(string)
	if saved, err := os.ReadFile(path); err != nil || string(saved) != doc || filepath.Dir(path) != dir {
		t.Errorf("saved export %q: %v", path, err)
	}

	// A manual export leaves the session open.
	if st := c.ok("get_state", nil); st["sessionId"] == nil {
		t.Errorf("export closed the session: %v", st)
	}
	if n := len(e.events.ofType("session_exported")); n != 4 {
		t.Errorf("%d session_exported events, want 4", n)
	}

	c.fail("session", map[string]any{"operation": "export", "format": "pdf"}, ledger.CodeInvalidPayload)
	e2 := newEnv(t, gateway.Options{})
	c2 := e2.connect(t, clientOpts{})
	c2.ok("start_new", map[string]any{"sessionTitle": "no dir"})
	body := c2.fail("session", map[string]any{"operation": "export", "save": true}, ledger.CodeInvalidPayload)
	if body["details"].(map[string]any)["field"] != "save" {
		t.Errorf("save without an export dir: %v", body)
	}
}

// A thought with nextThoughtNeeded=false closes the session and exports it.
func TestCompletionExports(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "exports")
	e := newEnv(t, gateway.Options{ExportDir: dir})
	c := e.connect(t, clientOpts{})
	id := c.ready("to be closed")
	c.think("one", nil)
	c.think("alt", map[string]any{"branchFromThought": 1, "branchId": "alt"})
	done := c.ok("thought", map[string]any{"thought": "done", "nextThoughtNeeded": false})
	if done["sessionClosed"] != true || done["exportError"] != nil {
		t.Fatalf("final thought reply = %v", done)
	}
	path := done["exportPath"].(string)
	if filepath.Dir(path) != dir || !strings.HasPrefix(filepath.Base(path), id+"-") || !strings.HasSuffix(path, ".json") {
		t.Errorf("export path %q, want %s/%s-<timestamp>.json", path, dir, id)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var x struct {
		Version string `json:"version"`
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
		Nodes []any `json:"nodes"`
	}
	if err := json.Unmarshal(raw, &x); err != nil || x.Version != "1.0" || x.Session.ID != id || len(x.Nodes) != 3 {
		t.Errorf("export file: %v %+v", err, x)
	}
	ev := e.events.ofType("session_exported")
	if len(ev) != 1 || ev[0].SessionID != id || ev[0].Data["exportPath"] != path || ev[0].Data["reason"] != "completed" {
		t.Errorf("session_exported events = %+v", ev)
	}

	// The connection let the session go: the next thought starts another.
	if st := c.ok("get_state", nil); st["sessionId"] != nil {
		t.Errorf("state after completion = %v", st)
	}
	next := c.think("a new topic", nil)
	if next["sessionId"] == id || next["sessionCreated"] != true {
		t.Errorf("thought after completion = %v", next)
	}
	// Reopened and completed again: a second file, the first kept.
	c.ok("load_context", map[string]any{"sessionId": id})
	again := c.ok("thought", map[string]any{"thought": "done again", "nextThoughtNeeded": false})
	if again["exportPath"] == path {
		t.Errorf("second export overwrote the first: %v", again)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, id+"-*.json")); len(files) != 2 {
		t.Errorf("exports = %v", files)
	}

	// Without an export directory the session is closed all the same.
	e2 := newEnv(t, gateway.Options{})
	c2 := e2.connect(t, clientOpts{})
	c2.ready("no dir")
	r := c2.ok("thought", map[string]any{"thought": "done", "nextThoughtNeeded": false})
	if r["sessionClosed"] != true || r["exportPath"] != nil || r["exportError"] != nil {
		t.Errorf("reply without an export dir = %v", r)
	}

	// An export that cannot be written is reported; the thought stands.
	blocked := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocked, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e3 := newEnv(t, gateway.Options{ExportDir: blocked})
	c3 := e3.connect(t, clientOpts{})
	id3 := c3.ready("blocked")
	r = c3.ok("thought", map[string]any{"thought": "done", "nextThoughtNeeded": false})
	if r["sessionClosed"] != true || r["exportError"].(map[string]any)["code"] != "STORAGE_ERROR" {
		t.Errorf("reply with an unwritable export dir = %v", r)
	}
	if v, err := e3.l.View(t.Context(), id3); err != nil || v.Session.ThoughtCount != 1 {
		t.Errorf("the thought was lost: %v", err)
	}
}

func TestSessionAnalysis(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.fail("deep_analysis", nil, ledger.CodeStageRequirementNotMet)
	c.ready("setup")
	id := apiSession(c, "Why is the API slow?", "perf")
	c.ok("thought", map[string]any{"thought": "S7|C|S6|fix the ORM query", "nextThoughtNeeded": false, "thoughtNumber": 7})

	a := c.sess("analyze", map[string]any{"sessionId": id})
	// 7 thoughts: main 1 2 5 6 7 (6 a revision), cache 3 4.
	want := map[string]any{"linearityScore": 0.5714, "revisionRate": 0.1429, "maxDepth": 1.0}
	s := a["structure"].(map[string]any)
	delete(s, "thoughtDensity") // depends on the clock
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("structure (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"critiqueRequests": 0.0, "hasConvergence": true, "isComplete": true}, a["quality"]); diff != "" {
		t.Errorf("quality (-want +got):\n%s", diff)
	}
	c.fail("session", map[string]any{"operation": "analyze"}, ledger.CodeSessionNotFound) // the session was closed

	l := c.sess("extract_learnings", map[string]any{"sessionId": id})
	var rules []string
	for _, x := range list(l["learnings"]) {
		rules = append(rules, x.(map[string]any)["metadata"].(map[string]any)["rule"].(string))
	}
	if diff := cmp.Diff([]string{"converged-branch", "self-correction", "rejected-approach", "conclusion"}, rules); diff != "" {
		t.Errorf("learnings (-want +got):\n%s", diff)
	}
	l = c.sess("extract_learnings", map[string]any{"sessionId": id, "types": []string{"anti-pattern"}})
	if num(l["count"]) != 1 {
		t.Errorf("anti-patterns = %v", l)
	}
	c.fail("session", map[string]any{"operation": "extract_learnings", "sessionId": id, "types": []string{"tip"}}, ledger.CodeInvalidPayload)

	d := c.ok("deep_analysis", map[string]any{"sessionId": id[:8]})
	if d["analysisType"] != "full" || d["patterns"].(map[string]any)["dominantPattern"] != "linear" || len(list(d["decisionPoints"])) != 3 {
		t.Errorf("deep_analysis = %v", d)
	}
	m := d["metrics"].(map[string]any)
	if m["explorationDepth"] != 2.0 || m["convergenceRate"] != 1.0 {
		t.Errorf("metrics = %v", m)
	}
	d = c.ok("deep_analysis", map[string]any{"sessionId": id, "analysisType": "cognitive_load"})
	if d["decisionPoints"] != nil || !strings.HasPrefix(list(d["insights"])[0].(map[string]any)["description"].(string), "cognitive load") {
		t.Errorf("cognitive_load = %v", d)
	}
	body := c.fail("deep_analysis", map[string]any{"sessionId": id, "analysisType": "vibes"}, ledger.CodeInvalidPayload)
	if body["details"].(map[string]any)["field"] != "analysisType" {
		t.Errorf("bad type: %v", body)
	}
}

func TestSessionDiscovery(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.ok("start_new", map[string]any{"sessionTitle": "tools"})
	c.awaitToolsChanged()

	r := c.sess("discovery", nil)
	var names []string
	for _, tool := range list(r["tools"]) {
		m := tool.(map[string]any)
		names = append(names, m["name"].(string))
		if m["name"] == "thoughtbox_thought" && (m["listed"] != false || num(m["stage"]) != 2) {
			t.Errorf("thought tool at stage 1 = %v", m)
		}
	}
	if !slices.Contains(names, "thoughtbox_gateway") || !slices.Contains(names, "thoughtbox_mental_models") {
		t.Errorf("discovery list = %v", names)
	}

	// Hiding a tool not yet disclosed keeps it out when the stage comes.
	r = c.sess("discovery", map[string]any{"action": "hide", "tools": []string{"thoughtbox_mental_models", "thoughtbox_cipher"}})
	if diff := cmp.Diff([]any{"thoughtbox_mental_models", "thoughtbox_cipher"}, r["changed"]); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	c.awaitToolsChanged()
	if diff := cmp.Diff([]string{"thoughtbox_gateway"}, sorted(c.toolNames())); diff != "" {
		t.Errorf("tools after hiding (-want +got):\n%s", diff)
	}
	c.ok("cipher", nil)
	c.awaitToolsChanged()
	if diff := cmp.Diff([]string{"thoughtbox_gateway", "thoughtbox_thought"}, sorted(c.toolNames())); diff != "" {
		t.Errorf("tools at stage 2 (-want +got):\n%s", diff)
	}
	// The operation still works through the gateway.
	c.ok("mental_models", map[string]any{"operation": "list_tags"})
	if st := c.ok("get_state", nil); !cmp.Equal(st["tools"], []any{"thoughtbox_gateway", "thoughtbox_thought"}) {
		t.Errorf("get_state tools = %v", st["tools"])
	}

	// Another connection is not affected.
	other := e.connect(t, clientOpts{})
	other.ready("other")
	other.awaitToolsChanged()
	if n := len(other.toolNames()); n != 4 {
		t.Errorf("the other connection has %d tools, want 4", n)
	}

	c.sess("discovery", map[string]any{"action": "show", "tool": "thoughtbox_mental_models"})
	c.awaitToolsChanged()
	if diff := cmp.Diff([]string{"thoughtbox_gateway", "thoughtbox_mental_models", "thoughtbox_thought"}, sorted(c.toolNames())); diff != "" {
		t.Errorf("tools after show (-want +got):\n%s", diff)
	}

	for _, args := range []map[string]any{
		{"operation": "discovery", "action": "hide", "tools": []string{"thoughtbox_gateway"}},
		{"operation": "discovery", "action": "hide", "tools": []string{"thoughtbox_teleport"}},
		{"operation": "discovery", "action": "hide"},
		{"operation": "discovery", "action": "delete"},
	} {
		c.fail("session", args, ledger.CodeInvalidPayload)
	}
}
