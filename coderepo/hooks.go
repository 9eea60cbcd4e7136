package coderepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// hookMarker is in every hook script Thoughtbox writes: a hook holding it
// is ours, to be rewritten; any other is the user's, to be chained.
const hookMarker = "# thoughtbox hook"

// chainedSuffix names the user's hook ours replaced and runs first.
const chainedSuffix = ".thoughtbox-chained"

// Hooks are the hooks InstallHooks writes.
var Hooks = []string{"prepare-commit-msg", "post-commit", "post-rewrite", "pre-push"}

// HooksDir is the folder git runs this repository's hooks from:
// core.hooksPath when set (relative to the worktree, as git reads it), or
// the common dir's hooks.
func (r *Repo) HooksDir(ctx context.Context) (string, error) {
	out, err := r.git(ctx, "rev-parse", "--git-path", "hooks")
	if err != nil {
		return "", err
	}
	dir := strings.TrimSpace(out)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(r.Worktree, dir)
	}
	return dir, nil
}

// InstalledHook is what InstallHooks did with one hook.
type InstalledHook struct {
	Name string `json:"name"`
	Path string `json:"path"`
	// Chained is the user's hook that ours now runs first ("" if none).
	Chained string `json:"chained,omitempty"`
}

// InstallHooks writes Thoughtbox's hooks into HooksDir. command is how a
// hook runs thoughtbox. A hook already there that is not ours is renamed
// beside it (name.thoughtbox-chained) and run first by ours, with the same
// arguments; its failure still fails the commit, as before. Installing
// again rewrites our hooks and chains nothing twice.
func (r *Repo) InstallHooks(ctx context.Context, command string) ([]InstalledHook, error) {
	dir, err := r.HooksDir(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []InstalledHook
	for _, name := range Hooks {
		path := filepath.Join(dir, name)
		h := InstalledHook{Name: name, Path: path}
		cur, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return out, err
		case !bytes.Contains(cur, []byte(hookMarker)):
			if _, err := os.Stat(path + chainedSuffix); err == nil {
				return out, fmt.Errorf("%s is not ours, and %s already exists: move one of them away", path, path+chainedSuffix)
			}
			if err := os.Rename(path, path+chainedSuffix); err != nil {
				return out, err
			}
			h.Chained = path + chainedSuffix
		}
		if _, err := os.Stat(path + chainedSuffix); err == nil {
			h.Chained = path + chainedSuffix
		}
		if err := os.WriteFile(path, []byte(hookScript(name, command)), 0o755); err != nil {
			return out, err
		}
		out = append(out, h)
	}
	return out, nil
}

// hookScript runs the chained hook first (its status decides, as it did
// before), then ours, whose failure is only a warning: a hook of ours
// never blocks a commit. pre-push and post-rewrite read what git writes
// on their standard input (the refs pushed, the map of rewritten
// commits), which both hooks need: it is read once, kept in tb_in, and
// handed to the chained hook.
func hookScript(name, command string) string {
	head := "#!/bin/sh\n" + hookMarker + " (written by `thoughtbox hooks install`; edits are lost on the next install)\n" +
		"chained=\"$0" + chainedSuffix + "\"\n"
	run := "\"$chained\" \"$@\" || exit $?"
	if readsStdin(name) {
		// git writes the hook's input once: it is kept here for the
		// chained hook and for ours.
		head += "tb_in=$(cat)\n"
		run = "{ [ -z \"$tb_in\" ] || printf '%s\\n' \"$tb_in\"; } | " + run
	}
	return head + "if [ -x \"$chained\" ]; then\n\t" + run + "\nfi\n" +
		hookBody(name, command) + "exit 0\n"
}

// readsStdin names the hooks git hands input on standard input.
func readsStdin(name string) bool { return name == "pre-push" || name == "post-rewrite" }

// hookGitDirShell sets d to the worktree's git dir as HookGitDir finds
// it, without running git.
const hookGitDirShell = `d=${GIT_DIR:-.git}
if [ -f "$d" ]; then
	IFS= read -r d 2>/dev/null <"$d"
	d=${d#gitdir: }
fi
`

