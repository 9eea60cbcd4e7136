package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/thoughtbox/thoughtbox/coderepo"
)

type hooksCmd struct {
	Install hooksInstallCmd `cmd:"" help:"Install the Git hooks that name the worktree's active session in each commit, link commits (and their amends, rebases and cherry-picks) to it, and send the reasoning linked to pushed commits to the bound remote (chains hooks already there; honours core.hooksPath)."`
}

type hooksInstallCmd struct{}

// Run writes the hooks into the repository's hooks folder.
func (c *hooksInstallCmd) Run(a *app) error {
	r, err := a.code.worktree(a.ctx)
	if err != nil {
		return err
	}
	hooks, err := r.InstallHooks(a.ctx, hookCommand())
	if err != nil {
		return err
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, hooks)
	}
	printHooks(a, hooks)
	return nil
}

// printHooks says what hooks install (or enable --agent) wrote.
func printHooks(a *app, hooks []coderepo.InstalledHook) {
	for _, h := range hooks {
		if h.Chained != "" {
			fmt.Fprintf(a.env.Stdout, "installed %s (runs %s first)\n", h.Path, filepath.Base(h.Chained))
		} else {
			fmt.Fprintf(a.env.Stdout, "installed %s\n", h.Path)
		}
	}
}

// hookCommand is how a hook runs this program: thoughtbox as found on
// PATH (what the user runs), else this executable.
func hookCommand() string {
	if p, err := exec.LookPath("thoughtbox"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	if p, err := os.Executable(); err == nil {
		return p
	}
	return "thoughtbox"
}

// hookCmd is what hooks run that need the engine; not for people. The
// prepare-commit-msg hook install writes does its work in the shell (see
// coderepo.InstallHooks); its command here serves hooks installed by
// earlier versions, which call it.
type hookCmd struct {
	PrepareCommitMsg hookPrepareCmd `cmd:"" name:"prepare-commit-msg" help:"Add Thoughtbox-Session: <active session> to the commit message's trailers."`
	PrePush          hookPrePushCmd `cmd:"" name:"pre-push" help:"Send the reasoning linked to the pushed commits to the bound remote (git's input on stdin)."`
	Drain            hookDrainCmd   `cmd:"" help:"Record the links the post-commit and post-rewrite hooks left pending."`
}

type hookDrainCmd struct{}

// Run records the pending link events; the caller (cli.Run) took the
// drain lock, or ended at once when another drain held it. The hooks
// start it in the background with its output discarded, so a
// problem only leaves the events for the next why, blame or relink.
func (c *hookDrainCmd) Run(a *app) error {
	if a.cfg == nil || a.cfg.Code == nil || a.proj == nil {
		return nil
	}
	ask, err := a.asker()
	if err != nil {
		return err
	}
	res, err := ask.DrainLocked(a.ctx) // the lock was taken before the ledger was opened
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(a.env.Stderr, "warning: %s\n", w)
	}
	return nil
}

type hookPrepareCmd struct {
	File   string `arg:"" help:"The commit message file."`
	Source string `arg:"" optional:"" help:"Where the message comes from (git's second argument)."`
	Commit string `arg:"" optional:"" help:"The commit (git's third argument)."`
}

// Run reads the worktree's active-session file and nothing else of the
// ledger, and never fails a commit: a problem is a warning on stderr.
func (c *hookPrepareCmd) Run(a *app) error {
	gitDir, err := coderepo.HookGitDir(workingDir(a.env), func(n string) string { v, _ := a.env.LookupEnv(n); return v })
	if err != nil {
		fmt.Fprintf(a.env.Stderr, "thoughtbox: warning: %v; the commit names no session\n", err)
		return nil
	}
	id := coderepo.ActiveSessionIn(gitDir)
	if id == "" {
		return nil
	}
	if err := coderepo.AddSessionTrailer(a.ctx, workingDir(a.env), c.File, id); err != nil {
		fmt.Fprintf(a.env.Stderr, "thoughtbox: warning: %v; the commit names no session\n", err)
	}
	return nil
}
