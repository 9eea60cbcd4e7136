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

	"github.com/thoughtbox/thoughtbox/config"
)

// internalVars are THOUGHTBOX_ names the product reads that are not
// settings, each with why it stays out of the README.
var internalVars = map[string]string{
	"THOUGHTBOX_SANDBOX_CHILD": "marks the sandbox's own child process; set by the parent, never by a user",
}

// spelledElsewhere are the names a package spells besides
// config/settings.go, by file, each with why it cannot use config's
// constant and what keeps the two spellings equal.
var spelledElsewhere = map[string]string{
	"observatory/api.go THOUGHTBOX_OBSERVATORY_HTTP_API": "observatory may not import config (observatory/arrows_test.go); TestAPIOffNamesTheSetting compares its spelling with config.EnvObservatoryHTTPAPI",
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

// A settingUse is one THOUGHTBOX_ name in a string literal of the
// product: whole when the literal is the name itself (or the name and
// "=", as in an environment entry), a spelling of the name rather than
// prose that mentions it.
type settingUse struct {
	name, file string
	line       int
	whole      bool
}

// productSettings maps each THOUGHTBOX_ name in a string literal of the
// product's Go files to the first file that has it.
func productSettings(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, u := range settingUses(t, root) {
		if _, seen := out[u.name]; !seen {
			out[u.name] = u.file
		}
	}
	return out
}

// settingUses are the THOUGHTBOX_ names in the string literals of the
// product's Go files (tests, bench/, systest/, scriptbin and testdata
// left out), in file order.
func settingUses(t *testing.T, root string) []settingUse {
	t.Helper()
	var out []settingUse
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
			whole := strings.HasSuffix(s, "THOUGHTBOX_") // a name being built
			if whole {
				out = append(out, settingUse{name: s, file: filepath.ToSlash(rel), line: fset.Position(lit.Pos()).Line, whole: true})
			}
			for _, name := range settingName.FindAllString(s, -1) {
				whole := s == name || s == name+"="
				out = append(out, settingUse{name: name, file: filepath.ToSlash(rel), line: fset.Position(lit.Pos()).Line, whole: whole})
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

// settingsTable is the one file that spells the settings' names.
const settingsTable = "config/settings.go"

// TestSettingsDeclaredOnce: a THOUGHTBOX_ name is spelled as a name (the
// whole of a string literal, or the name and "=") only in
// config/settings.go, and there once: everything else reads a setting
// through config's constant, so a renamed setting cannot leave a reader
// behind. Prose (messages, help) may mention a setting, but only one that
// config.Settings has.
func TestSettingsDeclaredOnce(t *testing.T) {
	table := map[string]bool{}
	for _, s := range config.Settings {
		table[s.Name] = true
	}
	declared := map[string]int{}
	excused := map[string]bool{}
	for _, u := range settingUses(t, moduleRoot(t)) {
		_, internal := internalVars[u.name]
		switch {
		case internal:
		case u.whole && u.file == settingsTable:
			declared[u.name]++
		case u.whole && spelledElsewhere[u.file+" "+u.name] != "":
			excused[u.file+" "+u.name] = true
		case u.whole:
			t.Errorf("%s:%d spells %q: read the setting through config's constant (%s declares every name once)", u.file, u.line, u.name, settingsTable)
		case !table[u.name]:
			t.Errorf("%s:%d mentions %s, which config.Settings has no row for", u.file, u.line, u.name)
		}
	}
	for where := range spelledElsewhere {
		if !excused[where] {
			t.Errorf("spelledElsewhere lists %s, which no longer spells it: drop the entry", where)
		}
	}
	if len(declared) < 40 {
		t.Fatalf("%s spells only %d names; the scan is broken", settingsTable, len(declared))
	}
	for name, n := range declared {
		if n > 1 {
			t.Errorf("%s spells %s %d times; once is the rule (rows use the constant)", settingsTable, name, n)
		}
		if !table[name] {
			t.Errorf("%s declares %s but config.Settings has no row for it", settingsTable, name)
		}
	}
}

// TestSettingsTableIsTheREADMEs: config.Settings and the README's
// settings table list the same settings, each with the same flag.
func TestSettingsTableIsTheREADMEs(t *testing.T) {
	rows := readmeRows(t, moduleRoot(t))
	if len(rows) < 40 {
		t.Fatalf("found only %d rows in README.md's settings table; the parse is broken", len(rows))
	}
	seen := map[string]bool{}
	for _, s := range config.Settings {
		if seen[s.Name] {
			t.Errorf("config.Settings has %s twice", s.Name)
		}
		seen[s.Name] = true
		if s.Meaning == "" {
			t.Errorf("config.Settings: %s has no meaning", s.Name)
		}
		flag, ok := rows[s.Name]
		if !ok {
			t.Errorf("config.Settings has %s; README.md's settings table does not", s.Name)
			continue
		}
		if flag != s.Flag {
			t.Errorf("%s: flag %q in config.Settings, %q in README.md", s.Name, s.Flag, flag)
		}
	}
	for name := range rows {
		if !seen[name] {
			t.Errorf("README.md's settings table has %s; config.Settings does not", name)
		}
	}
}

var readmeName = regexp.MustCompile("`([A-Z][A-Z0-9_]*)`")

// readmeRows maps each variable the README's settings table names (in a
// row's first cell, between backquotes) to its row's flag cell, without
// the backquotes.
func readmeRows(t *testing.T, root string) map[string]string {
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
	out := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "| ") || len(cells) < 4 {
			continue
		}
		flag := strings.Trim(strings.TrimSpace(cells[2]), "`")
		for _, m := range readmeName.FindAllStringSubmatch(cells[1], -1) {
			out[m[1]] = flag
		}
	}
	return out
}

// TestSettingUsesTellsNamesFromProse checks the scanner: a literal that is
// a name (or a name and "=", or a name being built) is a spelling; a name
// inside a longer literal is prose; tests and bench/ are not read.
func TestSettingUsesTellsNamesFromProse(t *testing.T) {
	root := t.TempDir()
	write := func(rel, body string) {
		path := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/a.go", "package a\n\nconst x = \"THOUGHTBOX_ONE\"\n\nvar y = `set THOUGHTBOX_TWO to 3`\n\nvar z = \"THOUGHTBOX_THREE=\"\n\nvar w = \"THOUGHTBOX_\"\n")
	write("a/a_test.go", "package a\n\nconst t = \"THOUGHTBOX_TEST\"\n")
	write("bench/b.go", "package b\n\nconst b = \"THOUGHTBOX_BENCH\"\n")
	var got []string
	for _, u := range settingUses(t, root) {
		got = append(got, u.file+":"+strconv.Itoa(u.line)+" "+u.name+" "+strconv.FormatBool(u.whole))
	}
	want := []string{"a/a.go:3 THOUGHTBOX_ONE true", "a/a.go:5 THOUGHTBOX_TWO false", "a/a.go:7 THOUGHTBOX_THREE true", "a/a.go:9 THOUGHTBOX_ true"}
	if !slices.Equal(got, want) {
		t.Errorf("uses:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
