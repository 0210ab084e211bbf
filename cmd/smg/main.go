// Command smg is the PD-disaggregation gateway: `smg launch` serves it, `smg demo` runs it in
// front of a simulated fleet, `smg openapi` prints its API document, `smg version` its
// version. All the work is in package cli; main only wires signals, stdio and the exit code.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/smg-go/smg/cmd/smg/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second SIGINT/SIGTERM during the drain kills the process at once
	}()
	os.Exit(cli.Run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr))
}
