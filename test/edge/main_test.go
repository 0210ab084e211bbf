// Package edge_test is the end-to-end suite of the gateway's edge limits: request bodies
// bounded in size, memory and time (a real `smg` process, RSS read from /proc), the admin
// and data-plane API keys, registration limits (refused addresses, the worker cap), the
// redaction of worker URL credentials, request-id checks, and start-up refusals of bad
// flags (exit 2, one line). In-process gateways (test/fleet) front simulated workers
// (test/sim).
package edge_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/smg-go/smg/test/fleet"
)

// smgBin is the gateway binary built by TestMain.
var smgBin string

// TestMain builds cmd/smg into a temporary directory, runs the tests and fails the package
// on leaked goroutines.
func TestMain(m *testing.M) {
	bin, cleanup, err := fleet.BuildSMG()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	smgBin = bin
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		cleanup()
		os.Exit(code)
	}))
}
