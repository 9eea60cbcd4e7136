package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// internalVars are THOUGHTBOX_ names the product reads that are not
// settings, each with why it stays out of the README.
var internalVars = map[string]string{
	"THOUGHTBOX_SANDBOX_CHILD": "marks the sandbox's own child process; set by the parent, never by a user",
}

var settingName = regexp.MustCompile(`THOUGHTBOX_[A-Z0-9_]*[A-Z0-9]`)

// TestSettingsAreDocumented fails when the product reads a THOUGHTBOX_
// variable that the README's settings table does not list: a user must
// find every setting in one place. Test files, bench/, systest/ and
// cmd/thoughtbox/internal/scriptbin (knobs of the tests and benchmarks)
// are left out.
func TestSettingsAreDocumented(t *testing.T) {
	root := moduleRoot(t)
	documented := readmeSettings(t, root)
	read := productSettings(t, root)
	if len(read) < 20 {
		t.Fatalf("found only %d settings read in the code; the scan is broken", len(read))
	}
	for name, where := range read {
		if _, ok := internalVars[name]; ok {
			continue
		}
		if !documented[name] {
			t.Errorf("%s is read in %s but is not in README.md's settings table", name, where)
		}
	}
	for name := range internalVars {
		if _, ok := read[name]; !ok {
			t.Errorf("internalVars lists %s, which the code no longer reads", name)
		}
	}
}

// readmeSettings are the names in the rows of the README's "## Settings"
// table.
func readmeSettings(t *testing.T, root string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Settings\n")
	if !ok {
		t.Fatal(`README.md has no "## Settings" section`)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	out := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if cell, _, ok := strings.Cut(strings.TrimPrefix(line, "| "), " |"); ok && strings.HasPrefix(line, "| ") {
			for _, name := range settingName.FindAllString(cell, -1) {
				out[name] = true
			}
		}
	}
	return out
}

// productSettings maps each THOUGHTBOX_ name in a string literal of the
// product's Go files to the first file that has it.
func productSettings(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if slices.Contains([]string{".git", "bench", "systest", "scriptbin", "testdata", "node_modules"}, d.Name()) && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, name := range settingName.FindAllString(s, -1) {
				if _, seen := out[name]; !seen {
					out[name] = filepath.ToSlash(rel)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
