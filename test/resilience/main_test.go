// Package resilience_test is the fault-injection end-to-end suite of issue #9: an in-process
// smg (test/fleet) in front of simulated SGLang and vLLM engines (test/sim) whose faults
// (sim_fault) break one leg at a time. Each case asserts what the client gets (status,
// error code, body shape), that it ends within a bound (a hang guard, not a timing
// assertion), and, through the simulators' counters, what happened to the other leg.
package resilience_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a gateway, simulator, proxy or client goroutine outlives
// the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
