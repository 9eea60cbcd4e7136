package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/project"
)

type completionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"bash, zsh or fish."`
}

func (c *completionCmd) Help() string {
	return `Prints a script that teaches the shell to complete thoughtbox's commands, flags,
session ids, branch names, remotes and projects. Load it from your shell's startup file:

  bash:  source <(thoughtbox completion bash)            (in ~/.bashrc)
  zsh:   source <(thoughtbox completion zsh)             (in ~/.zshrc, after compinit)
  fish:  thoughtbox completion fish | source             (in ~/.config/fish/config.fish)`
}

// completionScripts hand each shell's words to 'thoughtbox __complete',
// which prints one candidate per line. When it prints none, bash and zsh
// fall back to file names (for --data-dir, -o and the like).
var completionScripts = map[string]string{
	"bash": `# thoughtbox completion for bash
_thoughtbox() {
	local IFS=$'\n'
	COMPREPLY=($(thoughtbox __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _thoughtbox thoughtbox
`,
	"zsh": `# thoughtbox completion for zsh
_thoughtbox() {
	local -a candidates
	candidates=("${(@f)$(thoughtbox __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
	if (( ${#candidates[@]} )) && [[ -n "${candidates[1]}" ]]; then
		compadd -a candidates
	else
		_files
	fi
}
compdef _thoughtbox thoughtbox
`,
	"fish": `# thoughtbox completion for fish
complete -c thoughtbox -f -a '(thoughtbox __complete (commandline -opc)[2..-1] (commandline -ct))'
`,
}

func (c *completionCmd) Run(a *app) error {
	_, err := io.WriteString(a.env.Stdout, completionScripts[c.Shell])
	return err
}

// complete answers 'thoughtbox __complete WORD... CURRENT': the candidates
// for the last word, given the words before it. It reads the ledger without
// opening it (no lock, nothing written) and never fails: a problem means
// no candidates.
func complete(model *kong.Application, words []string, env Env) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur := words[len(words)-1]
	node := model.Node
	var (
		positional []string
		pending    *kong.Flag
		given      = map[string]string{}
	)
	for _, w := range words[:len(words)-1] {
		if pending != nil {
			given[pending.Name] = w
			pending = nil
			continue
		}
		if name, ok := strings.CutPrefix(w, "--"); ok {
			name, value, hasValue := strings.Cut(name, "=")
			if f := findFlag(node, name); f != nil && !f.IsBool() && !f.IsCounter() {
				if hasValue {
					given[f.Name] = value
				} else {
					pending = f
				}
			}
			continue
		}
		if len(positional) == 0 {
			if child := findChild(node, w); child != nil {
				node = child
				continue
			}
		}
		positional = append(positional, w)
	}
	loc := locate(given, env)
	var out []string
	switch {
	case pending != nil:
		out = flagValues(pending, node, positional, loc)
	case strings.HasPrefix(cur, "--") && strings.Contains(cur, "="):
		name, value, _ := strings.Cut(strings.TrimPrefix(cur, "--"), "=")
		if f := findFlag(node, name); f != nil {
			for _, v := range flagValues(f, node, positional, loc) {
				out = append(out, "--"+name+"="+v)
			}
		}
		cur = "--" + name + "=" + value
	case strings.HasPrefix(cur, "-"):
		for n := node; n != nil; n = n.Parent {
			for _, f := range n.Flags {
				if !f.Hidden {
					out = append(out, "--"+f.Name)
				}
			}
		}
		out = append(out, "--help")
	case len(positional) == 0 && hasCommands(node):
		for _, c := range node.Children {
			if c.Type == kong.CommandNode && !c.Hidden {
				out = append(out, c.Name)
			}
		}
	default:
		if i := len(positional); i < len(node.Positional) {
			out = positionalValues(node.Positional[i], node, loc)
		} else if n := len(node.Positional); n > 0 && node.Positional[n-1].IsSlice() {
			out = positionalValues(node.Positional[n-1], node, loc)
		}
	}
	var keep []string
	for _, c := range out {
		if strings.HasPrefix(c, cur) {
			keep = append(keep, c)
		}
	}
	slices.Sort(keep)
	return slices.Compact(keep)
}

// location is where the ledger a command line names lives.
type location struct {
	dataDir, project string
}

func (l location) repo() string {
	return filepath.Join(l.dataDir, "projects", l.project+".git")
}

// locate works out the data directory and project as config.Resolve would,
// without reading or writing anything.
func locate(given map[string]string, env Env) location {
	get := func(flag, name, def string) string {
		if v := given[flag]; v != "" {
			return v
		}
		if v, ok := env.LookupEnv(name); ok && v != "" {
			return v
		}
		return def
	}
	dir := get("data-dir", config.EnvDataDir, config.DefaultDataDir)
	if rest, ok := strings.CutPrefix(dir, "~"); ok && (rest == "" || rest[0] == '/' || rest[0] == filepath.Separator) {
		home, _ := env.LookupEnv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		dir = filepath.Join(home, rest)
	}
	return location{dataDir: dir, project: get("project", config.EnvProject, config.DefaultProject)}
}

func flagValues(f *kong.Flag, node *kong.Node, positional []string, loc location) []string {
	switch f.Name {
	case "project":
		return config.Projects(loc.dataDir)
	case "branch":
		if len(positional) > 0 && isSessionArg(node, 0) {
			return project.PeekBranches(loc.repo(), sessionFor(loc, positional[0]))
		}
		return nil
	case "session", "force":
		return project.PeekSessionIDs(loc.repo())
	}
	if f.Enum != "" {
		return strings.Split(f.Enum, ",")
	}
	return nil
}

func positionalValues(p *kong.Positional, node *kong.Node, loc location) []string {
	switch {
	case p.Name == "id" && !underCommand(node, "knowledge"):
		return project.PeekSessionIDs(loc.repo())
	case p.Name == "remote", p.Name == "name" && node.Name == "remove" && underCommand(node, "remote"):
		return project.PeekRemotes(loc.repo())
	case p.Enum != "":
		return strings.Split(p.Enum, ",")
	}
	return nil
}

// sessionFor expands a session id prefix, as far as the published refs
// tell.
func sessionFor(loc location, prefix string) string {
	var match string
	for _, id := range project.PeekSessionIDs(loc.repo()) {
		if strings.HasPrefix(id, prefix) {
			if match != "" {
				return prefix
			}
			match = id
		}
	}
	if match == "" {
		return prefix
	}
	return match
}

func isSessionArg(node *kong.Node, i int) bool {
	return i < len(node.Positional) && node.Positional[i].Name == "id" && !underCommand(node, "knowledge")
}

func underCommand(node *kong.Node, name string) bool {
	for n := node; n != nil; n = n.Parent {
		if n.Type == kong.CommandNode && n.Name == name {
			return true
		}
	}
	return false
}

func hasCommands(n *kong.Node) bool {
	for _, c := range n.Children {
		if c.Type == kong.CommandNode {
			return true
		}
	}
	return false
}

func findChild(n *kong.Node, name string) *kong.Node {
	for _, c := range n.Children {
		if c.Type == kong.CommandNode && (c.Name == name || slices.Contains(c.Aliases, name)) {
			return c
		}
	}
	return nil
}

func findFlag(n *kong.Node, name string) *kong.Flag {
	for ; n != nil; n = n.Parent {
		for _, f := range n.Flags {
			if f.Name == name || slices.Contains(f.Aliases, name) {
				return f
			}
		}
	}
	return nil
}

// runComplete prints the candidates, one per line.
func runComplete(p *kong.Kong, words []string, env Env) int {
	for _, c := range complete(p.Model, words, env) {
		fmt.Fprintln(env.Stdout, c)
	}
	return ExitOK
}
