package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// defaultMCPURL is where `thoughtbox serve` listens on its defaults (HOST
// 127.0.0.1, PORT 1731, path /mcp): the URL every HTTP entry names.
const defaultMCPURL = "http://127.0.0.1:1731/mcp"

// clientEntry is one server entry of a client's configuration, in the
// shape every client's format reduces to: a command line, or a URL.
type clientEntry struct {
	source  string   // where in the README, for messages
	argv    []string // command and arguments, for stdio
	url     string   // for HTTP
	typeKey string   // VS Code's "type", when given
}

// TestREADMEClientConfigs parses every client configuration the README's
// "Connect your MCP client" section shows — the JSON files, the Codex TOML,
// and the `claude`, `codex`, `gemini` and Inspector command lines — and
// checks that each one launches `thoughtbox mcp` or names the URL `serve`
// listens on by default. Unless -short, each distinct command line is then
// launched with the real binary and answers tools/list through a go-sdk
// client, as the client would run it.
func TestREADMEClientConfigs(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	start := strings.Index(section, "\n## Connect your MCP client\n")
	if start < 0 {
		t.Fatal(`the README has no "## Connect your MCP client" section`)
	}
	section = section[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var entries []clientEntry
	counts := map[string]int{}
	for i, block := range fencedBlocks(section, "json") {
		entries = append(entries, jsonEntries(t, fmt.Sprintf("json block %d", i+1), block)...)
		counts["json"]++
	}
	for _, cell := range regexp.MustCompile("`(\\{[^`]*\\})`").FindAllStringSubmatch(section, -1) {
		entries = append(entries, jsonEntries(t, cell[1], cell[1])...)
		counts["json"]++
	}
	for i, block := range fencedBlocks(section, "toml") {
		entries = append(entries, tomlEntries(t, fmt.Sprintf("toml block %d", i+1), block)...)
		counts["toml"]++
	}
	for _, m := range regexp.MustCompile("`((?:claude|codex|gemini) mcp add [^`]*|npx -y @modelcontextprotocol/inspector [^`]*)`").FindAllStringSubmatch(section, -1) {
		entries = append(entries, commandEntry(t, m[1]))
		counts[strings.Fields(m[1])[0]]++
	}
	// Every client the README promises has its entries here.
	for kind, least := range map[string]int{"json": 6, "toml": 1, "claude": 2, "codex": 2, "gemini": 1, "npx": 3} {
		if counts[kind] < least {
			t.Errorf("the section has %d %s entries, want at least %d (the test reads it wrongly?)", counts[kind], kind, least)
		}
	}
	launched := map[string]bool{}
	for _, e := range entries {
		switch {
		case e.url != "":
			if e.url != defaultMCPURL {
				t.Errorf("%s: URL %q, want serve's default %s", e.source, e.url, defaultMCPURL)
			}
		case len(e.argv) > 0:
			if filepath.Base(e.argv[0]) != "thoughtbox" || !slices.Equal(e.argv[1:], []string{"mcp"}) {
				t.Errorf("%s: launches %q, want thoughtbox mcp", e.source, e.argv)
			}
			key := strings.Join(e.argv[1:], " ")
			if !launched[key] && !testing.Short() {
				launched[key] = true
				launchEntry(t, e)
			}
		default:
			t.Errorf("%s: neither a command nor a URL", e.source)
		}
	}
}

// fencedBlocks returns the bodies of the ```lang blocks of md.
func fencedBlocks(md, lang string) []string {
	var out []string
	for _, m := range regexp.MustCompile("(?s)```"+lang+"\n(.*?)```").FindAllStringSubmatch(md, -1) {
		out = append(out, m[1])
	}
	return out
}

// jsonEntries reads a JSON client configuration: mcpServers (Claude
// Desktop, Cursor, Gemini CLI) or servers (VS Code, whose entries name
// their type), each server a command with args, or a url / httpUrl.
func jsonEntries(t *testing.T, source, text string) []clientEntry {
	t.Helper()
	var cfg map[string]map[string]struct {
		Command string         `json:"command"`
		Args    []string       `json:"args"`
		URL     string         `json:"url"`
		HTTPURL string         `json:"httpUrl"`
		Type    string         `json:"type"`
		Env     map[string]any `json:"env"`
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		t.Errorf("%s: not a client configuration: %v\n%s", source, err, text)
		return nil
	}
	var out []clientEntry
	for key, servers := range cfg {
		if key != "mcpServers" && key != "servers" {
			t.Errorf("%s: top-level key %q, want mcpServers or servers", source, key)
		}
		s, ok := servers["thoughtbox"]
		if !ok || len(servers) != 1 {
			t.Errorf("%s: want one server named thoughtbox, got %v", source, servers)
			continue
		}
		e := clientEntry{source: source, url: s.URL + s.HTTPURL, typeKey: s.Type}
		if s.Command != "" {
			e.argv = append([]string{s.Command}, s.Args...)
		}
		if key == "servers" {
			// VS Code tells the transport by "type".
			want := "stdio"
			if e.url != "" {
				want = "http"
			}
			if s.Type != want {
				t.Errorf("%s: VS Code entry of type %q, want %q", source, s.Type, want)
			}
		}
		if s.HTTPURL != "" && s.URL != "" {
			t.Errorf("%s: both url and httpUrl", source)
		}
		out = append(out, e)
	}
	return out
}

// tomlEntries reads Codex's TOML: one [mcp_servers.thoughtbox] table of
// keys whose values are basic strings or arrays of them (which read as
// JSON). Anything else in the block is an error: a minimal reader, enough
// for what the README shows.
func tomlEntries(t *testing.T, source, text string) []clientEntry {
	t.Helper()
	e := clientEntry{source: source}
	table := ""
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			table = line
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || table != "[mcp_servers.thoughtbox]" {
			t.Errorf("%s: line %q outside [mcp_servers.thoughtbox] or not key = value", source, line)
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		var err error
		switch key {
		case "command":
			var c string
			err = json.Unmarshal([]byte(value), &c)
			e.argv = append([]string{c}, e.argv...)
		case "args":
			var a []string
			err = json.Unmarshal([]byte(value), &a)
			e.argv = append(e.argv, a...)
		case "url":
			err = json.Unmarshal([]byte(value), &e.url)
		default:
			t.Errorf("%s: key %q is not one Codex reads for a server", source, key)
		}
		if err != nil {
			t.Errorf("%s: %s = %s: %v", source, key, value, err)
		}
	}
	return []clientEntry{e}
}

// commandEntry reads a client's own command line: `claude mcp add` and
// `codex mcp add` take the server's command after "--" (or an HTTP URL);
// `gemini mcp add NAME COMMAND ARGS…`; the Inspector runs the command (or
// URL) after its own options.
func commandEntry(t *testing.T, line string) clientEntry {
	t.Helper()
	f := strings.Fields(line)
	e := clientEntry{source: line}
	switch {
	case f[0] == "npx":
		rest := f[3:] // npx -y @modelcontextprotocol/inspector
		if len(rest) > 0 && rest[0] == "--cli" {
			rest = rest[1:]
		}
		var target []string
		for _, a := range rest {
			if strings.HasPrefix(a, "--") {
				break
			}
			target = append(target, a)
		}
		if len(target) == 1 && strings.HasPrefix(target[0], "http") {
			e.url = target[0]
		} else {
			e.argv = target
		}
	case slices.Contains(f, "--"):
		e.argv = f[slices.Index(f, "--")+1:]
	case f[0] == "gemini":
		e.argv = f[4:] // gemini mcp add thoughtbox …
	default:
		for _, a := range f {
			if strings.HasPrefix(a, "http://") {
				e.url = a
			}
		}
	}
	return e
}

// launchEntry runs an entry's command line with the real binary in place
// of "thoughtbox", as its client would, and lists the tools through a
// go-sdk client.
func launchEntry(t *testing.T, e clientEntry) {
	t.Helper()
	bin := thoughtboxBinary(t)
	cmd := exec.Command(bin, e.argv[1:]...)
	cmd.Env = append(os.Environ(), "THOUGHTBOX_DATA_DIR="+t.TempDir(), "DISABLE_THOUGHT_LOGGING=1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := mcp.NewClient(&mcp.Implementation{Name: "readme-client", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("%s: connect: %v", e.source, err)
	}
	defer s.Close()
	tools, err := s.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) == 0 || tools.Tools[0].Name != "thoughtbox_gateway" {
		t.Errorf("%s: tools/list: %v %+v", e.source, err, tools)
	}
}
