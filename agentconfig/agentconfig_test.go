package agentconfig

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var (
	plain = []field{{"command", "thoughtbox"}, {"args", []string{"mcp"}}}
	typed = []field{{"type", "stdio"}, {"command", "thoughtbox"}, {"args", []string{"mcp"}}}
)

func decode(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("the result is not JSON: %v\n%s", err, data)
	}
	return v
}

func TestMergeJSONKeepsEverythingElse(t *testing.T) {
	in := `{"b": 1, "mcpServers": {"other": {"command": "x", "env": {"K": "v"}}, "thoughtbox": {"command": "old", "env": {"THOUGHTBOX_PROJECT": "p"}}}, "a": [true, null]}`
	out, o, err := mergeJSON([]byte(in), "mcpServers", "thoughtbox", plain)
	if err != nil || o != Updated {
		t.Fatalf("merge: %v, %v", o, err)
	}
	want := map[string]any{
		"b": 1.0, "a": []any{true, nil},
		"mcpServers": map[string]any{
			"other":      map[string]any{"command": "x", "env": map[string]any{"K": "v"}},
			"thoughtbox": map[string]any{"command": "thoughtbox", "args": []any{"mcp"}, "env": map[string]any{"THOUGHTBOX_PROJECT": "p"}},
		},
	}
	if diff := cmp.Diff(want, decode(t, out)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	// The user's key order stays.
	if s := string(out); !(strings.Index(s, `"b"`) < strings.Index(s, `"mcpServers"`) && strings.Index(s, `"mcpServers"`) < strings.Index(s, `"a"`)) {
		t.Errorf("keys reordered:\n%s", out)
	}
	again, o, err := mergeJSON(out, "mcpServers", "thoughtbox", plain)
	if err != nil || o != Unchanged || string(again) != string(out) {
		t.Errorf("second merge: %v, %v; changed bytes: %v", o, err, string(again) != string(out))
	}
}

func TestMergeJSONAdds(t *testing.T) {
	for _, in := range []string{"", "  \n", "{}", `{"servers": null}`} {
		out, o, err := mergeJSON([]byte(in), "servers", "thoughtbox", typed)
		if err != nil || o != Added {
			t.Fatalf("%q: %v, %v", in, o, err)
		}
		want := map[string]any{"servers": map[string]any{"thoughtbox": map[string]any{"type": "stdio", "command": "thoughtbox", "args": []any{"mcp"}}}}
		if diff := cmp.Diff(want, decode(t, out)); diff != "" {
			t.Errorf("%q: (-want +got)\n%s", in, diff)
		}
	}
	// Spelled differently, the same values: nothing to do.
	same := `{"servers":{"thoughtbox":{"args":["\u006dcp"],"command":"thoughtbox","type":"stdio"}}}`
	if out, o, err := mergeJSON([]byte(same), "servers", "thoughtbox", typed); err != nil || o != Unchanged || string(out) != same {
		t.Errorf("same entry: %v, %v, %s", o, err, out)
	}
}

func TestMergeJSONRefuses(t *testing.T) {
	for in, want := range map[string]string{
		`{"mcpServers": {}`:                    "ends too early",
		`{"mcpServers": {}} {}`:                "more after",
		"{\n  // a comment\n}":                 "comments",
		`{"a": 1,}`:                            "not JSON",
		`[1]`:                                  "not a JSON object",
		`{"mcpServers": []}`:                   "mcpServers is not a JSON object",
		`{"mcpServers": {"thoughtbox": "x"}}`:  "mcpServers.thoughtbox is not a JSON object",
		`{"mcpServers": {}, "mcpServers": {}}`: `"mcpServers" appears twice`,
		`{"mcpServers": {"thoughtbox": {"args": 1, "args": 2}}}`:                   `"args" appears twice`,
		`{"mcpServers": {"thoughtbox": {"url": "http://127.0.0.1:1731/mcp"}}}`:     "mcpServers.thoughtbox connects to a server by URL (url)",
		`{"mcpServers": {"thoughtbox": {"type": "sse", "command": "thoughtbox"}}}`: `(type "sse")`,
	} {
		_, _, err := mergeJSON([]byte(in), "mcpServers", "thoughtbox", plain)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", in, err, want)
		}
	}
}

const codexFile = `# my settings
model = "o3"
approval_policy = "on-request" # trailing comment

[mcp_servers.other]
command = "npx"
args = [
  "-y", # a comment in an array
  "other-server",
]
env = { "KEY" = "v", nested = { a = [1, 2] } }

[profiles.fast]
model = 'o4-mini'
notes = """
[mcp_servers.thoughtbox]
not a table: inside a string
"""
`

