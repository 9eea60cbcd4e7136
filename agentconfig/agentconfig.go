// Package agentconfig writes the entry that launches Thoughtbox's MCP
// server into the configuration file a coding agent reads: Claude Code's
// .mcp.json, Cursor's and VS Code's mcp.json, Gemini CLI's settings.json,
// Codex's config.toml, Claude Desktop's claude_desktop_config.json.
//
// It merges: the other servers, the other settings and the keys of our own
// entry it does not set stay as they are; a file whose entry is already
// right is not touched at all. Planning reads and checks, applying writes:
//
//	c, err := agentconfig.Plan(agent, places, launch) // nothing written yet
//	if err == nil && c.Outcome != agentconfig.Unchanged {
//		err = c.Apply() // written aside and renamed over the file
//	}
//
// The formats and where each agent looks were checked against the
// agents' documentation; doc/agents.md names the sources.
package agentconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ServerName is the name of our entry in every file.
const ServerName = "thoughtbox"

// Outcome says what Plan found to do with an agent's entry.
type Outcome int

// The outcomes.
const (
	// Unchanged: the entry is there and says what we would write.
	Unchanged Outcome = iota
	// Added: the file has no entry of ours (or there is no file).
	Added
	// Updated: our entry is there but launches something else.
	Updated
)

func (o Outcome) String() string {
	switch o {
	case Added:
		return "added"
	case Updated:
		return "updated"
	}
	return "unchanged"
}

// MarshalText spells the outcome in JSON output.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

type format int

const (
	formatJSON format = iota
	formatTOML
)

// Agent is a coding agent whose MCP configuration we know how to write.
type Agent struct {
	// Name is how --agent spells it.
	Name string
	// Title is the agent's own name.
	Title string
	// Key is the table of servers in its file.
	Key string
	// User says the file is the user's own (under the home folder), read
	// for every project, rather than the repository's.
	User bool

	format format
	// rel is the file's path inside the worktree, for a project file.
	rel string
	// typed says the entry names its transport ("type": "stdio").
	typed bool
}

// agents is every agent we know, in the order --list prints them. Each
// project file holds a command found on PATH, since the file is
// committed and shared with people whose binary lives elsewhere; Claude
// Desktop, a GUI app that does not start from a shell and runs its
// servers from no particular folder, gets the binary's absolute path and
// the repository (--repo).
var agents = []Agent{
	{Name: "claude-code", Title: "Claude Code", Key: "mcpServers", rel: ".mcp.json"},
	{Name: "cursor", Title: "Cursor", Key: "mcpServers", rel: filepath.Join(".cursor", "mcp.json")},
	{Name: "vscode", Title: "VS Code", Key: "servers", rel: filepath.Join(".vscode", "mcp.json"), typed: true},
	{Name: "codex", Title: "Codex", Key: "mcp_servers", rel: filepath.Join(".codex", "config.toml"), format: formatTOML},
	{Name: "gemini", Title: "Gemini CLI", Key: "mcpServers", rel: filepath.Join(".gemini", "settings.json")},
	{Name: "claude-desktop", Title: "Claude Desktop", Key: "mcpServers", User: true},
}

// Agents returns every known agent.
func Agents() []Agent { return append([]Agent(nil), agents...) }

// Names returns the known agents' names.
func Names() []string {
	out := make([]string, len(agents))
	for i, a := range agents {
		out[i] = a.Name
	}
	return out
}

// Lookup finds an agent by name.
func Lookup(name string) (Agent, bool) {
	for _, a := range agents {
		if a.Name == name {
			return a, true
		}
	}
	return Agent{}, false
}

// Places says where files go.
type Places struct {
	// Worktree is the repository's top folder, for project files.
	Worktree string
	// Home is the user's home folder.
	Home string
	// GOOS picks Claude Desktop's folder: darwin, windows, or any other.
	GOOS string
	// Getenv reads APPDATA (Windows) and XDG_CONFIG_HOME (elsewhere).
	Getenv func(string) string
}

// ErrNoHome is returned by File for a user file when the home folder (or,
// on Windows, APPDATA) is unknown.
var ErrNoHome = errors.New("home folder unknown")

