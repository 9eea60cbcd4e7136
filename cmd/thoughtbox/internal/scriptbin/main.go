// Command scriptbin is the thoughtbox the CLI scripts (testdata/*.txtar)
// run: the real command line (cli.Main) with two hooks only tests have —
// a fixed id for the next session started (THOUGHTBOX_TEST_SESSION_ID)
// and a disk that looks full (THOUGHTBOX_TEST_FULL_DISK). The scripts
// start it about 750 times; built without the race detector it starts
// four times cheaper than the race-built test binary, and the packages
// it runs are raced by their own tests. Not part of the product: only
// cmd/thoughtbox's tests build it.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/thoughtbox/thoughtbox/cmd/thoughtbox/internal/cli"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// The variables a script sets for the test hooks.
const (
	// SessionIDVar, when set, is the id given to the next session
	// started, so that scripts can name sessions and test prefixes.
	SessionIDVar = "THOUGHTBOX_TEST_SESSION_ID"
	// FullDiskVar makes the disk look full: "publish" fails every write
	// but the write-ahead log's appends (a full disk where the log still
	// has room in the zeros it wrote ahead), "all" fails every write.
	FullDiskVar = "THOUGHTBOX_TEST_FULL_DISK"
)

func main() {
	fillDisk(os.Getenv(FullDiskVar))
	env := cli.OSEnv()
	if id := os.Getenv(SessionIDVar); id != "" {
		env.NewID = func() string { return id }
	}
	os.Exit(cli.Main(context.Background(), os.Args[1:], env))
}

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
		fmt.Fprintf(os.Stderr, "%s=%q: expected publish or all\n", FullDiskVar, mode)
		os.Exit(2)
	}
}
