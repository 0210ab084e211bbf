package resilience_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// One decode of two wedges (its /health stays OK) under 16 streaming clients with a shared
// prefix and cache_aware policies. The 60 s run is 15 s here, so the detection is
// shortened to keep the stranded requests under 10 % of the run: --stall-floor-secs 1,
// --stall-timeout-secs 2 and --canary-timeout-secs 2 (TestHungDecodeFoundByWatchdogOnDefaults
// runs the defaults).
// The requests it stranded are cut and retried on the healthy decode within the stall
// bound plus the canary deadline (under 15 s; none near 45 s), the healthy decode serves
// the rest (the share of requests under twice the healthy median is logged; the liveness
// benchmark measures it), the
// hung decode's breaker opened after a failed canary (its canary_requests counter), every
// leg that reached it was aborted, and no healthy worker's breaker moved.
func TestHungDecodeFoundByWatchdog(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{sim.EngineVLLM, sim.EngineSGLang} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			f := fleet.Start(t, fleet.Spec{Engine: engine, Prefills: 2, Decodes: 2,
				Gateway: func(g *config.Config) {
					g.Policy, g.PrefillPolicy, g.DecodePolicy = "cache_aware", "cache_aware", "cache_aware"
					g.StallFloor, g.StallTimeout, g.CanaryTimeout = time.Second, 2*time.Second, 2*time.Second
				},
				Sim: func(_ string, _ int, c *sim.Config) { c.ITL = 50 * time.Millisecond }})
			hungDecodeRun(t, f, stallWedge(15*time.Second, time.Second), 15*time.Second)
		})
	}
}

// On the default watchdog settings (stall floor 5 s, ceiling 30 s, canary deadline 5 s) the
// same wedge: only the requests in flight when it hung (one per client) wait longer than
// 15 s, none longer than 45 s, and the canary, not a client, confirms it. (The 90 % share
// is a timing figure, measured on these settings by the liveness benchmark.)
func TestHungDecodeFoundByWatchdogOnDefaults(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineVLLM, Prefills: 2, Decodes: 2,
		Gateway: func(g *config.Config) {
			g.Policy, g.PrefillPolicy, g.DecodePolicy = "cache_aware", "cache_aware", "cache_aware"
		},
		Sim: func(_ string, _ int, c *sim.Config) { c.ITL = 50 * time.Millisecond }})
	hungDecodeRun(t, f, stallWedge(6*time.Second, time.Second), 45*time.Second)
}

// stallWedge is the stall tests' load: 16 streaming clients with the shared prefix, a 2 s
// warm-up, then run with the decode wedged after.
func stallWedge(run, after time.Duration) fleet.Wedge {
	return fleet.Wedge{Clients: 16, Warm: 2 * time.Second, Run: run, After: after,
		Path: "/v1/chat/completions", Body: fleet.StallChat("sim-model")}
}

// hungOutcome is what hungDecodeRun saw beyond the latencies: the hung decode's
// canary_requests and breaker state, and the healthy workers' breakers.
type hungOutcome struct {
	canaries int64
	hung     string
	healthy  string
}

// hungDecodeRun warms the fleet up, wedges the decode cache_aware chose w.After into the
// run (the run ends when its stranded requests are answered) and checks the outcome: every
// request a whole 200 stream within worst, only the stranded legs over 15 s, the canary
// confirmed the hang, the hung decode's breaker open, no healthy breaker moved.
func hungDecodeRun(t *testing.T, f *fleet.Fleet, w fleet.Wedge, worst time.Duration) (fleet.Liveness, hungOutcome) {
	ctx, cancel := context.WithTimeout(context.Background(), w.Warm+w.Run+60*time.Second)
	defer cancel()
	var hung, other *sim.Server
	var otherBefore int64
	run := f.Gateway.Wedge(t, ctx, w, func() func() error {
		// Wedge the decode cache_aware chose.
		hung, other = f.Decodes[0], f.Decodes[1]
		if other.Stats().Requests > hung.Stats().Requests {
			hung, other = other, hung
		}
		otherBefore = other.Stats().Requests
		return func() error { hung.Reset(); return hung.SetFault(sim.FaultHang) }
	})
	hung.ClearFaults()

	bad := 0
	for i, s := range run.Shots {
		ok := s.Status == http.StatusOK && !strings.Contains(string(s.Body), `"error"`) &&
			strings.HasSuffix(strings.TrimSpace(string(s.Body)), "data: [DONE]")
		if !ok {
			bad++
			if bad <= 5 { // the first few; the rest are counted
				t.Errorf("request %d (started %v after the hang, %v): status %d, not a whole clean stream: %v %s",
					i, s.Start.Sub(run.HungAt).Round(time.Millisecond), s.Elapsed.Round(time.Millisecond), s.Status, s.Err, s.Body)
			}
		}
	}
	assert.Zero(t, bad, "every request is a whole 200 stream ending with [DONE], no error event")
	l := run.Liveness()
	t.Log(l)
	assert.Less(t, l.Worst, worst, "no request waits %v (a stranded request is retried within the stall bound and the canary deadline)", worst)
	// The share under 2× the healthy median is a timing figure (it moves with the
	// machine's load): it is measured by the liveness benchmark, not asserted here.
	assert.Greater(t, other.Stats().Requests, otherBefore, "the healthy decode serves the rest")

	waitIdle(t, f.Sims()...)
	st := hung.Stats()
	assert.GreaterOrEqual(t, st.CanaryRequests, int64(1), "a canary confirmed the hung decode")
	stranded := st.Requests - st.CanaryRequests
	assert.Positive(t, stranded, "client legs reached the hung decode before it was suspected")
	assert.LessOrEqual(t, stranded, int64(w.Clients), "only the legs in flight when it hung (one per client): no new leg went to it")
	assert.LessOrEqual(t, int64(l.Slow), stranded, "only requests it stranded waited over 15 s")
	assert.Equal(t, st.Requests, st.Aborted, "every leg that reached the hung decode was aborted (%+v)", st)
	state, _, fail := cb(t, f.Gateway, hung.URL())
	assert.Equal(t, float64(1), state, "the hung decode's breaker opened")
	assert.Positive(t, fail)
	out := hungOutcome{canaries: st.CanaryRequests, hung: fmt.Sprintf("%s, %v failures", fleet.BreakerState(state), fail)}
	moved := 0
	healthy := append([]*sim.Server{other}, f.Prefills...)
	for _, s := range healthy {
		state, _, fail := cb(t, f.Gateway, s.URL())
		assert.Equal(t, []float64{0, 0}, []float64{state, fail}, "healthy %s: breaker closed, nothing blamed", s.URL())
		if state != 0 || fail != 0 {
			moved++
		}
	}
	out.healthy = fmt.Sprintf("%d of %d moved", moved, len(healthy))
	return l, out
}
