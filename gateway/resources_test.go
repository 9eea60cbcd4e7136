package gateway_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/gateway/content"
)

func TestResourceLists(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	res, err := c.cs.ListResources(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	want := []string{"thoughtbox://architecture", "thoughtbox://cipher", "thoughtbox://init", "thoughtbox://mental-models",
		"thoughtbox://patterns-cookbook", "thoughtbox://session-analysis-guide", "thoughtbox://tests/knowledge", "thoughtbox://tests/thoughtbox"}
	if diff := cmp.Diff(want, sorted(uris)); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	tres, err := c.cs.ListResourceTemplates(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var templates []string
	for _, r := range tres.ResourceTemplates {
		templates = append(templates, r.URITemplate)
	}
	want = []string{"thoughtbox://mental-models/{tag}/{model}", "thoughtbox://references/{sessionId}/{thoughtNumber}",
		"thoughtbox://revisions/{sessionId}/{thoughtNumber}", "thoughtbox://thoughts/{sessionId}/range/{start}-{end}",
		"thoughtbox://thoughts/{sessionId}/{type}"}
	if diff := cmp.Diff(want, sorted(templates)); diff != "" {
		t.Errorf("templates (-want +got):\n%s", diff)
	}
}

func TestStaticResources(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	for _, name := range []string{"init", "architecture", "cipher", "patterns-cookbook", "session-analysis-guide", "tests/thoughtbox", "tests/knowledge"} {
		got, err := c.read("thoughtbox://" + name)
		if err != nil {
			t.Errorf("read %s: %v", name, err)
			continue
		}
		want, _ := content.Resource(name)
		if got != want || len(got) < 100 {
			t.Errorf("thoughtbox://%s: %d bytes, want the %d of content.Resource", name, len(got), len(want))
		}
	}
	dir := c.readJSON("thoughtbox://mental-models")
	if num(dir["count"]) != 15 || len(list(dir["tags"])) != 6 {
		t.Errorf("mental-models directory = %v", dir)
	}
	first := list(dir["models"])[0].(map[string]any)
	model, err := c.read(first["uri"].(string))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := content.Model(first["name"].(string))
	if model != m.Content {
		t.Errorf("%s does not serve the model's content", first["uri"])
	}
	if got, err := c.read("thoughtbox://mental-models/debugging/five-whys"); err != nil || len(got) < 100 {
		t.Errorf("five-whys by its second tag: %v", err)
	}
	for _, uri := range []string{"thoughtbox://mental-models/planning/five-whys", "thoughtbox://mental-models/debugging/nope", "thoughtbox://nothing"} {
		if _, err := c.read(uri); !isNotFound(err) {
			t.Errorf("read %s: %v, want resource not found", uri, err)
		}
	}
}

func isNotFound(err error) bool {
	var je *jsonrpc.Error
	return errors.As(err, &je) && je.Code == mcp.CodeResourceNotFound
}

func isInvalidParams(err error) bool {
	var je *jsonrpc.Error
	return errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams
}

func TestThoughtResources(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	id := c.ready("graph")
	c.think("S1|O|User reports slow page loads", nil)
	c.think("S2|H|S1|Database queries causing latency", nil)
	c.think("S3|E|S2|Query logs show 2s average", nil)
	c.think("S4|H|S3|Missing index on users.email", nil)
	c.think("S5|R|^S4|Index exists; the planner ignores it", map[string]any{"isRevision": true, "revisesThought": 4})
	c.think("S6|C|S4,S5|∴ fix the statistics", nil)
	c.think("S4|H|S3|Maybe the network instead", map[string]any{"branchFromThought": 3, "branchId": "net"})
	c.think("plain text", nil)

	hyp := c.readJSON("thoughtbox://thoughts/" + id + "/H")
	var nodes []string
	for _, n := range list(hyp["thoughts"]) {
		nodes = append(nodes, n.(map[string]any)["id"].(string))
	}
	if diff := cmp.Diff([]string{id + ":2", id + ":4", id + ":net:4"}, nodes); diff != "" {
		t.Errorf("hypotheses (-want +got):\n%s", diff)
	}
	if hyp["typeName"] != "hypothesis" || num(hyp["count"]) != 3 {
		t.Errorf("thoughts/H = %v", hyp)
	}
	if got := c.readJSON("thoughtbox://thoughts/" + id[:8] + "/conclusion"); num(got["count"]) != 1 {
		t.Errorf("conclusions by name and id prefix = %v", got)
	}

	rng := c.readJSON("thoughtbox://thoughts/" + id + "/range/3-4")
	nodes = nil
	for _, n := range list(rng["thoughts"]) {
		nodes = append(nodes, n.(map[string]any)["id"].(string))
	}
	if diff := cmp.Diff([]string{id + ":3", id + ":4", id + ":net:4"}, nodes); diff != "" {
		t.Errorf("range 3-4 (-want +got):\n%s", diff)
	}

	refs := c.readJSON("thoughtbox://references/" + id + "/4")
	var by []string
	for _, r := range list(refs["referencedBy"]) {
		by = append(by, r.(map[string]any)["nodeId"].(string))
	}
	if diff := cmp.Diff([]string{id + ":5", id + ":6"}, by); diff != "" {
		t.Errorf("referencedBy of 4 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{map[string]any{"thought": 3.0, "node": id + ":3"}}, refs["references"]); diff != "" {
		t.Errorf("references of 4 (-want +got):\n%s", diff)
	}
	if plain := c.readJSON("thoughtbox://references/" + id + "/7"); plain["cipher"] != nil || len(list(plain["references"])) != 0 {
		t.Errorf("references of a plain thought = %v", plain)
	}

	rev := c.readJSON("thoughtbox://revisions/" + id + "/5")
	if rev["revises"] != id+":4" || num(rev["revisionDepth"]) != 1 || rev["revisionChainId"] != id+":4" || len(list(rev["chain"])) != 2 {
		t.Errorf("revisions of 5 = %v", rev)
	}
	if orig := c.readJSON("thoughtbox://revisions/" + id + "/4"); !cmp.Equal(orig["revisedBy"], []any{id + ":5"}) || orig["revises"] != nil {
		t.Errorf("revisions of 4 = %v", orig)
	}

	for _, uri := range []string{
		"thoughtbox://thoughts/" + id + "/Z",
		"thoughtbox://thoughts/" + id + "/range/4-3",
		"thoughtbox://references/" + id + "/x",
	} {
		if _, err := c.read(uri); !isInvalidParams(err) {
			t.Errorf("read %s: %v, want invalid params", uri, err)
		}
	}
	for _, uri := range []string{
		"thoughtbox://thoughts/00000000-dead/H",
		"thoughtbox://references/" + id + "/99",
		"thoughtbox://revisions/nope/1",
	} {
		if _, err := c.read(uri); !isNotFound(err) {
			t.Errorf("read %s: %v, want not found", uri, err)
		}
	}
}

func TestPrompts(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	res, err := c.cs.ListPrompts(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range res.Prompts {
		names = append(names, p.Name)
	}
	want := []string{"evolution-check", "interleaved-thinking", "list_mcp_assets", "subagent-summarize", "test-memory", "test-thoughtbox"}
	if diff := cmp.Diff(want, sorted(names)); diff != "" {
		t.Fatalf("prompts (-want +got):\n%s", diff)
	}
	i := slices.IndexFunc(res.Prompts, func(p *mcp.Prompt) bool { return p.Name == "interleaved-thinking" })
	if args := res.Prompts[i].Arguments; len(args) == 0 || args[0].Name != "task" || !args[0].Required {
		t.Errorf("interleaved-thinking arguments = %+v", args)
	}

	_, err = c.cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "interleaved-thinking"})
	if !isInvalidParams(err) || !strings.Contains(err.Error(), "missing required argument task") {
		t.Errorf("missing required argument: %v", err)
	}
	got, err := c.cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "interleaved-thinking", Arguments: map[string]string{"task": "migrate the database"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 1 || !strings.Contains(got.Messages[0].Content.(*mcp.TextContent).Text, "migrate the database") {
		t.Errorf("rendered prompt = %+v", got.Messages)
	}
	if _, err := c.cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "list_mcp_assets"}); err != nil {
		t.Errorf("list_mcp_assets: %v", err)
	}
}
