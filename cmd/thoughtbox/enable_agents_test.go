package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/agentconfig"
)

// agentFile is one agent's file as a test sets it up: what is there
// before (another server and a setting of the user's), and where.
type agentFile struct {
	agent, rel, key string
	before          string
}

// TestEnableAgentFiles runs `thoughtbox enable --agent …` for every agent
// on a real repository whose agent files already hold other servers and
// settings, then parses each file as its agent would (JSON, or TOML with
// Python's tomllib) and checks our entry, what was there before, and that
// a second run changes no byte. The entry Claude Desktop got is launched
// and answers tools/list.
func TestEnableAgentFiles(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	if runtime.GOOS == "windows" {
		t.Skip("the commit hooks enable installs are shell scripts")
	}
	bin := thoughtboxBinary(t)
	home, wt := t.TempDir(), t.TempDir()
	desktop := filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")
	files := []agentFile{
		{"claude-code", ".mcp.json", "mcpServers", `{"mcpServers": {"other": {"command": "other"}}, "x-mine": 1}`},
		{"cursor", ".cursor/mcp.json", "mcpServers", `{"mcpServers": {"other": {"command": "other"}}, "x-mine": 1}`},
		{"vscode", ".vscode/mcp.json", "servers", `{"inputs": [], "servers": {"other": {"type": "stdio", "command": "other"}}, "x-mine": 1}`},
		{"gemini", ".gemini/settings.json", "mcpServers", `{"theme": "Default", "mcpServers": {"other": {"command": "other"}}, "x-mine": 1}`},
		{"claude-desktop", desktop, "mcpServers", `{"mcpServers": {"other": {"command": "other"}}, "x-mine": 1}`},
		{"codex", ".codex/config.toml", "mcp_servers", "x-mine = 1\n\n[mcp_servers.other]\ncommand = \"other\"\n"},
	}
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME=", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1", "THOUGHTBOX_DATA_DIR="+t.TempDir())
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = wt, env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("thoughtbox %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return out
	}
	if out, err := exec.Command("git", "init", "-q", wt).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	args := []string{"enable", "--format", "json"}
	for i := range files {
		f := &files[i]
		if !filepath.IsAbs(f.rel) {
			f.rel = filepath.Join(wt, f.rel)
		}
		if err := os.MkdirAll(filepath.Dir(f.rel), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.rel, []byte(f.before), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--agent", f.agent)
	}

	var first struct {
		Enabled bool
		Agents  []struct{ Agent, File, Key, Outcome string }
		Hooks   []struct{ Name string }
	}
	if err := json.Unmarshal(run(args...), &first); err != nil {
		t.Fatal(err)
	}
	if !first.Enabled || len(first.Agents) != len(files) || len(first.Hooks) == 0 {
		t.Fatalf("enable said %+v", first)
	}
	var desktopEntry []string
	for i, f := range files {
		got := first.Agents[i]
		if got.Agent != f.agent || got.File != f.rel || got.Key != f.key+".thoughtbox" || got.Outcome != "added" {
			t.Errorf("%s: reported %+v", f.agent, got)
		}
		cfg := parseAgentFile(t, f)
		if cfg == nil {
			continue
		}
		if cfg["x-mine"] != 1.0 {
			t.Errorf("%s: the user's setting is gone: %v", f.agent, cfg)
		}
		servers, _ := cfg[f.key].(map[string]any)
		if other, _ := servers["other"].(map[string]any); other["command"] != "other" {
			t.Errorf("%s: the other server is gone: %v", f.agent, servers)
		}
		entry, _ := servers["thoughtbox"].(map[string]any)
		argv := []string{}
		if c, ok := entry["command"].(string); ok {
			argv = append(argv, c)
		}
		for _, a := range entry["args"].([]any) {
			argv = append(argv, a.(string))
		}
		want := map[string]any{"command": "thoughtbox", "args": []any{"mcp"}}
		switch f.agent {
		case "vscode":
			want["type"] = "stdio"
		case "claude-desktop":
			if !filepath.IsAbs(argv[0]) || !strings.HasPrefix(filepath.Base(argv[0]), "thoughtbox") || !slices.Equal(argv[1:], []string{"mcp", "--repo", wt}) {
				t.Errorf("claude-desktop: launches %q, want the absolute binary and mcp --repo %s", argv, wt)
			}
			desktopEntry = argv
			continue
		}
		if diff := cmp.Diff(want, entry); diff != "" {
			t.Errorf("%s: entry (-want +got)\n%s", f.agent, diff)
		}
	}
	if len(desktopEntry) > 0 {
		launchEntry(t, clientEntry{source: desktop, argv: desktopEntry})
	}

	before := map[string][]byte{}
	for _, f := range files {
		before[f.rel], _ = os.ReadFile(f.rel)
	}
	var second struct {
		Agents []struct{ Agent, Outcome string }
	}
	if err := json.Unmarshal(run(args...), &second); err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		if second.Agents[i].Outcome != "unchanged" {
			t.Errorf("%s: second run %+v, want unchanged", f.agent, second.Agents[i])
		}
		if after, _ := os.ReadFile(f.rel); !bytes.Equal(after, before[f.rel]) {
			t.Errorf("%s: the second run rewrote the file", f.agent)
		}
		if fi, err := os.Stat(f.rel); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want the file's own 0600 (%v)", f.agent, fi.Mode().Perm(), err)
		}
	}
}

