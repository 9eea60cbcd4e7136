// Command thoughtbox reads and writes a Thoughtbox reasoning ledger.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/thoughtbox/thoughtbox/cmd/thoughtbox/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Main(ctx, os.Args[1:], cli.OSEnv())
	stop()
	os.Exit(code)
}
