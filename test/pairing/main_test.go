// Package pairing_test is the end-to-end suite of issue #6 (prefill/decode pairing): an
// in-process smg (test/fleet) in front of simulated vLLM and SGLang workers (test/sim) with
// mixed KV transports and layouts, checking the 503 no_compatible_pd_pair answer, the
// --pd-pairing-mode rules as a client sees them, which pairs the gateway actually used (sim
// stats) and the pd_pairing keys of GET /workers. The start-up check of --pd-pairing-mode
// against the built binary lives in test/policies (startup_test.go), with the other
// start-up flag checks.
package pairing_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a gateway, simulator or client goroutine outlives the
// tests (everything is stopped through t.Cleanup).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