// parseAgentFile reads an agent's file as that agent would; nil when it
// cannot (TOML without Python), after checking what it can.
func parseAgentFile(t *testing.T, f agentFile) map[string]any {
	t.Helper()
	data, err := os.ReadFile(f.rel)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(f.rel, ".toml") {
		if !bytes.HasPrefix(data, []byte(f.before)) {
			t.Errorf("%s: the file's own lines changed:\n%s", f.agent, data)
		}
		py, err := exec.LookPath("python3")
		if err != nil || exec.Command(py, "-c", "import tomllib").Run() != nil {
			// Without a TOML parser, the table we append is checked as text.
			t.Logf("%s: python3 with tomllib is not installed; the TOML is checked as text only", f.agent)
			if tail := string(data[len(f.before):]); tail != "\n[mcp_servers.thoughtbox]\ncommand = \"thoughtbox\"\nargs = [\"mcp\"]\n" {
				t.Errorf("%s: appended %q", f.agent, tail)
			}
			return nil
		}
		cmd := exec.Command(py, "-c", "import sys, tomllib, json; print(json.dumps(tomllib.loads(sys.stdin.read())))")
		cmd.Stdin = bytes.NewReader(data)
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("%s: tomllib refuses %s: %s\n%s", f.agent, f.rel, ee.Stderr, data)
			}
			t.Fatal(err)
		}
		data = out
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %s is not JSON: %v\n%s", f.agent, f.rel, err, data)
	}
	return v
}

// TestEnableAgentREADMETable holds the README's table of agents to the
// agents enable knows: one row each, with the exact command and, for a
// project file, its path.
func TestEnableAgentREADMETable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| ([^|]+) \\| `thoughtbox enable --agent ([a-z-]+)` \\| (.+) \\|$").FindAllStringSubmatch(string(readme), -1)
	if len(rows) != len(agentconfig.Agents()) {
		t.Errorf("the README's table has %d agents, enable knows %d", len(rows), len(agentconfig.Agents()))
	}
	for _, a := range agentconfig.Agents() {
		i := slices.IndexFunc(rows, func(r []string) bool { return r[2] == a.Name })
		if i < 0 {
			t.Errorf("the README's table has no row for --agent %s", a.Name)
			continue
		}
		row := rows[i]
		if row[1] != a.Title {
			t.Errorf("--agent %s: the README calls it %q, enable %q", a.Name, row[1], a.Title)
		}
		file, _ := a.File(agentconfig.Places{Worktree: "."})
		if !a.User && !strings.HasPrefix(row[3], "`"+filepath.ToSlash(filepath.Clean(file))+"`") {
			t.Errorf("--agent %s: the README says %s, enable writes %s", a.Name, row[3], file)
		}
	}
}
