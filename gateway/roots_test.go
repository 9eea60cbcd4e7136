package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
)

func TestRoots(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{roots: []*mcp.Root{
		{URI: "file:///work/proj-a", Name: "A"},
		{URI: "file:///work/Proj%20B/"},
	}})
	r := c.ok("list_roots", nil)
	if num(r["count"]) != 2 || list(r["roots"])[1].(map[string]any)["name"] != "A" {
		t.Errorf("list_roots = %v", r)
	}

	b := c.ok("bind_root", map[string]any{"rootUri": "file:///work/Proj%20B/"})
	if b["boundRoot"] != "file:///work/Proj%20B/" || b["project"] != "proj-b" || num(b["stage"]) != 0 {
		t.Errorf("bind_root = %v", b)
	}
	if !contains(b["note"].(string), `"_default"`) {
		t.Errorf("without OpenProject the reply should say where sessions go: %v", b["note"])
	}
	st := c.ok("get_state", nil)
	if st["boundRoot"] != "file:///work/Proj%20B/" || st["navigation"].(map[string]any)["project"] != "proj-b" || st["project"] != "_default" {
		t.Errorf("state = %v", st)
	}
	if b := c.ok("bind_root", map[string]any{"rootUri": "file:///work/proj-a/sub/dir", "project": "mine"}); b["project"] != "mine" {
		t.Errorf("bind_root inside a root = %v", b)
	}

	body := c.fail("bind_root", map[string]any{"rootUri": "file:///etc"}, ledger.CodeInvalidPayload)
	if !contains(body["message"].(string), "file:///work/proj-a") {
		t.Errorf("message does not list the roots: %v", body["message"])
	}
	c.fail("bind_root", map[string]any{"rootUri": "https://example.com/x"}, ledger.CodeInvalidPayload)
	c.fail("bind_root", nil, ledger.CodeInvalidPayload)
}

func TestRootsUnsupported(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{noRoots: true})
	body := c.fail("list_roots", nil, ledger.CodeInvalidOperation)
	if !contains(body["message"].(string), "does not offer roots") {
		t.Errorf("list_roots without roots = %v", body)
	}
	if b := c.ok("bind_root", map[string]any{"rootUri": "file:///anywhere/proj"}); b["project"] != "proj" {
		t.Errorf("bind_root without roots = %v", b)
	}
}

func TestOpenProject(t *testing.T) {
	other := ledger.New(newStore(t), ledger.Options{})
	e := newEnv(t, gateway.Options{OpenProject: ignoreCreate(func(_ context.Context, name string) (*ledger.Ledger, error) {
		if name != "other" {
			return nil, errors.New("no such project")
		}
		return other, nil
	})})
	c := e.connect(t, clientOpts{roots: []*mcp.Root{{URI: "file:///src/other"}}})
	c.ready("in default")
	nav := c.ok("navigate", map[string]any{"project": "other"})
	if nav["project"] != "other" || !contains(nav["note"].(string), "let go") {
		t.Errorf("navigate = %v", nav)
	}
	if st := c.ok("get_state", nil); st["sessionId"] != nil || st["project"] != "other" {
		t.Errorf("state after switching = %v", st)
	}
	got := c.think("in other", map[string]any{"sessionTitle": "other work"})
	if _, err := other.View(t.Context(), got["sessionId"].(string)); err != nil {
		t.Errorf("session not in the other project: %v", err)
	}
	if _, err := e.l.View(t.Context(), got["sessionId"].(string)); err == nil {
		t.Errorf("session leaked into the default project")
	}
	c.fail("navigate", map[string]any{"project": "missing"}, ledger.CodeInvalidPayload)

	c2 := e.connect(t, clientOpts{roots: []*mcp.Root{{URI: "file:///src/other"}}})
	if b := c2.ok("bind_root", map[string]any{"rootUri": "file:///src/other"}); b["project"] != "other" || !contains(b["note"].(string), "Now in project") {
		t.Errorf("bind_root = %v", b)
	}
}

// TestRootsClientNeverAnswers checks that list_roots and bind_root give up
// on a client that never answers roots/list, with an error saying so, and
// that the connection still works afterwards.
func TestRootsClientNeverAnswers(t *testing.T) {
	e := newEnv(t, gateway.Options{RootsTimeout: 50 * time.Millisecond})
	c := e.connect(t, clientOpts{roots: []*mcp.Root{{URI: "file:///src/a"}}, silentRoots: true})
	for op, args := range map[string]any{"list_roots": nil, "bind_root": map[string]any{"rootUri": "file:///src/a"}} {
		body := c.fail(op, args, ledger.CodeInvalidOperation)
		if !contains(body["message"].(string), "no answer to roots/list within 50ms") {
			t.Errorf("%s: %v", op, body["message"])
		}
	}
	c.ok("get_state", nil)
}

