package resilience_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// livenessBench skips t unless SMG_LIVENESS_BENCH=1 (make bench-liveness): the liveness
// benchmark runs a minute per case.
func livenessBench(t *testing.T) {
	t.Helper()
	if os.Getenv("SMG_LIVENESS_BENCH") != "1" {
		t.Skip("benchmark: set SMG_LIVENESS_BENCH=1 (make bench-liveness)")
	}
}

// The liveness benchmark's HTTP cases: one decode of two wedges (its /health stays OK) 5 s
// into a 60 s run of 16 streaming clients sharing a system prompt, 2P+2D, cache_aware on
// both legs, the watchdog on its defaults (stall floor 5 s, ceiling 30 s, canary deadline
// 5 s), simulators with a 50 ms inter-token latency, the engines' 300 s handoff timeout and
// a hang that lasts. The criteria: at most the requests in
// flight when it hung wait over 15 s, none 45 s, at least 90 % of all requests under twice
// the healthy median (the 5 s warm-up's, same load), and a canary confirmed it. Each case
// prints a row of the table in docs/benchmarks.md.
func TestLivenessBenchHTTPHungDecode(t *testing.T) {
	livenessBench(t)
	fmt.Println(fleet.LivenessHeader)
	for _, c := range []struct{ name, engine string }{
		{"HTTP vLLM NIXL, hung decode", sim.EngineVLLM},
		{"HTTP SGLang, hung decode", sim.EngineSGLang},
	} {
		t.Run(c.engine, func(t *testing.T) {
			f := fleet.Start(t, fleet.Spec{Engine: c.engine, Prefills: 2, Decodes: 2,
				Gateway: func(g *config.Config) {
					g.Policy, g.PrefillPolicy, g.DecodePolicy = "cache_aware", "cache_aware", "cache_aware"
				},
				Sim: func(_ string, _ int, c *sim.Config) {
					// The engines' own handoff timeout (SGLang's 300 s bootstrap timeout) and a
					// wedge that does not end by itself: the watchdog is the detector.
					c.ITL, c.HandoffTimeout, c.HangMax = 50*time.Millisecond, 300*time.Second, 10*time.Minute
				}})
			w := stallWedge(60*time.Second, 5*time.Second)
			w.Warm = 5 * time.Second
			l, out := hungDecodeRun(t, f, w, 45*time.Second)
			assert.GreaterOrEqual(t, l.Share(), 0.9, "at least 90 %% of the requests under twice the healthy median: %v", l)
			fmt.Println(fleet.LivenessRow(c.name, l, out.canaries, out.hung, out.healthy))
		})
	}
}
