// Package e2e_test holds the end-to-end suites of the HTTP PD data plane: an in-process smg
// (app.New) in front of simulated SGLang and vLLM fleets (test/sim), built with test/fleet.
// sglang_*_test.go prove issue #4's "Done when" list, vllm_*_test.go issue #5's.
package e2e_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a gateway, simulator or client goroutine outlives the
// tests (everything is stopped through t.Cleanup).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