// hookBody is what a hook does after the chained one. Every hook runs on
// every commit, so each does its work in the shell: prepare-commit-msg
// reads the worktree's active-session file (found as HookGitDir finds the
// git dir, checked as ActiveSessionIn checks it) and runs git
// interpret-trailers as AddSessionTrailer does; post-commit and
// post-rewrite write one pending event (see PendingEvents) and start
// `thoughtbox hook drain` in the background, never waited for (its
// output goes nowhere, so git does not wait for it either). post-commit
// reads the new commit's id from HEAD and the branch's loose ref file
// (git has just written it), falling back to git rev-parse. Their cost is
// the shell and the drain's fork, whatever the size of the ledger.
func hookBody(name, command string) string {
	warn := "echo \"thoughtbox: warning: the " + name + " hook failed; the commit goes on\" >&2\n"
	drain := "unset GIT_INDEX_FILE\n" + shellQuote(command) + " hook drain </dev/null >/dev/null 2>&1 &\n"
	switch name {
	case "pre-push":
		return prePushBody(command)
	case "post-commit":
		return hookGitDirShell + `p="$d/thoughtbox/pending"
h=
{ IFS= read -r h; } 2>/dev/null <"$d/HEAD"
case $h in
"ref: "*)
	c=$d
	if [ -f "$d/commondir" ]; then
		IFS= read -r c 2>/dev/null <"$d/commondir"
		case $c in /*) ;; *) c=$d/$c ;; esac
	fi
	r=${h#ref: } h=
	{ IFS= read -r h; } 2>/dev/null <"$c/$r"
	;;
esac
case $h in *[!0123456789abcdef]*) h= ;; esac
if [ ${#h} -ne 40 ]; then
	h=$(git rev-parse -q --verify HEAD 2>/dev/null) || exit 0
fi
[ -d "$p" ] || mkdir -p "$p" 2>/dev/null
echo "commit $h" 2>/dev/null >"$p/c-$h" || exit 0
` + drain
	case "post-rewrite":
		return hookGitDirShell + `case $1 in amend | rebase) ;; *) exit 0 ;; esac
p="$d/thoughtbox/pending"
mkdir -p "$p" 2>/dev/null
last=
{
	echo "rewrite $1"
	[ -z "$tb_in" ] || printf '%s\n' "$tb_in" | while read -r old new rest; do echo "$old $new"; done
} >"$p/.r-$$" 2>/dev/null || exit 0
for w in $tb_in; do last=$w; done
mv -f "$p/.r-$$" "$p/r-$$-${last:-x}" 2>/dev/null || exit 0
` + drain
	case "prepare-commit-msg":
		return hookGitDirShell + prepareShell + warn
	}
	return shellQuote(command) + " hook " + name + " \"$@\" || " + warn
}

// prepareShell is prepare-commit-msg's work, after hookGitDirShell; a
// failure of git interpret-trailers runs the warning that follows.
const prepareShell = `id= more=
{ read -r id; read -r more; } 2>/dev/null <"$d/thoughtbox/active-session"
case $id in
'' | *[!abcdefghijklmnopqrstuvwxyz0123456789-]*) exit 0 ;;
esac
if [ -n "$more" ] || [ ${#id} -gt 128 ]; then
	exit 0
fi
git interpret-trailers --in-place --if-exists addIfDifferent --trailer "` + SessionTrailer + `: $id" "$1" || `

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// HookGitDir is the git dir of the worktree a hook runs in: GIT_DIR when
// git set it, else the .git of the working directory (a folder, or a file
// naming a linked worktree's folder). It runs no git command: the commit
// hooks read only what they need.
func HookGitDir(dir string, getenv func(string) string) (string, error) {
	if g := getenv("GIT_DIR"); g != "" {
		if !filepath.IsAbs(g) {
			g = filepath.Join(dir, g)
		}
		return g, nil
	}
	dotGit := filepath.Join(dir, ".git")
	fi, err := os.Stat(dotGit)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return dotGit, nil
	}
	data, err := os.ReadFile(dotGit)
	if err != nil {
		return "", err
	}
	g, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return "", fmt.Errorf("%s: expected a gitdir: line", dotGit)
	}
	g = strings.TrimSpace(g)
	if !filepath.IsAbs(g) {
		g = filepath.Join(dir, g)
	}
	return g, nil
}

// ActiveSessionIn reads the active session of the worktree whose git dir
// is gitDir ("" when none, or when the file holds no valid id).
func ActiveSessionIn(gitDir string) string {
	data, err := os.ReadFile(filepath.Join(gitDir, "thoughtbox", "active-session"))
	if err != nil {
		return ""
	}
	id := strings.TrimSpace(string(data))
	if id == "" || len(id) > 128 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return ""
	}
	return id
}

// AddSessionTrailer adds "Thoughtbox-Session: id" to the final trailer
// block of the commit message in msgFile, unless that block has it
// already (git interpret-trailers decides where the block is, as git
// itself reads it).
func AddSessionTrailer(ctx context.Context, dir, msgFile, id string) error {
	_, err := gitOutput(ctx, dir, "interpret-trailers", "--in-place", "--if-exists", "addIfDifferent",
		"--trailer", "Thoughtbox-Session: "+id, msgFile)
	return err
}
