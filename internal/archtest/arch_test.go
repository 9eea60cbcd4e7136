package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is this module's path; "." stands for its root package.
const module = "github.com/thoughtbox/thoughtbox"

// A rule forbids the packages matching From to reach a package matching
// To: through any chain of imports (Direct false), or by importing it
// themselves (Direct true, for an arrow that may be reached through the
// package that owns it). Tests true holds the tests of the From packages
// to the rule as well.
type rule struct {
	Name   string
	From   func(pkg string) bool
	To     func(pkg string) bool
	Direct bool
	Tests  bool
}

// testsOf names the node of the graph that holds a package's test
// imports (its _test.go files, internal and external), so that the rules
// that leave tests alone never see them.
func testsOf(pkg string) string { return pkg + " (tests)" }

// under matches a package and those below it. Packages of this module are
// named by their path inside it ("ledger", "gitstore/internal/wal").
func under(prefix string) func(string) bool {
	return func(p string) bool { return p == prefix || strings.HasPrefix(p, prefix+"/") }
}

func exactly(name string) func(string) bool { return func(p string) bool { return p == name } }

// The arrows doc/architecture.md draws. Package paths are inside the
// module, except third-party ones, which keep their full path.
var rules = []rule{
	{Name: "ledger imports nothing of ours", From: exactly("ledger"),
		To: func(p string) bool { return ours[p] && p != "ledger" }},
	{Name: "gitstore/internal/* never imports ledger", From: under("gitstore/internal"),
		To: exactly("ledger")},
	{Name: "nothing but gitstore imports go-git", From: func(p string) bool { return ours[p] && !under("gitstore")(p) },
		To: under("github.com/go-git"), Direct: true},
	{Name: "only gitstore/remote speaks to remotes (go-git's transports and wire protocol)",
		From: func(p string) bool { return ours[p] && p != "gitstore/remote" }, To: goGitWire, Direct: true},
	{Name: "the CLI reaches Git only through project", From: under("cmd/thoughtbox"),
		To: under("gitstore"), Direct: true, Tests: true},
	{Name: "observatory never imports gitstore", From: under("observatory"),
		To: under("gitstore")},
	{Name: "export never imports gateway", From: under("export"),
		To: under("gateway")},
	{Name: "the log (gitstore/internal/wal) knows only its records' parts, never the repository, packs or refs", From: exactly("gitstore/internal/wal"),
		To: func(p string) bool {
			return under("gitstore")(p) && !under("gitstore/internal/object")(p) && !under("gitstore/internal/delta")(p)
		}},
	{Name: "config never imports gitstore", From: under("config"),
		To: under("gitstore")},
	{Name: "project/pool opens projects only through project, never gitstore or the MCP server itself", From: under("project/pool"),
		To: func(p string) bool { return under("gitstore")(p) || under("gateway")(p) }, Direct: true},
	{Name: "the MCP server and the Observatory get other projects through functions the CLI hands them, never by opening them", From: func(p string) bool { return under("gateway")(p) || under("observatory")(p) },
		To: under("project")},
	{Name: "sharing is a leaf of types and sentinels: nothing of ours, no go-git", From: exactly("sharing"),
		To: func(p string) bool { return ours[p] && p != "sharing" || under("github.com/go-git")(p) }},
}

// goGitWire matches go-git's transports and the wire protocol they speak.
func goGitWire(p string) bool {
	return under("github.com/go-git/go-git/v5/plumbing/transport")(p) ||
		under("github.com/go-git/go-git/v5/plumbing/protocol")(p)
}

// ours holds the packages of this module (in the short form), as go list
// reported them.
var ours = map[string]bool{}

// graph maps each package (short form for ours) to its direct imports.
type graph map[string][]string

// check returns one message per violation of r in g: the package, and the
// chain of imports that leads it to the forbidden one.
func check(g graph, r rule) []string {
	var out []string
	froms := make([]string, 0, len(g))
	for p := range g {
		if pkg, ok := strings.CutSuffix(p, " (tests)"); ok && !r.Tests {
			continue
		} else if r.From(pkg) {
			froms = append(froms, p)
		}
	}
	slices.Sort(froms)
	for _, from := range froms {
		if r.Direct {
			for _, imp := range g[from] {
				if r.To(imp) {
					out = append(out, r.Name+": "+from+" imports "+imp)
				}
			}
			continue
		}
		if chain := findChain(g, from, r.To); chain != nil {
			out = append(out, r.Name+": "+strings.Join(chain, " → "))
		}
	}
	return out
}

// findChain is a breadth-first search from from to the nearest package to
// accepts; nil when there is none.
func findChain(g graph, from string, to func(string) bool) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range g[p] {
			if _, seen := prev[imp]; seen {
				continue
			}
			prev[imp] = p
			if to(imp) {
				chain := []string{imp}
				for q := p; q != ""; q = prev[q] {
					chain = append(chain, q)
				}
				slices.Reverse(chain)
				return chain
			}
			queue = append(queue, imp)
		}
	}
	return nil
}

