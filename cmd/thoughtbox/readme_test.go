package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestREADME runs the README's command-line examples, top to bottom, on a
// fresh data directory: every "$ thoughtbox …" line of its indented blocks
// is run, and the lines after it must be what it prints. So the README
// cannot drift from what the program does. Blocks of plain thoughtbox and
// git command lines (the sharing walk-through) are run too, in order, and
// must succeed.
//
// In the expected output "…" stands for anything, timestamps for any
// timestamp, runs of spaces (table columns) for any run, and ~ for the home
// directory. Blocks without "$ " prompts are prose and are not run.
func TestREADME(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the README's sharing walk-through runs it")
	}
	script, n, err := readmeScript("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Fatalf("the README has %d runnable examples; the test reads it wrongly", n)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "readme.txtar"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:   dir,
		Setup: scriptSetup,
	})
}

var (
	stampRE     = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d[:-]\d\d[:-]\d\d(\\\.\d+)?Z`)
	spacesRE    = regexp.MustCompile(`  +`)
	readmeIDRE  = regexp.MustCompile(`^\$ thoughtbox start .*\n([0-9a-f-]{36})$`)
	promptBlock = "    $ "
)

// readmeScript turns the README's prompt blocks into a testscript script
// and says how many commands it holds.
func readmeScript(path string) (string, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	var b strings.Builder
	b.WriteString("env HOME=$WORK\nenv THOUGHTBOX_DATA_DIR=\n")
	n := 0
	var cmd string
	var want []string
	flush := func() {
		if cmd == "" {
			return
		}
		if m := readmeIDRE.FindStringSubmatch("$ " + cmd + "\n" + strings.Join(want, "\n")); m != nil {
			// The README's session id is the one the session gets.
			b.WriteString("env THOUGHTBOX_TEST_SESSION_ID=" + m[1] + "\n")
		}
		b.WriteString("exec " + cmd + "\n")
		for _, w := range want {
			if strings.TrimSpace(w) == "" {
				continue
			}
			b.WriteString("stdout '^" + lineRegexp(w) + "$'\n")
		}
		n++
		cmd, want = "", nil
	}
	sc := bufio.NewScanner(f)
	inBlock := false
	var plain []string // a block without prompts, kept until it ends
	endPlain := func() {
		if runnable(plain) {
			for _, l := range plain {
				if l = strings.TrimSpace(l); l != "" {
					b.WriteString("exec " + substitute(l) + "\n")
					n++
				}
			}
		}
		plain = nil
	}
	for sc.Scan() {
		line := sc.Text()
		if !inBlock && strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, promptBlock) {
			plain = append(plain, line)
			continue
		}
		if plain != nil && (line == "" || strings.HasPrefix(line, "    ")) && !strings.HasPrefix(line, promptBlock) {
			plain = append(plain, line)
			continue
		}
		endPlain()
		switch {
		case strings.HasPrefix(line, promptBlock):
			flush()
			c := strings.TrimPrefix(line, promptBlock)
			if strings.HasPrefix(c, "thoughtbox ") && !isServer(c) {
				cmd = c
			}
			inBlock = true
		case inBlock && strings.HasPrefix(line, "    ") && cmd != "":
			want = append(want, strings.TrimPrefix(line, "    "))
		case inBlock && line == "":
			// A blank line inside a block belongs to the output.
			if cmd != "" {
				want = append(want, "")
			}
		default:
			flush()
			inBlock = false
		}
	}
	flush()
	endPlain()
	return b.String(), n, sc.Err()
}

// runnable says whether a block without prompts is a list of commands to
// run: thoughtbox and git command lines only (a trailing # comment allowed).
func runnable(block []string) bool {
	seen := false
	for _, l := range block {
		l = strings.TrimSpace(l)
		switch {
		case l == "":
		case isServer(l):
			// A server runs until stopped: such a block shows how to
			// start one, it is not a walk-through.
			return false
		case strings.HasPrefix(l, "thoughtbox ") || strings.HasPrefix(l, "git "):
			seen = true
		default:
			return false
		}
	}
	return seen
}

// substitute makes a README command line runnable here: its comment goes,
// the example remote lives in the work directory, and <id> is the README's
// session.
func substitute(l string) string {
	if i := strings.Index(l, " #"); i >= 0 {
		l = strings.TrimSpace(l[:i])
	}
	l = strings.ReplaceAll(l, "/srv/git/", "$WORK/srv/git/")
	l = strings.ReplaceAll(l, "~/", "$HOME/")
	return strings.ReplaceAll(l, "<id>", "$THOUGHTBOX_TEST_SESSION_ID")
}

// lineRegexp makes an expected output line into a regular expression, in
// single quotes for testscript.
func lineRegexp(line string) string {
	re := regexp.QuoteMeta(strings.TrimRight(line, " "))
	re = strings.ReplaceAll(re, "…", ".*")
	re = stampRE.ReplaceAllString(re, `\d{4}-\d\d-\d\dT\d\d[:-]\d\d[:-]\d\d(\.\d+)?Z`)
	re = strings.ReplaceAll(re, "~/", ".*/")
	re = spacesRE.ReplaceAllString(re, " +")
	return strings.ReplaceAll(re, "'", "''")
}

// isServer says whether a command line starts a server (serve,
// observatory), which never ends on its own.
func isServer(l string) bool {
	for _, f := range strings.Fields(l) {
		if f == "serve" || f == "observatory" {
			return true
		}
	}
	return false
}

// TestREADMEGoVersion: the Go version the README asks for is the one
// go.mod's go line names, so that building from a clone as the README says
// works with the toolchain it names.
func TestREADMEGoVersion(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+(?:\.\d+)?)\s*$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	want := string(m[1])
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	stated := regexp.MustCompile(`\bGo (\d+\.\d+(?:\.\d+)?)`).FindAllSubmatch(readme, -1)
	if len(stated) == 0 {
		t.Fatalf("the README states no Go version; go.mod needs go %s", want)
	}
	for _, s := range stated {
		if string(s[1]) != want {
			t.Errorf("the README states %q; go.mod's go line is %s", s[0], want)
		}
	}
}
