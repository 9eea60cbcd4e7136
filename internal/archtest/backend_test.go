package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// backendPackages are the folders above gitstore/internal/repo whose
// non-test files may not assert a concrete backend: the store holds its
// disk or memory backend explicitly (Store.disk, Store.mem), so what only
// one of them offers is asked of it, never found by asserting the type of
// a repo.Repo. The store's parts that moved under gitstore/internal are
// held to the same rule as the root they came from.
var backendPackages = []string{"gitstore", "gitstore/remote", "gitstore/internal/access", "gitstore/internal/sessionlock",
	"gitstore/internal/verify", "gitstore/internal/fsck", "gitstore/internal/manifest", "gitstore/internal/chain"}

// namesRepoType reports whether a type expression is one of package
// repo's types (repo.FS, *repo.Mem, ...).
func namesRepoType(e ast.Expr) bool {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "repo"
}

// checkBackendAssertions returns one message per type assertion, or case
// of a type switch, on a type of package repo in the non-test files of
// pkgs (below root); files counts the files read.
func checkBackendAssertions(root string, pkgs []string) (msgs []string, files int, err error) {
	fset := token.NewFileSet()
	for _, pkg := range pkgs {
		paths, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pkg), "*.go"))
		if err != nil {
			return nil, files, err
		}
		for _, path := range paths {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, files, err
			}
			files++
			rel, _ := filepath.Rel(root, path)
			report := func(n ast.Node) {
				msgs = append(msgs, fmt.Sprintf("%s:%d: asserts a concrete backend: ask the store's disk or mem field instead",
					filepath.ToSlash(rel), fset.Position(n.Pos()).Line))
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.TypeAssertExpr:
					if n.Type != nil && namesRepoType(n.Type) {
						report(n)
					}
				case *ast.TypeSwitchStmt:
					for _, c := range n.Body.List {
						for _, t := range c.(*ast.CaseClause).List {
							if namesRepoType(t) {
								report(t)
							}
						}
					}
				}
				return true
			})
		}
	}
	return msgs, files, nil
}

// TestNoBackendAssertions: nothing above gitstore/internal/repo asserts
// which backend a store has.
func TestNoBackendAssertions(t *testing.T) {
	msgs, files, err := checkBackendAssertions(moduleRoot(t), backendPackages)
	reportFindings(t, msgs, files, err, 40)
}

// reportFindings fails t with a checker's error or each of its findings,
// and when it read fewer than least files: a rule that reads nothing
// passes whatever the code does.
func reportFindings(t *testing.T, msgs []string, files int, err error, least int) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if files < least {
		t.Fatalf("only %d files checked (at least %d expected): the packages moved?", files, least)
	}
	for _, m := range msgs {
		t.Error(m)
	}
}

// TestCheckBackendAssertionsNamesOffenders checks the checker on a
// package written for it.
func TestCheckBackendAssertionsNamesOffenders(t *testing.T) {
	root := t.TempDir()
	src := `package gitstore

func f(be any) {
	_, _ = be.(*repo.FS)
	switch be.(type) {
	case *repo.Mem, error:
	}
	_, _ = be.(error)
	_, _ = be.(repo.Repo)
}
`
	writeFile(t, filepath.Join(root, "gitstore", "s.go"), src)
	writeFile(t, filepath.Join(root, "gitstore", "s_test.go"), "package gitstore\n\nvar _, _ = be.(*repo.FS)\n")
	msgs, files, err := checkBackendAssertions(root, []string{"gitstore"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"gitstore/s.go:4:", "gitstore/s.go:6:", "gitstore/s.go:9:"}
	if files != 1 || len(msgs) != len(want) {
		t.Fatalf("%d files, messages %q; want 1 file and %q named", files, msgs, want)
	}
	for i, w := range want {
		if !strings.HasPrefix(msgs[i], w) {
			t.Errorf("message %d = %q, want it to start with %q", i, msgs[i], w)
		}
	}
}