// TestNavigateCreatesOnlyWhenAsked checks that navigate to a project that
// does not exist is refused, naming create, unless create is true; and
// that every project a call opens is released when the call ends.
func TestNavigateCreatesOnlyWhenAsked(t *testing.T) {
	var mu sync.Mutex
	projects := map[string]*ledger.Ledger{}
	held := 0
	e := newEnv(t, gateway.Options{OpenProject: func(_ context.Context, name string, create bool) (*ledger.Ledger, func(), error) {
		mu.Lock()
		defer mu.Unlock()
		l, ok := projects[name]
		if !ok && !create {
			return nil, nil, fmt.Errorf("%w %q", gateway.ErrNoProject, name)
		}
		if !ok {
			l = ledger.New(newStore(t), ledger.Options{})
			projects[name] = l
		}
		held++
		return l, func() { mu.Lock(); held--; mu.Unlock() }, nil
	}})
	c := e.connect(t, clientOpts{})
	body := c.fail("navigate", map[string]any{"project": "typo"}, ledger.CodeInvalidPayload)
	if !contains(body["message"].(string), `no such project "typo"; pass create: true`) {
		t.Errorf("navigate to a missing project: %v", body["message"])
	}
	if len(projects) != 0 {
		t.Fatalf("navigate without create made %v", projects)
	}
	if nav := c.ok("navigate", map[string]any{"project": "fresh", "create": true}); nav["project"] != "fresh" {
		t.Errorf("navigate with create = %v", nav)
	}
	c.ok("start_new", map[string]any{"sessionTitle": "in fresh"})
	c.fail("bind_root", map[string]any{"rootUri": "file:///x/other"}, ledger.CodeInvalidPayload)
	mu.Lock()
	defer mu.Unlock()
	if held != 0 || len(projects) != 1 {
		t.Errorf("after the calls: %d projects held, %d made; want 0 and 1", held, len(projects))
	}
}

// TestBindRootCodeRepository: on a local connection, a root that
// Options.OpenCodeRoot recognises moves the connection to the project it
// names, whose repository the reply names; a project named in bind_root
// wins; a root it does not recognise keeps today's project by name; a
// failure to read the root is an error naming rootUri.
func TestBindRootCodeRepository(t *testing.T) {
	code := ledger.New(newStore(t), ledger.Options{})
	repo := &coderepo.Repo{Worktree: "/src/app"}
	var asked []string
	e := newEnv(t, gateway.Options{
		OpenProject: ignoreCreate(func(_ context.Context, name string) (*ledger.Ledger, error) {
			return code, nil
		}),
		CodeRepo: func(name string) *coderepo.Repo {
			if name == "code:/src/app" {
				return repo
			}
			return nil
		},
		OpenCodeRoot: func(_ context.Context, dir string) (string, bool, error) {
			asked = append(asked, dir)
			switch dir {
			case "/src/app", "/src/app/sub":
				return "code:/src/app", true, nil
			case "/src/broken":
				return "", false, errors.New("git: bad config")
			}
			return "", false, nil
		},
	})
	c := e.connect(t, clientOpts{noRoots: true})
	b := c.ok("bind_root", map[string]any{"rootUri": "file:///src/app/sub"})
	if b["project"] != "code:/src/app" || b["codeRepository"] != "/src/app" || !contains(b["note"].(string), "enabled Git worktree") {
		t.Errorf("bind_root to an enabled worktree = %v", b)
	}
	if b := c.ok("bind_root", map[string]any{"rootUri": "file:///src/app", "project": "named"}); b["project"] != "named" || b["codeRepository"] != nil {
		t.Errorf("bind_root naming a project = %v", b)
	}
	if b := c.ok("bind_root", map[string]any{"rootUri": "file:///src/plain"}); b["project"] != "plain" || b["codeRepository"] != nil {
		t.Errorf("bind_root to another folder = %v", b)
	}
	body := c.fail("bind_root", map[string]any{"rootUri": "file:///src/broken"}, ledger.CodeInvalidPayload)
	if body["details"].(map[string]any)["field"] != "rootUri" || !contains(body["message"].(string), "bad config") {
		t.Errorf("a root that cannot be read: %v", body)
	}
	if b := c.ok("bind_root", map[string]any{"rootUri": "file://otherhost/src/app"}); b["codeRepository"] != nil {
		t.Errorf("a root on another host = %v", b)
	}
	if strings.Join(asked, " ") != "/src/app/sub /src/plain /src/broken" {
		t.Errorf("OpenCodeRoot was asked about %q", asked)
	}
}
