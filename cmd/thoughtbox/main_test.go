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
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/thoughtbox/thoughtbox/cmd/thoughtbox/internal/cli"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/*.txtar from what the commands print")

func TestMain(m *testing.M) {
	// The test binary is still "thoughtbox" for the tests that run it
	// as a command; the scripts run scriptBinary (see scriptSetup).
	testscript.Main(m, map[string]func(){
		"thoughtbox": func() { os.Exit(cli.Main(context.Background(), os.Args[1:], cli.OSEnv())) },
	})
}

// scriptBinary builds internal/scriptbin, the thoughtbox the scripts run
// (the real command line plus the test hooks), into a folder of its own,
// once: without the race detector it starts about four times cheaper
// than this race-built test binary, and the scripts start it hundreds of
// times.
var scriptBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "thoughtbox-scripts")
	if err != nil {
		return "", err
	}
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "thoughtbox"), "./internal/scriptbin").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./internal/scriptbin: %v\n%s", err, out)
	}
	return dir, nil
})

// scriptSetup puts scriptBinary first on a script's PATH.
func scriptSetup(env *testscript.Env) error {
	dir, err := scriptBinary()
	if err != nil {
		return err
	}
	env.Setenv("PATH", dir+string(os.PathListSeparator)+env.Getenv("PATH"))
	// A binary built with -race (the test binary, run as a command by
	// some tests) sleeps a second on exit by default, waiting for late
	// race reports.
	env.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	return nil
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
		Setup:         scriptSetup,
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
