// Command thoughtbox reads and writes a Thoughtbox reasoning ledger.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/thoughtbox/thoughtbox/cmd/thoughtbox/internal/cli"
)

func main() {
	calmSysmon()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.OSEnv())
	stop()
	os.Exit(code)
}
