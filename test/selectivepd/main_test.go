// Package selectivepd_test is the end-to-end suite of selective disaggregation: an
// in-process smg (test/fleet) with --selective-pd-uncached-tokens in front of simulated
// vLLM and SGLang workers (test/sim), checking which engine gets which request shape
// through the simulators' counters (decode_only_requests, handoffs, recomputes) and the
// gateway's smg_pd_decisions_total.
package selectivepd_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a gateway, simulator or client goroutine outlives the
// tests (everything is stopped through t.Cleanup).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