func TestMergeTOMLAppends(t *testing.T) {
	out, o, err := mergeTOML([]byte(codexFile), "mcp_servers", "thoughtbox", plain)
	if err != nil || o != Added {
		t.Fatalf("merge: %v, %v", o, err)
	}
	want := codexFile + "\n[mcp_servers.thoughtbox]\ncommand = \"thoughtbox\"\nargs = [\"mcp\"]\n"
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	parseTOML(t, out)
	again, o, err := mergeTOML(out, "mcp_servers", "thoughtbox", plain)
	if err != nil || o != Unchanged || string(again) != string(out) {
		t.Errorf("second merge: %v, %v", o, err)
	}
	// A file without a final newline, and an empty one.
	out, _, _ = mergeTOML([]byte(`model = "o3"`), "mcp_servers", "thoughtbox", plain)
	if string(out) != "model = \"o3\"\n\n[mcp_servers.thoughtbox]\ncommand = \"thoughtbox\"\nargs = [\"mcp\"]\n" {
		t.Errorf("no final newline: %q", out)
	}
	if out, _, _ = mergeTOML(nil, "mcp_servers", "thoughtbox", plain); string(out) != "[mcp_servers.thoughtbox]\ncommand = \"thoughtbox\"\nargs = [\"mcp\"]\n" {
		t.Errorf("empty file: %q", out)
	}
}

func TestMergeTOMLUpdatesInPlace(t *testing.T) {
	in := "[mcp_servers . \"thoughtbox\"] # ours\n" +
		"enabled = true\n" +
		"args = [\n  \"serve\",\n]\n" +
		"\n[mcp_servers.thoughtbox.env]\nTHOUGHTBOX_PROJECT = \"p\"\n" +
		"\n[mcp_servers.other]\ncommand = \"x\"\n"
	out, o, err := mergeTOML([]byte(in), "mcp_servers", "thoughtbox", plain)
	if err != nil || o != Updated {
		t.Fatalf("merge: %v, %v", o, err)
	}
	want := "[mcp_servers . \"thoughtbox\"] # ours\n" +
		"command = \"thoughtbox\"\n" +
		"enabled = true\n" +
		"args = [\"mcp\"]\n" +
		"\n[mcp_servers.thoughtbox.env]\nTHOUGHTBOX_PROJECT = \"p\"\n" +
		"\n[mcp_servers.other]\ncommand = \"x\"\n"
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	parseTOML(t, out)
	// Literal strings and a spread-out array holding the same: unchanged.
	same := "[mcp_servers.thoughtbox]\ncommand = 'thoughtbox'  # on PATH\nargs = [\n 'mcp', # the server\n]\n"
	if got, o, err := mergeTOML([]byte(same), "mcp_servers", "thoughtbox", plain); err != nil || o != Unchanged || string(got) != same {
		t.Errorf("same entry: %v, %v, %q", o, err, got)
	}
	// A byte-order mark, and TOML 1.1's escapes, are read.
	bom := "\ufeffname = \"\\e[1m\\x41\"\n[mcp_servers.thoughtbox]\ncommand = \"thoughtbox\"\nargs = [\"mcp\"]\n"
	if got, o, err := mergeTOML([]byte(bom), "mcp_servers", "thoughtbox", plain); err != nil || o != Unchanged || string(got) != bom {
		t.Errorf("BOM and 1.1 escapes: %v, %v", o, err)
	}
	// A path with a backslash and a quote is escaped.
	win := []field{{"command", `C:\Program Files\"tb"\thoughtbox.exe`}}
	got, _, err := mergeTOML(nil, "mcp_servers", "thoughtbox", win)
	if err != nil || !strings.Contains(string(got), `command = "C:\\Program Files\\\"tb\"\\thoughtbox.exe"`) {
		t.Errorf("escaping: %v %s", err, got)
	}
	if again, o, _ := mergeTOML(got, "mcp_servers", "thoughtbox", win); o != Unchanged || string(again) != string(got) {
		t.Errorf("escaped value read back differently: %v", o)
	}
}

func TestMergeTOMLRefuses(t *testing.T) {
	for in, want := range map[string]string{
		"model = \"o3":                   "line 1: unclosed string",
		"a = [1, 2\n":                    "unclosed [",
		"notes = \"\"\"\nnever closed\n": "unclosed multi-line string",
		"[mcp_servers\ncommand = 1\n":    "table header without ]",
		"model\n":                        "expected = after the key model",
		"a = 1 2\n":                      "line 1: unexpected",
		"x = \"\\q\"\n":                  "bad escape",
		"mcp_servers.thoughtbox.command = \"x\"\n":                        "outside a [mcp_servers.thoughtbox] table",
		"[mcp_servers]\nthoughtbox = { command = \"x\" }\n":               "outside a [mcp_servers.thoughtbox] table",
		"mcp_servers = { other = { command = \"x\" } }\n":                 "outside",
		"[[mcp_servers]]\nname = 1\n":                                     "array of tables",
		"[mcp_servers.thoughtbox]\n[mcp_servers.thoughtbox]\n":            "appears twice",
		"[mcp_servers.thoughtbox]\nargs = []\nargs = []\n":                "more than once",
		"[mcp_servers.thoughtbox]\nurl = \"http://127.0.0.1:1731/mcp\"\n": "mcp_servers.thoughtbox connects to a server by URL",
	} {
		_, _, err := mergeTOML([]byte(in), "mcp_servers", "thoughtbox", plain)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", in, err, want)
		}
	}
	// Dotted keys for other servers under [mcp_servers] are fine.
	in := "[mcp_servers]\nother.command = \"x\"\n"
	out, o, err := mergeTOML([]byte(in), "mcp_servers", "thoughtbox", plain)
	if err != nil || o != Added {
		t.Fatalf("%v %v", o, err)
	}
	parseTOML(t, out)
}

