package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seamTrees are the packages that hold a ledger.Store (or a part of one)
// and must reach its parts through the interface, never by asserting a
// wider type on it: an assertion is where a wrapper that lacks a method
// loses a capability without a word.
var seamTrees = []string{"ledger", "gateway", "notebook", "project", "observatory", "cmd"}

// checkStoreAssertions parses the non-test .go files under the trees of
// root and returns one message per type assertion (x.(T), or a type
// switch) whose operand is named store (a variable or a field).
func checkStoreAssertions(root string, trees []string) (msgs []string, files int, err error) {
	fset := token.NewFileSet()
	for _, tree := range trees {
		err := filepath.WalkDir(filepath.Join(root, tree), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			files++
			rel, _ := filepath.Rel(root, path)
			ast.Inspect(f, func(n ast.Node) bool {
				ta, ok := n.(*ast.TypeAssertExpr)
				if ok && namedStore(ta.X) {
					msgs = append(msgs, fmt.Sprintf("%s:%d: a type assertion on a store: call the part of ledger.Store instead (a wrapper without the method then fails to compile)",
						filepath.ToSlash(rel), fset.Position(ta.Pos()).Line))
				}
				return true
			})
			return nil
		})
		if err != nil {
			return nil, files, err
		}
	}
	return msgs, files, nil
}

func namedStore(x ast.Expr) bool {
	switch e := x.(type) {
	case *ast.Ident:
		return strings.EqualFold(e.Name, "store")
	case *ast.SelectorExpr:
		return strings.EqualFold(e.Sel.Name, "store")
	case *ast.ParenExpr:
		return namedStore(e.X)
	}
	return false
}

// TestNoStoreAssertions: the ledger's storage is one composed interface
// (ledger.Store); no package that holds one looks for a capability by
// type assertion.
func TestNoStoreAssertions(t *testing.T) {
	msgs, files, err := checkStoreAssertions(moduleRoot(t), seamTrees)
	reportFindings(t, msgs, files, err, 50)
}

// TestCheckStoreAssertionsNamesOffenders checks the checker on a package
// written for it.
func TestCheckStoreAssertionsNamesOffenders(t *testing.T) {
	root := t.TempDir()
	src := `package p

type s struct{ store any }

func (x *s) f(store any) {
	_, _ = x.store.(interface{ Prepare() })
	switch store.(type) {
	}
	_, _ = (x.store).(error)
	var other any
	_, _ = other.(error)
}
`
	writeFile(t, filepath.Join(root, "p", "p.go"), src)
	writeFile(t, filepath.Join(root, "p", "p_test.go"), "package p\n\nvar store any\nvar _, _ = store.(error)\n")
	msgs, files, err := checkStoreAssertions(root, []string{"p"})
	if err != nil {
		t.Fatal(err)
	}
	if files != 1 || len(msgs) != 3 {
		t.Fatalf("%d files, messages %q; want 1 file and lines 6, 7 and 9 named", files, msgs)
	}
	for i, line := range []string{"p/p.go:6:", "p/p.go:7:", "p/p.go:9:"} {
		if !strings.HasPrefix(msgs[i], line) {
			t.Errorf("message %d = %q, want it to start with %q", i, msgs[i], line)
		}
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