// loadGraph runs go list over the whole module. The imports of a package
// of ours's tests go in a node of their own (testsOf): most rules are
// about what ships, and tests may build fixtures with gitstore.
func loadGraph(t *testing.T) graph {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not installed")
	}
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,TestImports,XTestImports", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	g := graph{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		mine := p.ImportPath == module || strings.HasPrefix(p.ImportPath, module+"/")
		if mine {
			ours[short(p.ImportPath)] = true
		}
		g[short(p.ImportPath)] = shortAll(p.Imports)
		if tests := append(p.TestImports, p.XTestImports...); mine && len(tests) > 0 {
			g[testsOf(short(p.ImportPath))] = shortAll(tests)
		}
	}
	return g
}

func shortAll(pkgs []string) []string {
	out := make([]string, len(pkgs))
	for i, p := range pkgs {
		out[i] = short(p)
	}
	return out
}

// short drops the module's path from a package of ours.
func short(p string) string {
	if p == module {
		return "."
	}
	if rest, ok := strings.CutPrefix(p, module+"/"); ok {
		return rest
	}
	return p
}

// TestArrows holds the module to the arrows of doc/architecture.md.
func TestArrows(t *testing.T) {
	g := loadGraph(t)
	for _, want := range []string{"ledger", "gitstore", "gitstore/remote", "project", "project/pool", "sharing", "cmd/thoughtbox/internal/cli", "observatory", "export"} {
		if _, ok := g[want]; !ok {
			t.Fatalf("go list did not report package %s: the rules would check nothing", want)
		}
	}
	for _, r := range rules {
		for _, msg := range check(g, r) {
			t.Error(msg)
		}
	}
}

// TestCheckNamesTheChain: the checker finds a forbidden package however
// deep, names the shortest chain to it, and tells a direct import from
// one reached through its owner.
func TestCheckNamesTheChain(t *testing.T) {
	g := graph{
		"ledger":                      {"fmt", "ledger/x"},
		"ledger/x":                    {"internal/durable"},
		"internal/durable":            {"strings"},
		"observatory":                 {"events"},
		"events":                      {"project"},
		"project":                     {"gitstore"},
		"gitstore":                    {"github.com/go-git/go-git/v5", "ledger"},
		"gitstore/internal/wal":       {"gitstore/internal/object", "gitstore/internal/pack"},
		"gitstore/internal/object":    {"ledger"},
		"cmd/thoughtbox/internal/cli": {"project", "gitstore"},
		"export":                      {"ledger"},
		"config":                      {"ledger", "events"},
		"project/pool":                {"project", "gitstore"},
		// Tests are held only to the rules that say so: the CLI's, not
		// the observatory's.
		testsOf("cmd/thoughtbox/internal/cli"): {"project", "gitstore"},
		testsOf("observatory"):                 {"gitstore"},
	}
	for p := range g {
		if !strings.Contains(p, ".") && !strings.Contains(p, " ") && p != "fmt" && p != "strings" {
			ours[p] = true
		}
	}
	var got []string
	for _, r := range rules {
		got = append(got, check(g, r)...)
	}
	want := []string{
		"ledger imports nothing of ours: ledger → ledger/x",
		"gitstore/internal/* never imports ledger: gitstore/internal/object → ledger",
		"gitstore/internal/* never imports ledger: gitstore/internal/wal → gitstore/internal/object → ledger",
		"the CLI reaches Git only through project: cmd/thoughtbox/internal/cli imports gitstore",
		"the CLI reaches Git only through project: cmd/thoughtbox/internal/cli (tests) imports gitstore",
		"observatory never imports gitstore: observatory → events → project → gitstore",
		"the log (gitstore/internal/wal) knows only its records' parts, never the repository, packs or refs: gitstore/internal/wal → gitstore/internal/pack",
		"config never imports gitstore: config → events → project → gitstore",
		"project/pool opens projects only through project, never gitstore or the MCP server itself: project/pool imports gitstore",
		"the MCP server and the Observatory get other projects through functions the CLI hands them, never by opening them: observatory → events → project",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	g["gitstore"] = append(g["gitstore"], "github.com/go-git/go-git/v5/plumbing/transport/client")
	g["gitstore/remote"] = []string{"gitstore", "github.com/go-git/go-git/v5/plumbing/transport/client", "github.com/go-git/go-git/v5/plumbing/protocol/packp"}
	ours["gitstore/remote"] = true
	got = check(g, rules[3])
	if strings.Join(got, "\n") != "only gitstore/remote speaks to remotes (go-git's transports and wire protocol): gitstore imports github.com/go-git/go-git/v5/plumbing/transport/client" {
		t.Errorf("a transport import outside gitstore/remote: %q", got)
	}
	g["events"] = append(g["events"], "github.com/go-git/go-git/v5/plumbing")
	got = check(g, rules[2])
	if len(got) != 1 || got[0] != "nothing but gitstore imports go-git: events imports github.com/go-git/go-git/v5/plumbing" {
		t.Errorf("a direct go-git import outside gitstore: %q", got)
	}
}
