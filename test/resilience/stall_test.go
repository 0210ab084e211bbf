package resilience_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// sharedPrefix is the system prompt every client of the stall tests sends: cache_aware
// keeps them all on one pair.
const sharedPrefix = "You are a careful assistant. Answer briefly, cite nothing, and keep every answer to one line. "

func stallBody(client, i int) []byte {
	b, _ := json.Marshal(map[string]any{"model": "sim-model", "max_tokens": 8, "stream": true,
		"messages": []map[string]any{{"role": "system", "content": sharedPrefix},
			{"role": "user", "content": fmt.Sprintf("question %d of client %d", i, client)}}})
	return b
}

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
			hungDecodeRun(t, f, false)
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
	hungDecodeRun(t, f, true)
}

// hungDecodeRun warms the fleet up, wedges the decode cache_aware chose one second into a
// 15 s run (6 s on defaults: the run ends when its stranded requests are answered) and
// checks the outcome.
func hungDecodeRun(t *testing.T, f *fleet.Fleet, defaults bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const path = "/v1/chat/completions"
	warm := f.Gateway.Load(ctx, 16, 2*time.Second, path, stallBody)
	for _, s := range warm {
		require.Equal(t, http.StatusOK, s.Status, "warm-up: %v %s", s.Err, s.Body)
	}
	healthy := fleet.Median(warm)
	// Wedge the decode cache_aware chose.
	hung, other := f.Decodes[0], f.Decodes[1]
	if other.Stats().Requests > hung.Stats().Requests {
		hung, other = other, hung
	}
	otherBefore := other.Stats().Requests

	type result struct{ shots []fleet.Shot }
	done := make(chan result, 1)
	run := 15 * time.Second
	if defaults {
		run = 6 * time.Second
	}
	go func() { done <- result{f.Gateway.Load(ctx, 16, run, path, stallBody)} }()
	time.Sleep(time.Second)
	hung.Reset()
	require.NoError(t, hung.SetFault(sim.FaultHang))
	hungAt := time.Now()
	shots := (<-done).shots
	hung.ClearFaults()

	fast, slow, worst := 0, 0, time.Duration(0)
	for i, s := range shots {
		require.Equal(t, http.StatusOK, s.Status, "request %d (started %v after the hang): %v %s", i, s.Start.Sub(hungAt).Round(time.Millisecond), s.Err, s.Body)
		assert.NotContains(t, string(s.Body), `"error"`, "request %d: a clean stream", i)
		assert.True(t, strings.HasSuffix(strings.TrimSpace(string(s.Body)), "data: [DONE]"), "request %d ends with [DONE]", i)
		if s.Elapsed < 2*healthy {
			fast++
		}
		if s.Elapsed > 15*time.Second {
			slow++
		}
		worst = max(worst, s.Elapsed)
	}
	t.Logf("%d requests, healthy median %v, %d under 2× it, %d over 15 s, worst %v", len(shots), healthy, fast, slow, worst)
	if defaults {
		assert.Less(t, worst, 45*time.Second, "no request waits 45 s")
	} else {
		assert.Less(t, worst, 15*time.Second, "a stranded request is retried within the stall bound and the canary deadline")
		// The share under 2× the healthy median is a timing figure (it moves with the
		// machine's load): it is measured by the liveness benchmark, not asserted here.
	}
	assert.Greater(t, other.Stats().Requests, otherBefore, "the healthy decode serves the rest")

	waitIdle(t, f.Sims()...)
	st := hung.Stats()
	assert.GreaterOrEqual(t, st.CanaryRequests, int64(1), "a canary confirmed the hung decode")
	stranded := st.Requests - st.CanaryRequests
	assert.Positive(t, stranded, "client legs reached the hung decode before it was suspected")
	assert.LessOrEqual(t, stranded, int64(16), "only the legs in flight when it hung (one per client): no new leg went to it")
	assert.LessOrEqual(t, int64(slow), stranded, "only requests it stranded waited over 15 s")
	assert.Equal(t, st.Requests, st.Aborted, "every leg that reached the hung decode was aborted (%+v)", st)
	state, _, fail := cb(t, f.Gateway, hung.URL())
	assert.Equal(t, float64(1), state, "the hung decode's breaker opened")
	assert.Positive(t, fail)
	for _, s := range append([]*sim.Server{other}, f.Prefills...) {
		state, _, fail := cb(t, f.Gateway, s.URL())
		assert.Equal(t, []float64{0, 0}, []float64{state, fail}, "healthy %s: breaker closed, nothing blamed", s.URL())
	}
}