// parseTOML checks data with Python's TOML parser (tomllib, Python 3.11+),
// an implementation that shares nothing with ours.
func parseTOML(t *testing.T, data []byte) map[string]any {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil || exec.Command(py, "-c", "import tomllib").Run() != nil {
		t.Skip("python3 with tomllib is not installed: the written TOML is not parsed")
	}
	cmd := exec.Command(py, "-c", "import sys, tomllib, json; print(json.dumps(tomllib.loads(sys.stdin.read())))")
	cmd.Stdin = strings.NewReader(string(data))
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("tomllib refuses the result: %s\n%s", ee.Stderr, data)
		}
		t.Fatal(err)
	}
	return decode(t, out)
}

func TestClaudeDesktopFile(t *testing.T) {
	a, _ := Lookup("claude-desktop")
	env := map[string]string{"APPDATA": `C:\Users\me\AppData\Roaming`}
	getenv := func(k string) string { return env[k] }
	for _, c := range []struct{ goos, want string }{
		{"darwin", filepath.Join("/home/me", "Library", "Application Support", "Claude", "claude_desktop_config.json")},
		{"windows", filepath.Join(`C:\Users\me\AppData\Roaming`, "Claude", "claude_desktop_config.json")},
		{"linux", filepath.Join("/home/me", ".config", "Claude", "claude_desktop_config.json")},
	} {
		got, err := a.File(Places{Home: "/home/me", GOOS: c.goos, Getenv: getenv})
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.goos, got, err, c.want)
		}
	}
	env["XDG_CONFIG_HOME"] = "relative/ignored"
	if got, _ := a.File(Places{Home: "/home/me", GOOS: "linux", Getenv: getenv}); got != filepath.Join("/home/me", ".config", "Claude", "claude_desktop_config.json") {
		t.Errorf("relative XDG_CONFIG_HOME: %q", got)
	}
	env["XDG_CONFIG_HOME"] = "/xdg"
	if got, _ := a.File(Places{Home: "/home/me", GOOS: "linux", Getenv: getenv}); got != filepath.Join("/xdg", "Claude", "claude_desktop_config.json") {
		t.Errorf("XDG_CONFIG_HOME: %q", got)
	}
	if _, err := a.File(Places{GOOS: "windows", Getenv: func(string) string { return "" }}); !errors.Is(err, ErrNoHome) {
		t.Errorf("no APPDATA: %v", err)
	}
}

func TestApplyKeepsModeAndLinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix permissions and symbolic links")
	}
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte(`{"mcpServers": {"other": {"command": "x"}}}`), 0o640); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(dir, "wt")
	if err := os.MkdirAll(filepath.Join(wt, ".cursor"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(wt, ".cursor", "mcp.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	a, _ := Lookup("cursor")
	c, err := Plan(a, Places{Worktree: wt}, Launch{Command: "thoughtbox"})
	if err != nil || c.Outcome != Added || c.File != link {
		t.Fatalf("plan: %+v, %v", c, err)
	}
	if err := c.Apply(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi.Mode(), err)
	}
	fi, err := os.Stat(real)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640 (%v)", fi.Mode().Perm(), err)
	}
	data, _ := os.ReadFile(real)
	if servers := decode(t, data)["mcpServers"].(map[string]any); len(servers) != 2 {
		t.Errorf("servers: %v", servers)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "dotfiles", ".*tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestPlanRefusesBadFileAndWritesNothing(t *testing.T) {
	wt := t.TempDir()
	path := filepath.Join(wt, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := []byte(`{"theme": "Dracula",`)
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	a, _ := Lookup("gemini")
	_, err := Plan(a, Places{Worktree: wt}, Launch{Command: "thoughtbox"})
	var fe *FileError
	if !errors.As(err, &fe) || fe.File != path || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v, want a FileError naming %s", err, path)
	}
	if got, _ := os.ReadFile(path); string(got) != string(bad) {
		t.Errorf("the file changed: %s", got)
	}
}
