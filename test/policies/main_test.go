// Package policies_test is the end-to-end suite of issue #7 (per-leg routing policies): an
// in-process smg (test/fleet) in front of simulated SGLang fleets (test/sim), checking where
// requests land per leg (sim stats), and the start-up refusals of the built `smg` binary.
package policies_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/smg-go/smg/test/fleet"
)

// smgBin is the gateway binary built by TestMain (cmd/smg), for the start-up tests.
var smgBin string

// TestMain builds cmd/smg into a temporary directory, runs the tests, and fails the package
// when a gateway, simulator or client goroutine outlives them.
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
