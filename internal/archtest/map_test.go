package archtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mapSection is the part of doc/architecture.md that draws the packages.
const mapSection = "## Packages and who may import whom"

// TestEveryPackageIsOnTheMap holds doc/architecture.md's map of the
// packages to the code: every package of the module is named in it, and
// every package its table has a row for exists.
func TestEveryPackageIsOnTheMap(t *testing.T) {
	root := moduleRoot(t)
	page, err := os.ReadFile(filepath.Join(root, "doc", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, ok := packagesSection(string(page))
	if !ok {
		t.Fatalf("doc/architecture.md has no section %q", mapSection)
	}
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		if p = strings.TrimPrefix(p, module+"/"); p != module {
			pkgs = append(pkgs, p)
		}
	}
	for _, msg := range checkMap(section, pkgs, func(dir string) bool {
		m, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(dir), "*.go"))
		return len(m) > 0
	}) {
		t.Error(msg)
	}
}

// packagesSection returns the map's section of the page.
func packagesSection(page string) (string, bool) {
	_, rest, ok := strings.Cut(page, mapSection+"\n")
	if !ok {
		return "", false
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest, true
}

// tableRow is a row of the map's table: its first cell, a package path.
var tableRow = regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")

// checkMap returns a message for each package the section's drawing (its
// code block) and table rows do not name, and for each row whose package
// isDir says is not there. Prose does not count: "why" or "events" would
// be found in any paragraph.
func checkMap(section string, pkgs []string, isDir func(string) bool) []string {
	var drawing strings.Builder
	for i, part := range strings.Split(section, "```") {
		if i%2 == 1 {
			drawing.WriteString(part + "\n")
		}
	}
	rows := map[string]bool{}
	for _, m := range tableRow.FindAllStringSubmatch(section, -1) {
		rows[strings.TrimSuffix(m[1], "/")] = true
	}
	var msgs []string
	for _, p := range pkgs {
		named := regexp.MustCompile(`(^|[^\w/.-])` + regexp.QuoteMeta(p) + `($|[^\w/-])`)
		if !rows[p] && !named.MatchString(drawing.String()) {
			msgs = append(msgs, "doc/architecture.md, \""+strings.TrimPrefix(mapSection, "## ")+"\", names package "+p+" neither in its drawing nor as a row of its table")
		}
	}
	for _, m := range tableRow.FindAllStringSubmatch(section, -1) {
		if dir := strings.TrimSuffix(m[1], "/"); !isDir(dir) {
			msgs = append(msgs, "doc/architecture.md's package table has a row for "+m[1]+", which holds no Go package")
		}
	}
	return msgs
}

// The check names a package the map leaves out, one it names only as a
// longer path's prefix, one only prose names, and a row for a package
// that is gone.
func TestCheckMapNamesWhatIsMissing(t *testing.T) {
	section := "```\nledger ──► gitstore/internal/repo\n```\n\nProse names why.\n\n| package | what |\n|---|---|\n| `ledger/` | the domain |\n| `events` | the stream |\n| `gone` | was here |\n"
	msgs := checkMap(section, []string{"ledger", "events", "gitstore/internal", "gitstore/internal/repo", "bench/x", "why"}, func(dir string) bool { return dir != "gone" })
	want := []string{"package gitstore/internal ", "package bench/x ", "package why ", "row for gone"}
	if len(msgs) != len(want) {
		t.Fatalf("got %d messages %q, want %d", len(msgs), msgs, len(want))
	}
	for i, w := range want {
		if !strings.Contains(msgs[i], w) {
			t.Errorf("message %d = %q, want it to name %q", i, msgs[i], w)
		}
	}
}
