package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/thoughtbox/thoughtbox/cmd/thoughtbox/internal/cli"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/*.txtar from what the commands print")

// testSessionIDVar, when set in a script, is the id given to the next
// session started, so that scripts can name sessions and test prefixes.
const testSessionIDVar = "THOUGHTBOX_TEST_SESSION_ID"

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"thoughtbox": func() {
			fillDisk(os.Getenv(testFullDiskVar))
			env := cli.OSEnv()
			if id := os.Getenv(testSessionIDVar); id != "" {
				env.NewID = func() string { return id }
			}
			os.Exit(cli.Main(context.Background(), os.Args[1:], env))
		},
	})
}

// testFullDiskVar, when set in a script, makes the disk look full to the
// command: "publish" fails every write but the write-ahead log's appends
// (a full disk where the log still has room in the zeros it wrote ahead),
// "all" fails every write.
const testFullDiskVar = "THOUGHTBOX_TEST_FULL_DISK"

func fillDisk(mode string) {
	switch mode {
	case "":
	case "publish":
		durable.SetFault(func(path string) error {
			if filepath.Base(path) == "log" && filepath.Base(filepath.Dir(path)) == "thoughtbox" {
				return nil
			}
			return syscall.ENOSPC
		})
	case "all":
		durable.SetFault(func(string) error { return syscall.ENOSPC })
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: expected publish or all\n", testFullDiskVar, mode)
		os.Exit(2)
	}
}

// TestScripts runs the CLI scripts in testdata: each one runs thoughtbox
// commands against a fresh data directory ($WORK/data) and checks their
// exit status, stdout and stderr.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata",
		UpdateScripts: *update,
		Cmds:          map[string]func(*testscript.TestScript, bool, []string){"exits": exits, "sleep": sleep, "inspector": inspectorCmd},
		Condition:     condition,
		Setup: func(env *testscript.Env) error {
			// A binary built with -race sleeps a second on exit by default
			// (waiting for late race reports); every command here is a
			// process, so that second would dominate the run.
			env.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
			return nil
		},
	})
}

// sleep waits for a duration, for scripts about ages ("sleep 1100ms").
func sleep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sleep duration")
	}
	d, err := time.ParseDuration(args[0])
	if err != nil {
		ts.Fatalf("sleep: %v", err)
	}
	time.Sleep(d)
}

// exits runs a command and checks its exit status:
//
//	exits 2 thoughtbox sessions
//
// Its stdout and stderr are kept for the stdout and stderr commands, as
// after exec.
func exits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exits")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits status command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: status %q is not a number", args[0])
	}
	got := 0
	var exitErr *exec.ExitError
	switch err := ts.Exec(args[1], args[2:]...); {
	case errors.As(err, &exitErr):
		got = exitErr.ExitCode()
	case err != nil:
		ts.Fatalf("exits: %v", err)
	}
	if got != want {
		ts.Fatalf("exit status %d, want %d", got, want)
	}
}
