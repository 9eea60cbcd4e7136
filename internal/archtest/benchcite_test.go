package archtest

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// benchPage is the file whose sections code comments and documents cite.
// It is spelled in two parts so that this file's own examples are not
// read as citations.
const benchPage = "BENCHMARKS" + ".md"

var (
	// quotedCite matches a section named in quotes after the page's name,
	// in every form the project writes: `<page>, "S"`, `<page> ("S")`,
	// `<page>'s "S"`, `<page>: "S"` and `<page> "S"`.
	quotedCite = regexp.MustCompile(regexp.QuoteMeta(benchPage) + `(?:'s)?[,:]?\s*\(?\s*["“]([^"”]+)["”]`)
	// bareCite matches the page's name, a comma and anything but a
	// quote: a section named without quotes cannot be checked.
	bareCite = regexp.MustCompile(regexp.QuoteMeta(benchPage) + `,\s*([^"“\s][^\s,.;)]*)`)
	// anchorLink matches a link into the page by an anchor.
	anchorLink = regexp.MustCompile(regexp.QuoteMeta(benchPage) + `#([\w-]+)`)
)

// citation is one reference to a section of the benchmarks page: the file
// and line where it starts, and what it names (a heading, or an anchor).
type citation struct {
	File, Name string
	Line       int
	Anchor     bool
	Bare       bool // named without quotes
}

// TestBenchmarksCitations: every section of BENCHMARKS.md that a .go or
// .md file of the module cites by name exists there as a heading, and
// every link to one of its anchors leads to a heading. The page's
// sections get renamed as it is rewritten; a comment that cites a gone
// section sends its reader nowhere.
func TestBenchmarksCitations(t *testing.T) {
	root := moduleRoot(t)
	page, err := os.ReadFile(filepath.Join(root, benchPage))
	if err != nil {
		t.Fatal(err)
	}
	heads := headings(string(page))
	slugs := map[string]bool{}
	for _, h := range heads {
		slugs[slug(h)] = true
	}
	cites := scanModule(t, root)
	if len(cites) == 0 {
		t.Fatalf("no citation of %s found under %s: the scan reads nothing", benchPage, root)
	}
	failed := false
	for _, c := range cites {
		switch {
		case c.Bare:
			t.Errorf("%s:%d: %s, %s…: name the section in quotes, as its heading reads", c.File, c.Line, benchPage, c.Name)
		case c.Anchor && !slugs[c.Name]:
			t.Errorf("%s:%d: %s#%s: no heading of %s has that anchor", c.File, c.Line, benchPage, c.Name, benchPage)
		case !c.Anchor && !slices.Contains(heads, c.Name):
			t.Errorf("%s:%d: %s cites %q, which is not one of its headings", c.File, c.Line, benchPage, c.Name)
		default:
			continue
		}
		failed = true
	}
	if failed {
		t.Logf("the headings of %s:\n%s", benchPage, strings.Join(heads, "\n"))
	}
}

// TestCitationsFound pins what the scan reads as a citation, so that a
// regular expression that matches nothing cannot pass the test above.
func TestCitationsFound(t *testing.T) {
	for _, tc := range []struct {
		name, file, text string
		want             []citation
	}{
		{"comma, over two comment lines", "a.go",
			"// costs a millisecond (" + benchPage + ", \"Tuning: what\n// each trick\") and more",
			[]citation{{File: "a.go", Line: 1, Name: "Tuning: what each trick"}}},
		{"in parentheses", "a.go", "// " + benchPage + " (\"Fuzzing\") says how",
			[]citation{{File: "a.go", Line: 1, Name: "Fuzzing"}}},
		{"possessive, in markdown", "a.md", "intro\n\nthe rows of " + benchPage + "'s \"Memory (RSS)\".",
			[]citation{{File: "a.md", Line: 3, Name: "Memory (RSS)"}}},
		{"unquoted", "a.go", "// measured (" + benchPage + ", issue 12)",
			[]citation{{File: "a.go", Line: 1, Name: "issue", Bare: true}}},
		{"anchor", "a.md", "see [the rows](" + benchPage + "#memory-rss)",
			[]citation{{File: "a.md", Line: 1, Name: "memory-rss", Anchor: true}}},
		{"the page alone is no citation", "a.md", "- [" + benchPage + "](" + benchPage + "): how fast it is", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := citations(tc.file, tc.text)
			if !slices.Equal(got, tc.want) {
				t.Errorf("citations(%q) = %+v, want %+v", tc.text, got, tc.want)
			}
		})
	}
	heads := headings("# Page\n\n## Memory (RSS)\n\n```\n# a shell comment\n```\n\n### CI: `.ci/run`, stage by stage\n")
	if want := []string{"Page", "Memory (RSS)", "CI: `.ci/run`, stage by stage"}; !slices.Equal(heads, want) {
		t.Errorf("headings = %q, want %q", heads, want)
	}
	if got, want := slug("CI: how long each stage of `.ci/run` takes"), "ci-how-long-each-stage-of-cirun-takes"; got != want {
		t.Errorf("slug = %q, want %q", got, want)
	}
}

// moduleRoot is the directory of the module's go.mod, above this package.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// scanModule reads the citations of every .go and .md file under root.
func scanModule(t *testing.T, root string) []citation {
	var out []citation
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".md" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		out = append(out, citations(filepath.ToSlash(rel), string(b))...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// citations finds the references to the page's sections in text. Lines
// are joined (without their indentation and a Go comment's slashes), so
// that a section's name broken over two lines is read whole; each
// citation is reported at the line where the page's name stands.
func citations(file, text string) []citation {
	var joined strings.Builder
	var starts []int // offset in joined of each line
	for line := range strings.Lines(text) {
		s := strings.TrimSpace(line)
		if strings.HasSuffix(file, ".go") {
			s = strings.TrimSpace(strings.TrimPrefix(s, "//"))
		}
		if joined.Len() > 0 {
			joined.WriteByte(' ')
		}
		starts = append(starts, joined.Len())
		joined.WriteString(s)
	}
	all := joined.String()
	lineAt := func(off int) int {
		i, found := slices.BinarySearch(starts, off)
		if !found {
			i--
		}
		return i + 1
	}
	var out []citation
	for _, m := range quotedCite.FindAllStringSubmatchIndex(all, -1) {
		out = append(out, citation{File: file, Line: lineAt(m[0]), Name: collapse(all[m[2]:m[3]])})
	}
	for _, m := range bareCite.FindAllStringSubmatchIndex(all, -1) {
		out = append(out, citation{File: file, Line: lineAt(m[0]), Name: all[m[2]:m[3]], Bare: true})
	}
	for _, m := range anchorLink.FindAllStringSubmatchIndex(all, -1) {
		out = append(out, citation{File: file, Line: lineAt(m[0]), Name: all[m[2]:m[3]], Anchor: true})
	}
	slices.SortStableFunc(out, func(a, b citation) int { return a.Line - b.Line })
	return out
}

// headings lists the page's headings (any level), outside fenced code,
// where a shell comment also starts with '#'.
func headings(page string) []string {
	var out []string
	fenced := false
	sc := bufio.NewScanner(strings.NewReader(page))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		level := len(line) - len(strings.TrimLeft(line, "#"))
		if level >= 1 && level <= 6 && strings.HasPrefix(line[level:], " ") {
			out = append(out, collapse(line[level:]))
		}
	}
	return out
}

// collapse trims s and turns each run of white space into one space.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// slug is the anchor GitHub gives a heading: lower case, punctuation
// dropped, spaces as hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
