package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// failure is an error the CLI itself reports, with its own hints and,
// after them, indented lines (such as candidate ids); it exits 1.
type failure struct {
	msg   string
	hints []string
	lines []string
}

func (e *failure) Error() string { return e.msg }

// flagOf names the command-line spelling of a ThoughtInput or
// CreateSessionParams field, for hints.
var flagOf = map[string]string{
	"thought":           "<text>",
	"thoughtNumber":     "--number",
	"totalThoughts":     "--total",
	"branchId":          "--branch",
	"branchFromThought": "--from",
	"revisesThought":    "--revises",
	"isRevision":        "--revises",
	"title":             "<title>",
	"sessionId":         "<id>",
	"query":             "<query>",
	"limit":             "--limit",
	"offset":            "--offset",
}

// reportUsage prints a kong parse error and returns ExitUsage.
func reportUsage(w io.Writer, err error) int {
	cmd := ""
	var pe *kong.ParseError
	if errors.As(err, &pe) && pe.Context != nil {
		cmd = pe.Context.Command()
	}
	return reportUsageOf(w, cmd, err)
}

// reportUsageOf prints a usage error of the command cmd (kong's spelling,
// "" for none) and returns ExitUsage.
func reportUsageOf(w io.Writer, cmd string, err error) int {
	printError(w, err.Error())
	hint := "run 'thoughtbox --help' for usage"
	if cmd != "" {
		name, _, _ := strings.Cut(cmd, " ")
		hint = fmt.Sprintf("run 'thoughtbox %s --help' for usage", name)
	}
	printHint(w, hint)
	return ExitUsage
}

// report prints err the way its kind deserves and returns the exit status.
// cfg is nil if the configuration could not be resolved.
func report(w io.Writer, cfg *config.Config, err error) int {
	var (
		setting *config.SettingError
		fail    *failure
		amb     *ledger.AmbiguousIDError
	)
	switch {
	case errors.As(err, &setting):
		printError(w, setting.Error())
		printHint(w, settingHint(setting.Name))
		return ExitUsage
	case errors.As(err, &fail):
		printError(w, fail.msg)
		for _, h := range fail.hints {
			printHint(w, h)
		}
		for _, l := range fail.lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
		return ExitFailure
	case errors.As(err, &amb):
		printError(w, fmt.Sprintf("session id prefix %q is ambiguous: it matches %d sessions", amb.Prefix, len(amb.Candidates)))
		printHint(w, "give more characters of one of:")
		for _, c := range amb.Candidates {
			fmt.Fprintf(w, "  %s\n", c)
		}
		return ExitFailure
	}

	e := ledger.AsError(err)
	printError(w, e.Message)
	for _, h := range domainHints(cfg, e) {
		printHint(w, h)
	}
	return ExitFailure
}

func domainHints(cfg *config.Config, e *ledger.Error) []string {
	var hints []string
	switch e.Code {
	case ledger.CodeSessionNotFound:
		where := ""
		if cfg != nil {
			where = fmt.Sprintf(" of project %s in %s", cfg.Project, cfg.DataDir)
		}
		hints = append(hints, "'thoughtbox sessions' lists the sessions"+where)
		if cfg != nil && cfg.Storage == config.StorageMemory {
			hints = append(hints, "THOUGHTBOX_STORAGE=memory keeps nothing between runs; every command starts with an empty ledger")
		}
		return hints
	case ledger.CodeStorage:
		if cfg != nil && cfg.Storage == config.StorageFS {
			hints = append(hints, "the ledger repository is "+cfg.RepoPath())
		}
		return hints
	}
	if errors.Is(e, ledger.ErrNumberTaken) {
		if next, ok := e.Details["nextThoughtNumber"].(int); ok {
			return []string{fmt.Sprintf("omit --number to take the next free number (%d); nothing was recorded", next)}
		}
		return []string{"omit --number to take the next free number; nothing was recorded"}
	}
	if field, ok := e.Details["field"].(string); ok {
		if flag, ok := flagOf[field]; ok && flag != field {
			hints = append(hints, fmt.Sprintf("%s is given as %s on the command line", field, flag))
		}
	}
	return hints
}

func settingHint(name string) string {
	switch name {
	case config.EnvStorage:
		return "set THOUGHTBOX_STORAGE to fs (a Git repository in the data directory) or memory (nothing kept), or unset it"
	case config.EnvPartition:
		return "set THOUGHTBOX_PARTITION to monthly, weekly, daily or none, or unset it to use config.json's sessionPartitionGranularity"
	case config.EnvAutoPullInterval:
		return "set THOUGHTBOX_AUTO_PULL_INTERVAL to how often the server pulls, e.g. 30s or 5m (at least 1s), or unset it for 30s"
	case config.EnvAutoPushInterval:
		return "set THOUGHTBOX_AUTO_PUSH_INTERVAL to how often open sessions are pushed, e.g. 10s (at least 1s), or unset it to push sessions when they close"
	case config.EnvProject, "--project":
		return "a project name is 1 to 100 letters, digits, '_', '-' or '.', not starting with '.' or '-'"
	}
	return "run 'thoughtbox --help' for the settings"
}

func printError(w io.Writer, msg string) {
	fmt.Fprintf(w, "thoughtbox: error: %s\n", msg)
}

func printHint(w io.Writer, msg string) {
	fmt.Fprintf(w, "hint: %s\n", msg)
}
