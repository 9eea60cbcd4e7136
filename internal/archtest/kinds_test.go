package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Which kind of entity a ref is (a session's chain or links, the knowledge
// zone, a notebook) is said by one table, gitstore/kinds.go, over the
// areas gitstore/layout.go spells. A kind added by testing ref names
// wherever it is needed is the scattering that table replaced; these
// rules keep it from coming back.

// kindFiles are the only files that may spell a kind's ref names.
var kindFiles = map[string]bool{"gitstore/kinds.go": true, "gitstore/layout.go": true}

// kindPackages are the folders whose files the rules read (each folder's
// own files, not its sub-packages'): the store, its sharing, and the
// store's parts that live under gitstore/internal: handed the paths,
// chains and codecs they need, they spell no kind's either.
var kindPackages = []string{"gitstore", "gitstore/remote", "gitstore/internal/access", "gitstore/internal/sessionlock", "gitstore/internal/verify", "gitstore/internal/fsck", "gitstore/internal/manifest", "gitstore/internal/chain"}

// kindSpellingRule says why a string literal spells a kind's ref name,
// or "". In the store, the areas of the kinds and the refs they make
// under a shared root are ref names (a tree folder is spelled without the
// slash, and an error message in words). In remote, which knows a kind
// only through the store's methods, so is any kind's name.
func kindSpellingRule(pkg, lit string) string {
	for _, root := range []string{"refs/heads/", "refs/thoughtbox/v1/"} {
		for _, area := range []string{"sessions", "knowledge", "notebooks"} {
			if strings.Contains(lit, root+area) {
				return "a kind's ref under a shared root"
			}
		}
	}
	if strings.Contains(lit, "refs/thoughtbox/v1") {
		return "the code layout's shared root"
	}
	switch lit {
	case "sessions/", "knowledge", "notebooks/", "/links":
		return "a kind's area or ref leaf"
	}
	if pkg == "gitstore/remote" {
		switch strings.Trim(lit, "/") {
		case "sessions", "knowledge", "notebooks", "links", "branches", "main":
			return "a kind's name or a part of its refs"
		}
	}
	return ""
}

// standaloneNames are gitstore's names for the standalone layout's refs,
// kept for tests: code that uses them misreads a ledger kept in a code
// repository, whose refs live under another root.
var standaloneNames = map[string]bool{"KnowledgeRef": true, "SessionRefPrefix": true, "SessionOfRef": true,
	"NotebookOfRef": true, "SharedRef": true, "ValidSharedRef": true}

// checkKindSpellings returns one message per string literal, in the
// non-test files of pkgs (below root) other than allowed, that
// kindSpellingRule refuses, and per use of one of standaloneNames; files
// counts the files read.
func checkKindSpellings(root string, pkgs []string, allowed map[string]bool) (msgs []string, files int, err error) {
	fset := token.NewFileSet()
	for _, pkg := range pkgs {
		paths, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pkg), "*.go"))
		if err != nil {
			return nil, files, err
		}
		for _, path := range paths {
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if strings.HasSuffix(path, "_test.go") || allowed[rel] {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, files, err
			}
			files++
			ast.Inspect(f, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "gitstore" && standaloneNames[sel.Sel.Name] {
						msgs = append(msgs, fmt.Sprintf("%s:%d: gitstore.%s names the standalone layout's refs: ask the store's own layout (its method of the same name, or the kinds table)",
							rel, fset.Position(sel.Pos()).Line, sel.Sel.Name))
					}
					return true
				}
				bl, ok := n.(*ast.BasicLit)
				if !ok || bl.Kind != token.STRING {
					return true
				}
				lit, err := strconv.Unquote(bl.Value)
				if err != nil {
					return true
				}
				if why := kindSpellingRule(pkg, lit); why != "" {
					msgs = append(msgs, fmt.Sprintf("%s:%d: %q spells %s: add or ask the kinds table (gitstore/kinds.go) instead",
						rel, fset.Position(bl.Pos()).Line, lit, why))
				}
				return true
			})
		}
	}
	return msgs, files, nil
}

// TestKindsOnlyThroughTheTable: outside the kinds table and the layout,
// gitstore and gitstore/remote spell no kind's ref names.
func TestKindsOnlyThroughTheTable(t *testing.T) {
	root := moduleRoot(t)
	for f := range kindFiles {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(f))); err != nil {
			t.Fatalf("allowed file %s: %v (moved? update kindFiles)", f, err)
		}
	}
	msgs, files, err := checkKindSpellings(root, kindPackages, kindFiles)
	reportFindings(t, msgs, files, err, 40)
}

// TestCheckKindSpellingsNamesOffenders checks the checker on packages
// written for it.
func TestCheckKindSpellingsNamesOffenders(t *testing.T) {
	root := t.TempDir()
	store := `package gitstore

const a = "refs/heads/notebooks/"
const b = "notebooks/"
const c = "notebooks" // a tree folder
var d = "%s: sessions/ holds %d entries"
var e = root + "/links"
var f = "refs/thoughtbox/v1/"
`
	remote := `package remote

var a = "knowledge"
var b = "/branches/"
var c = "the knowledge zone"
var d = gitstore.KnowledgeRef
var e = s.SessionOfRef(ref)
`
	writeFile(t, filepath.Join(root, "gitstore", "store.go"), store)
	writeFile(t, filepath.Join(root, "gitstore", "kinds.go"), `package gitstore

const areas = "sessions/"
`)
	writeFile(t, filepath.Join(root, "gitstore", "store_test.go"), "package gitstore\n\nvar t = \"knowledge\"\n")
	writeFile(t, filepath.Join(root, "gitstore", "remote", "push.go"), remote)
	msgs, files, err := checkKindSpellings(root, kindPackages, map[string]bool{"gitstore/kinds.go": true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"gitstore/store.go:3:", "gitstore/store.go:4:", "gitstore/store.go:7:", "gitstore/store.go:8:",
		"gitstore/remote/push.go:3:", "gitstore/remote/push.go:4:", "gitstore/remote/push.go:6:"}
	if files != 2 || len(msgs) != len(want) {
		t.Fatalf("%d files, messages %q; want 2 files and %q named", files, msgs, want)
	}
	for i, w := range want {
		if !strings.HasPrefix(msgs[i], w) {
			t.Errorf("message %d = %q, want it to start with %q", i, msgs[i], w)
		}
	}
}
