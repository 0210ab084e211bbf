package resilience_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// vllmKVFleet is a vLLM NIXL fleet of two prefills and the given decodes, round-robin, in
// which the prefills and decodes indexed in prefillFault and decodeFault carry that instance
// fault.
func vllmKVFleet(t *testing.T, decodes int, prefillFault, decodeFault map[int]string) *fleet.Fleet {
	t.Helper()
	return fleet.Start(t, fleet.Spec{Engine: sim.EngineVLLM, Prefills: 2, Decodes: decodes,
		Gateway: func(c *config.Config) { c.Policy = "round_robin" },
		Sim: func(role string, i int, c *sim.Config) {
			faults := decodeFault
			if role == sim.RolePrefill {
				faults = prefillFault
			}
			if f, ok := faults[i]; ok {
				c.Faults = []string{f}
			}
		}})
}

// A vLLM prefill whose KV is gone once it answered (its engine died or restarted, or its
// KV agent is broken: the kv-lost fault) makes the decode's pull fail, and vLLM answers that
// with the same 500 as any failure of its own. The retry keeps the decode and changes the
// prefill; its success charges the lost KV to the first prefill, whose answer is then no
// success either. Every request succeeds, the decode's breaker records only successes, and
// the lossy prefill's breaker opens after --cb-failure-threshold (10) lost handoffs, after
// which no request goes there.
func TestLostPrefillKVIsChargedToThePrefillNotTheDecode(t *testing.T) {
	t.Parallel()
	f := vllmKVFleet(t, 1, map[int]string{0: sim.FaultKVLost}, nil)
	g, lost, good, dec := f.Gateway, f.Prefills[0], f.Prefills[1], f.Decodes[0]
	send := func(i int) {
		prompt := fmt.Sprintf("kv lost %d", i)
		if i%2 == 1 {
			s := g.Stream(t, "/v1/chat/completions", chat(prompt, 4, true))
			require.Equal(t, http.StatusOK, s.Status, "%s", s.Body)
			assert.Empty(t, s.Errors(), "request %d", i)
			assert.Equal(t, chatText(prompt, 4), chatStreamText(t, s.Events), "request %d", i)
			assert.Less(t, s.Elapsed, bound, "hang guard")
			return
		}
		r := g.Post(t, "/v1/chat/completions", chat(prompt, 4, false), nil)
		require.Equal(t, http.StatusOK, r.Status, "request %d: %s", i, r.Body)
		assert.Less(t, r.Elapsed, bound, "hang guard")
		msg := r.Object(t)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
		assert.Equal(t, chatText(prompt, 4), msg["content"], "request %d", i)
	}
	n := 0
	for ; n < 40 && lost.Stats().Requests < 10; n++ { // round robin: about every other first attempt
		send(n)
	}
	require.EqualValues(t, 10, lost.Stats().Requests, "10 lost handoffs within %d requests", n)
	cbSettled(t, g, lost.URL(), []float64{1, 0, 10}, "ten lost handoffs, no success: open")
	for range 4 { // the lossy prefill is out of rotation
		send(n)
		n++
	}
	waitIdle(t, f.Sims()...)
	assert.EqualValues(t, 10, lost.Stats().Requests, "no request reached the open prefill")

	ds := dec.Stats()
	assert.EqualValues(t, n+10, ds.Requests, "one decode leg per request, one more per lost handoff")
	assert.EqualValues(t, 10, ds.Errors, "each lost handoff failed its pull once")
	assert.EqualValues(t, n, ds.HandoffsReceived, "every answer came from a handoff")
	assert.Zero(t, ds.RecomputedPrompts)
	assert.EqualValues(t, n, good.Stats().Requests, "every request was served through the other prefill")

	cbSettled(t, g, dec.URL(), []float64{0, float64(n), 0}, "the decode is never charged")
	cbSettled(t, g, good.URL(), []float64{0, float64(n), 0}, "the other prefill answered every request")
	m := g.Metrics(t)
	assert.Equal(t, float64(10), m.Sum("smg_worker_errors_total", "worker_type", "prefill", "error_type", "backend_error"))
	assert.Zero(t, m.Sum("smg_worker_errors_total", "worker_type", "decode"))
}

// A vLLM decode that fails by itself is still charged: the retry keeps it and changes the
// prefill, it fails again, and the request moves on to another decode. The broken decode
// is charged once per request (not twice: one request moves a breaker by one), the
// prefills never.
func TestBrokenVLLMDecodeIsChargedOncePerRequest(t *testing.T) {
	t.Parallel()
	f := vllmKVFleet(t, 2, nil, map[int]string{0: "status:500"})
	g, broken, healthy := f.Gateway, f.Decodes[0], f.Decodes[1]
	const n = 6
	for i := range n {
		prompt := fmt.Sprintf("broken decode %d", i)
		r := g.Post(t, "/v1/chat/completions", chat(prompt, 4, false), nil)
		require.Equal(t, http.StatusOK, r.Status, "request %d: %s", i, r.Body)
		assert.Less(t, r.Elapsed, bound, "hang guard")
	}
	waitIdle(t, f.Sims()...)

	bs := broken.Stats()
	require.Positive(t, bs.Requests, "round robin sent decode legs to the broken decode")
	require.Zero(t, bs.Requests%2, "each request that met it tried it with both prefills: %d", bs.Requests)
	met := bs.Requests / 2
	assert.Equal(t, bs.Requests, bs.Errors)
	assert.Equal(t, int64(n), healthy.Stats().Requests)
	cbSettled(t, g, broken.URL(), []float64{0, 0, float64(met)}, "one failure per request that met it")
	cbSettled(t, g, healthy.URL(), []float64{0, n, 0}, "the healthy decode answered every request")
	for _, p := range f.Prefills {
		cbSettled(t, g, p.URL(), []float64{0, float64(p.Stats().Requests), 0},
			"every answer of prefill "+p.URL()+" counts as a success, none as a failure")
	}
	assert.Equal(t, float64(met), g.Metrics(t).Sum("smg_worker_errors_total", "worker_type", "decode"))
}