// File is the file the agent reads.
func (a Agent) File(p Places) (string, error) {
	if !a.User {
		return filepath.Join(p.Worktree, a.rel), nil
	}
	getenv := p.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var dir string
	switch p.GOOS {
	case "darwin":
		if p.Home != "" {
			dir = filepath.Join(p.Home, "Library", "Application Support")
		}
	case "windows":
		dir = getenv("APPDATA")
	default:
		// Claude Desktop has no official Linux build; the community builds
		// follow the XDG layout.
		dir = getenv("XDG_CONFIG_HOME")
		if !filepath.IsAbs(dir) {
			dir = "" // the XDG rule: a relative path is ignored
		}
		if dir == "" && p.Home != "" {
			dir = filepath.Join(p.Home, ".config")
		}
	}
	if dir == "" {
		return "", fmt.Errorf("%s's configuration file: %w", a.Title, ErrNoHome)
	}
	return filepath.Join(dir, "Claude", "claude_desktop_config.json"), nil
}

// Launch is how an agent starts the server.
type Launch struct {
	// Command is the program as project files name it (found on PATH).
	Command string
	// Binary is the program's absolute path, for GUI apps.
	Binary string
}

// field is one key of our entry, in the order it is written.
type field struct {
	key   string
	value any
}

// entry is what our entry must say, for the agent, the worktree and the
// launch.
func (a Agent) entry(p Places, l Launch) []field {
	if a.User {
		return []field{{"command", l.Binary}, {"args", []string{"mcp", "--repo", p.Worktree}}}
	}
	f := []field{{"command", l.Command}, {"args", []string{"mcp"}}}
	if a.typed {
		f = append([]field{{"type", "stdio"}}, f...)
	}
	return f
}

// Change is what Plan found: the file, our entry's key in it, the outcome
// and, unless Unchanged, the file's new content.
type Change struct {
	Agent   string  `json:"agent"`
	File    string  `json:"file"`
	Key     string  `json:"key"`
	Outcome Outcome `json:"outcome"`

	// target is the file written (File, or what a symbolic link there
	// points at, so that a dotfile manager's link survives).
	target string
	data   []byte
	mode   fs.FileMode
}

// FileError is returned by Plan for a file that cannot be merged: not
// JSON or TOML, or one whose shape leaves no place for our entry.
type FileError struct {
	File string
	Err  error
}

func (e *FileError) Error() string {
	return fmt.Sprintf("%s: %v; nothing was written", e.File, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// Plan reads the agent's file and works out the change; it writes nothing.
func Plan(a Agent, p Places, l Launch) (*Change, error) {
	file, err := a.File(p)
	if err != nil {
		return nil, err
	}
	c := &Change{Agent: a.Name, File: file, Key: a.Key + "." + ServerName, target: file, mode: 0o644}
	if a.User {
		// Other servers' entries there may carry tokens.
		c.mode = 0o600
	}
	if fi, err := os.Lstat(file); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if c.target, err = filepath.EvalSymlinks(file); err != nil {
			return nil, &FileError{File: file, Err: err}
		}
	}
	old, err := os.ReadFile(c.target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	case err != nil:
		return nil, err
	default:
		fi, err := os.Stat(c.target)
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, &FileError{File: file, Err: errors.New("not a regular file")}
		}
		c.mode = fi.Mode().Perm()
	}
	want := a.entry(p, l)
	if a.format == formatTOML {
		c.data, c.Outcome, err = mergeTOML(old, a.Key, ServerName, want)
	} else {
		c.data, c.Outcome, err = mergeJSON(old, a.Key, ServerName, want)
	}
	if err != nil {
		return nil, &FileError{File: file, Err: err}
	}
	return c, nil
}

// Apply writes the change: the new content goes to a file beside the old
// one, with the old one's permissions, and is renamed over it, so that an
// agent reading it meanwhile sees the old file or the new one. An
// Unchanged change writes nothing.
func (c *Change) Apply() error {
	if c.Outcome == Unchanged {
		return nil
	}
	return writeAtomic(c.target, c.data, c.mode)
}

// Describe is the change in one line for people: "cursor: added
// mcpServers.thoughtbox in /src/app/.cursor/mcp.json".
func (c *Change) Describe() string {
	return c.Agent + ": " + c.Outcome.String() + " " + c.Key + " in " + c.File
}
