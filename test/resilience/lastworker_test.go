package resilience_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/sim"
)

// A single-worker pool (1 prefill, 1 decode, SGLang over HTTP) survives poisoned requests:
// each one that fails on the only prefill fails with the engine's error, is tried twice
// there and counted once on its breaker (the repeat is the request's), and the healthy
// requests right after it get 200. Even once the prefill's breaker opens (threshold 2 here),
// the leg is in panic mode: the ready prefill still serves, and the decode's breaker never
// moved.
func TestSingleWorkerPoolSurvivesPoisonedRequests(t *testing.T) {
	t.Parallel()
	f := sglang(t, 1, 1, func(c *config.Config) { c.CBFailureThreshold = 2 })
	g, pre, dec := f.Gateway, f.Prefills[0], f.Decodes[0]
	for i := range 2 {
		r := g.Post(t, "/generate", generate("poisoned", 4, false, "prefill:status:500"), nil)
		assert.Less(t, r.Elapsed, bound, "hang guard")
		assert.Contains(t, requireError(t, r, http.StatusInternalServerError, "prefill_upstream_error"), "injected status 500")
		waitIdle(t, f.Sims()...)
		_, _, fail := cb(t, g, pre.URL())
		assert.Equal(t, float64(i+1), fail, "counted once per request")
		assert.Equal(t, int64(2*(i+1)), pre.Stats().Requests, "tried twice on the only prefill, then the repeat ends it")
	}
	state, _, _ := cb(t, g, pre.URL())
	require.Equal(t, float64(1), state, "two poisoned requests opened the prefill's breaker (threshold 2)")

	for i := range 5 {
		r := g.Post(t, "/generate", generate("healthy", 4, false), nil)
		require.Equal(t, http.StatusOK, r.Status, "request %d: %s", i, r.Body)
		assert.Equal(t, sim.HandoffText("healthy", 4), r.Object(t)["text"])
	}
	waitIdle(t, f.Sims()...)
	dstate, dok, dfail := cb(t, g, dec.URL())
	assert.Equal(t, []float64{0, 0}, []float64{dstate, dfail}, "the decode's breaker did not move")
	assert.Equal(t, float64(5), dok, "a success per healthy request; the poisoned requests' decode legs were cancelled")
	ds := dec.Stats()
	assert.Equal(t, []int64{5, 0}, []int64{ds.Requests - ds.Aborted, ds.Errors}, "the decode answered the healthy requests only (%+v)", ds)
	m := g.Metrics(t)
	assert.Empty(t, m.Find("smg_worker_cb_transitions_total", "worker", dec.URL()))
	assert.Equal(t, float64(1), m.Sum("smg_worker_cb_transitions_total", "worker", pre.URL(), "from", "closed", "to", "open"))
}

// Panic mode never reaches a worker that failed its health checks: with the only decode
// gone (its breaker opened by the first failure, then its health probes failed), requests
// get 503 no_available_workers naming the decode, not the 502 of a leg sent to it.
func TestPanicModeSkipsAnUnhealthyWorker(t *testing.T) {
	t.Parallel()
	f := sglang(t, 1, 1, func(c *config.Config) { c.CBFailureThreshold = 1; c.DisableRetries = true })
	g, dec := f.Gateway, f.Decodes[0]
	require.Equal(t, http.StatusOK, g.Post(t, "/generate", generate("before", 4, false), nil).Status)
	require.NoError(t, dec.Close())
	require.Eventually(t, func() bool {
		return g.Post(t, "/generate", generate("decode gone", 4, false), nil).Status == http.StatusServiceUnavailable
	}, bound, 50*time.Millisecond, "the decode is marked unhealthy")
	for range 3 {
		r := g.Post(t, "/generate", generate("decode gone", 4, false), nil)
		assert.Less(t, r.Elapsed, bound, "hang guard")
		assert.Contains(t, requireError(t, r, http.StatusServiceUnavailable, "no_available_workers"), "decode")
	}
	state, _, _ := cb(t, g, dec.URL())
	assert.Equal(t, float64(1), state, "its breaker is open too: only its health keeps it out")
}

// A pool whose only decode's breaker is open still serves: the decode leg is in panic mode
// (a ready decode, only gated), so healthy requests get 200 from it instead of 503
// no_available_workers, and its breaker stays open (answers while open do not move it).
func TestOnlyDecodeWithOpenBreakerStillServes(t *testing.T) {
	t.Parallel()
	f := sglang(t, 1, 1, func(c *config.Config) { c.CBFailureThreshold = 1; c.DisableRetries = true })
	g, pre, dec := f.Gateway, f.Prefills[0], f.Decodes[0]
	r := g.Post(t, "/generate", generate("decode fails", 4, false, "decode:status:500"), nil)
	assert.Less(t, r.Elapsed, bound, "hang guard")
	requireError(t, r, http.StatusInternalServerError, "decode_internal_error")
	waitIdle(t, f.Sims()...)
	state, _, fail := cb(t, g, dec.URL())
	require.Equal(t, []float64{1, 1}, []float64{state, fail}, "the decode's breaker opened (threshold 1)")

	d0 := dec.Stats().Requests
	for i := range 3 {
		r := g.Post(t, "/generate", generate("healthy", 4, false), nil)
		require.Equal(t, http.StatusOK, r.Status, "request %d: %s", i, r.Body)
		assert.Equal(t, sim.HandoffText("healthy", 4), r.Object(t)["text"])
	}
	assert.Equal(t, d0+3, dec.Stats().Requests, "served by the open-breaker decode")
	state, _, _ = cb(t, g, dec.URL())
	assert.Equal(t, float64(1), state, "still open")
	pstate, _, pfail := cb(t, g, pre.URL())
	assert.Equal(t, []float64{0, 0}, []float64{pstate, pfail}, "the prefill's breaker did not move")
}
