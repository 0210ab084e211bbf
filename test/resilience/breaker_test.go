package resilience_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// A flood of 1,000 prompts that the prefill rejects with 400 (client faults) leaves every
// breaker closed with the default thresholds: no transition at all, every prefill outcome a
// success, and the fleet still serves.
func TestFourXXFloodLeavesBreakersClosed(t *testing.T) {
	t.Parallel()
	f := sglang(t, 2, 2, nil)
	g := f.Gateway
	const n, workers = 1000, 16
	body := fleet.Encode(t, generate("rejected prompt", 4, false, "prefill:status:400"))
	var next, bad atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= n {
				r, err := g.Send(context.Background(), "/generate", body, nil)
				if err != nil || r.Status != http.StatusBadRequest {
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	require.Zero(t, bad.Load(), "every request answered 400")
	waitIdle(t, f.Sims()...)

	m := g.Metrics(t)
	assert.Empty(t, m.Find("smg_worker_cb_transitions_total"), "no breaker ever moved")
	for _, s := range f.Sims() {
		st := m.Find("smg_worker_cb_state", "worker", s.URL())
		require.Len(t, st, 1, s.URL())
		assert.Zero(t, st[0].Value, "%s closed", s.URL())
	}
	assert.Equal(t, float64(n), m.Sum("smg_worker_cb_outcomes_total", "outcome", "success"), "one success per prefill leg")
	assert.Zero(t, m.Sum("smg_worker_cb_outcomes_total", "outcome", "failure"))
	assert.Equal(t, int64(n), fleet.SumStats(f.Prefills...).Requests, "no retries of a 4xx")

	r := g.Post(t, "/generate", generate("still serving", 4, false), nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	assert.Equal(t, sim.HandoffText("still serving", 4), r.Object(t)["text"])
}

// An open breaker on the only prefill puts the prefill leg in panic mode: requests still
// go to it (its answers, while open, do not move the breaker), and never as a decode-only
// dispatch. After --cb-timeout-duration-secs the breaker is probed by canaries only, never
// a client's request; --cb-success-threshold passing canaries close it.
func TestOpenPrefillBreaker(t *testing.T) {
	t.Parallel()
	f := sglang(t, 1, 1, func(c *config.Config) {
		c.CBFailureThreshold = 3
		c.CBSuccessThreshold = 2
		c.CBTimeout = 500 * time.Millisecond
		c.DisableRetries = true
	})
	g, pre, dec := f.Gateway, f.Prefills[0], f.Decodes[0]
	for range 3 {
		r := g.Post(t, "/generate", generate("prefill fails", 4, false, "prefill:status:503"), nil)
		requireError(t, r, http.StatusServiceUnavailable, "prefill_upstream_error")
	}
	waitIdle(t, f.Sims()...)
	state, _, fail := cb(t, g, pre.URL())
	require.Equal(t, []float64{1, 3}, []float64{state, fail}, "three consecutive failures opened it")

	p0, d0 := pre.Stats().Requests, dec.Stats().Requests
	r := g.Post(t, "/generate", generate("breaker open", 4, false), nil)
	require.Equal(t, http.StatusOK, r.Status, "panic mode: %s", r.Body)
	assert.Equal(t, p0+1, pre.Stats().Requests)
	assert.Equal(t, d0+1, dec.Stats().Requests, "never a decode-only dispatch")
	state, _, _ = cb(t, g, pre.URL())
	require.Equal(t, float64(1), state, "still open")

	// After the open timeout the gateway's canaries, never a client's request, probe it:
	// --cb-success-threshold passing canaries close it, and requests flow again.
	require.Eventually(t, func() bool {
		state, _, _ := cb(t, g, pre.URL())
		return state == 0
	}, bound, 50*time.Millisecond, "two passing canaries close the breaker after its timeout")
	assert.Equal(t, int64(2), pre.Stats().CanaryRequests, "the half-open probes were canaries")
	assert.Equal(t, p0+3, pre.Stats().Requests, "the panic-mode request and the two canaries, no other request")
	r = g.Post(t, "/generate", generate("closed again", 4, false), nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	assert.Zero(t, dec.Stats().CanaryRequests, "the healthy decode got no canary")

	m := g.Metrics(t)
	tr := func(from, to string) float64 {
		return m.Sum("smg_worker_cb_transitions_total", "worker", pre.URL(), "from", from, "to", to)
	}
	assert.Equal(t, []float64{1, 1, 1}, []float64{tr("closed", "open"), tr("open", "half_open"), tr("half_open", "closed")})
	assert.Empty(t, m.Find("smg_worker_cb_transitions_total", "worker", dec.URL()))
}

// Sequential dispatch (vLLM): a prefill that fails never reaches the decode worker, so its
// failures charge only the prefill's breaker, once per request (the retry on the same
// prefill failed the same way); once that opens, the lone prefill is in panic mode: its
// errors are the answer, and the decode is still never contacted.
func TestSequentialPrefillFailuresSpareTheDecodeBreaker(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineVLLM, Prefills: 1, Decodes: 1,
		Gateway: func(c *config.Config) { c.CBFailureThreshold = 2 }})
	g, pre, dec := f.Gateway, f.Prefills[0], f.Decodes[0]
	for range 2 { // 2 requests × 1 counted failure = --cb-failure-threshold 2
		r := g.Post(t, "/v1/chat/completions", chat("prefill 502", 4, false, "prefill:status:502"), nil)
		assert.Less(t, r.Elapsed, bound, "hang guard")
		assert.Contains(t, requireError(t, r, http.StatusBadGateway, "prefill_upstream_error"), "injected status 502")
	}
	state, ok, fail := cb(t, g, pre.URL())
	assert.Equal(t, []float64{1, 0, 2}, []float64{state, ok, fail})
	assert.Equal(t, int64(4), pre.Stats().Requests, "two attempts per request: the repeat ends it")
	state, ok, fail = cb(t, g, dec.URL())
	assert.Equal(t, []float64{0, 0, 0}, []float64{state, ok, fail}, "the decode's breaker was never touched")
	assert.Zero(t, dec.Stats().Requests)

	r := g.Post(t, "/v1/chat/completions", chat("prefill breaker open", 4, false, "prefill:status:502"), nil)
	assert.Contains(t, requireError(t, r, http.StatusBadGateway, "prefill_upstream_error"), "injected status 502")
	assert.Equal(t, int64(6), pre.Stats().Requests, "panic mode: the open-breaker prefill answers")
	assert.Zero(t, dec.Stats().Requests, "no decode-only dispatch")
}
