// Package policies_test is the end-to-end suite of issue #7 (per-leg routing policies): an
// in-process smg (test/fleet) in front of simulated SGLang fleets (test/sim), checking where
// requests land per leg (sim stats), and the start-up refusals of the built `smg` binary.
package policies_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// smgBin is the gateway binary built by TestMain (cmd/smg), for the start-up tests.
var smgBin string

// TestMain builds cmd/smg into a temporary directory, runs the tests, and fails the package
// when a gateway, simulator or client goroutine outlives them.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "smg-policies-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		os.Exit(1)
	}
	smgBin = filepath.Join(dir, "smg")
	build := exec.Command("go", "build", "-o", smgBin, "github.com/smg-go/smg/cmd/smg")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "go build cmd/smg:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}
