// Package shutdown_test is the end-to-end suite of the gateway's SIGTERM drain: a real `smg
// launch` process (built by TestMain) in front of simulated SGLang engines (test/sim, on
// loopback), whose slow decode (inter-token latency) keeps streams open across the drain.
// It checks what platforms expect: /readiness 503 at once, new requests served during
// --shutdown-drain-delay-secs, the listener closed after it, in-flight requests cut at the
// --shutdown-grace-period-secs deadline with 503 server_shutting_down (streams: an SSE error
// event and data: [DONE]), and the exit code: 3 when requests were cut, 0 on a clean drain.
package shutdown_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/smg-go/smg/test/fleet"
)

// smgBin is the gateway binary built by TestMain (cmd/smg).
var smgBin string

// TestMain builds cmd/smg into a temporary directory, runs the tests, and fails the package
// when a simulator or client goroutine outlives them.
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
