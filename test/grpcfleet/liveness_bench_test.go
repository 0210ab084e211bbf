package grpcfleet_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// The liveness benchmark's gRPC SGLang cases (SMG_LIVENESS_BENCH=1, make bench-liveness):
// 2P+2D, cache_aware on both legs, the watchdog on its defaults (stall floor 5 s, ceiling
// 30 s, canary deadline 5 s), 16 streaming clients sharing a system prompt, simulators with
// a 50 ms inter-token latency, SGLang's 300 s bootstrap timeout and a hang that lasts.
//   - hung decode, 5 s into a 60 s run: at most the requests in flight when it hung wait
//     over 15 s, none 45 s, at least 90 % under twice the healthy median (the 5 s
//     warm-up's), a canary confirmed it;
//   - hung prefill and malformed decode, 5 s into a 30 s run: every request answered
//     within 45 s, the culprit charged, no healthy breaker moved.
//
// Each case prints a row of the table in docs/benchmarks.md.
func TestLivenessBenchGRPC(t *testing.T) {
	if os.Getenv("SMG_LIVENESS_BENCH") != "1" {
		t.Skip("benchmark: set SMG_LIVENESS_BENCH=1 (make bench-liveness)")
	}
	fmt.Println(fleet.LivenessHeader)
	for _, c := range []struct {
		name, role, fault string
		run               time.Duration
		share             bool
	}{
		{"gRPC SGLang, hung decode", grpcsim.RoleDecode, grpcsim.FaultHang, 60 * time.Second, true},
		{"gRPC SGLang, hung prefill", grpcsim.RolePrefill, grpcsim.FaultHang, 30 * time.Second, false},
		{"gRPC SGLang, malformed decode", grpcsim.RoleDecode, grpcsim.FaultMalformed, 30 * time.Second, false},
	} {
		t.Run(c.role+" "+c.fault, func(t *testing.T) {
			l, out := grpcWedgeRun(t, grpcWedge{
				role: c.role, fault: c.fault, worst: 45 * time.Second,
				load: fleet.Wedge{Clients: 16, Warm: 5 * time.Second, Run: c.run, After: 5 * time.Second,
					Path: "/v1/chat/completions", Body: fleet.StallChat(pdModel)},
				sim: func(s *grpcsim.Config) { s.HandoffTimeout, s.HangMax = 300*time.Second, 10*time.Minute },
			})
			if c.share {
				assert.GreaterOrEqual(t, l.Share(), 0.9, "at least 90 %% of the requests under twice the healthy median: %v", l)
			}
			fmt.Println(fleet.LivenessRow(c.name, l, out.canaries, out.culprit, out.healthy))
		})
	}
}
