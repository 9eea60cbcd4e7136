package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestReadThoughtsPages: limit and offset page whatever a read_thoughts
// query selects, the reply counts what it selects (total) and says how to
// ask for the rest; without them every thought selected comes back, as
// seed 002 has it.
func TestReadThoughtsPages(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.ok("start_new", map[string]any{"sessionTitle": "pages"})
	c.ok("cipher", nil)
	for i := 1; i <= 5; i++ {
		c.think(fmt.Sprintf("step %d", i), nil)
	}
	numbers := func(r map[string]any) []int {
		var out []int
		for _, th := range list(r["thoughts"]) {
			out = append(out, num(th.(map[string]any)["thoughtNumber"]))
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		args    map[string]any
		want    []int
		hasMore bool
		total   int
	}{
		{"everything", nil, []int{1, 2, 3, 4, 5}, false, 5},
		{"first page", map[string]any{"limit": 2}, []int{1, 2}, true, 5},
		{"middle page", map[string]any{"limit": 2, "offset": 2}, []int{3, 4}, true, 5},
		{"last page", map[string]any{"limit": 2, "offset": 4}, []int{5}, false, 5},
		{"past the end", map[string]any{"offset": 9}, nil, false, 5},
		{"a page of last", map[string]any{"last": 3, "limit": 1, "offset": 1}, []int{4}, true, 3},
		{"a page of a range", map[string]any{"range": map[string]any{"start": 2, "end": 4}, "offset": 1}, []int{3, 4}, false, 3},
	} {
		r := c.ok("read_thoughts", tc.args)
		got := numbers(r)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) || r["hasMore"] != tc.hasMore || num(r["total"]) != tc.total || num(r["count"]) != len(tc.want) {
			t.Errorf("%s: thoughts %v, count %v, total %v, hasMore %v; want %v, total %d, hasMore %v", tc.name, got, r["count"], r["total"], r["hasMore"], tc.want, tc.total, tc.hasMore)
		}
		if hint, _ := r["hint"].(string); tc.hasMore != (hint != "") || tc.hasMore && !strings.Contains(hint, "offset") {
			t.Errorf("%s: hint %q", tc.name, hint)
		}
	}
	if r := c.ok("read_thoughts", map[string]any{"limit": 2, "offset": 2}); !strings.Contains(r["hint"].(string), "offset 4") {
		t.Errorf("the hint names the next offset: %q", r["hint"])
	}
	for _, bad := range []map[string]any{{"limit": 0}, {"limit": 101}, {"offset": -1}} {
		body := c.fail("read_thoughts", bad, ledger.CodeInvalidPayload)
		if msg, _ := body["message"].(string); !strings.Contains(msg, "limit") && !strings.Contains(msg, "offset") {
			t.Errorf("%v: the error does not name the field: %q", bad, msg)
		}
	}
}

// TestListsThatPage: knowledge list_notes and session list_deleted page
// as the other lists do (limit 1-100, default 20, and offset), with
// total, hasMore and a hint naming the next offset; notebook list, which
// shares their paging, is checked in TestNotebookThroughMCP.
func TestListsThatPage(t *testing.T) {
	e, _ := newKnowledgeEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	var ids []string
	for i := range 3 {
		ids = append(ids, c.ok("start_new", map[string]any{"sessionTitle": fmt.Sprint("doomed ", i)})["sessionId"].(string))
		c.kn("write_note", map[string]any{"title": fmt.Sprint("note ", i), "content": "text"})
	}
	for _, id := range ids {
		c.ok("session", map[string]any{"subOperation": "delete", "sessionId": id})
	}
	check := func(what string, r map[string]any, items string, want int, more bool, total int) {
		t.Helper()
		if got := len(list(r[items])); got != want || r["hasMore"] != more || num(r["total"]) != total {
			t.Errorf("%s: %d %s, hasMore %v, total %v; want %d, %v, %d (%v)", what, got, items, r["hasMore"], r["total"], want, more, total, r)
		}
		if hint, _ := r["hint"].(string); more != strings.Contains(hint, "offset") {
			t.Errorf("%s: hint %q", what, hint)
		}
	}
	check("list_notes", c.kn("list_notes", nil), "notes", 3, false, 3)
	check("list_notes limit 2", c.kn("list_notes", map[string]any{"limit": 2}), "notes", 2, true, 3)
	check("list_notes offset 2", c.kn("list_notes", map[string]any{"limit": 2, "offset": 2}), "notes", 1, false, 3)
	check("list_deleted", c.ok("session", map[string]any{"subOperation": "list_deleted"}), "deleted", 3, false, 3)
	check("list_deleted limit 1", c.ok("session", map[string]any{"subOperation": "list_deleted", "limit": 1, "offset": 1}), "deleted", 1, true, 3)
	for _, bad := range []map[string]any{{"subOperation": "list_deleted", "limit": 0}, {"subOperation": "list_deleted", "offset": -2}} {
		c.fail("session", bad, ledger.CodeInvalidPayload)
	}
}
