package selectivepd_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// prefillOnlyGateway is a gateway with --selective-pd-prefill-only-max-tokens n (and
// decode-only off).
func prefillOnlyGateway(t *testing.T, n int) *fleet.Gateway {
	t.Helper()
	cfg := fleet.DefaultConfig()
	cfg.SelectivePD.PrefillOnlyMaxTokens = n
	return fleet.StartGateway(t, cfg)
}

// withMax is a /v1/completions body of 8 token ids (from base) capped at maxTokens.
func withMax(base, maxTokens int, stream bool) map[string]any {
	p := make([]int, 8)
	for i := range p {
		p[i] = base + i
	}
	return map[string]any{"model": model, "prompt": p, "max_tokens": maxTokens, "stream": stream}
}

// Prefill-only at its edges: max_tokens N goes whole to the kv_both vLLM prefill (no
// decode leg, prefill_only_requests); N+1 and an uncapped request go through a pair. The
// SGLang prefill beside it, labelled kv_both too, never gets a whole request.
func TestPrefillOnlyGoesToAKVBothVLLMPrefill(t *testing.T) {
	t.Parallel()
	const n = 4
	g := prefillOnlyGateway(t, n)
	vp := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill, KVConnector: sim.ConnectorNixl})
	vd := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode, KVConnector: sim.ConnectorNixl})
	sp := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RolePrefill})
	sd := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RoleDecode})
	register(t, g, vp, map[string]any{"kv_role": "kv_both"})
	register(t, g, vd, nil)
	register(t, g, sp, map[string]any{"labels": map[string]string{"kv_role": "kv_both"}})
	register(t, g, sd, nil)
	g.WaitWorkersHealthy(t, 4)

	const k = 4
	for i := range k {
		post(t, g, withMax(100+10*i, n, i%2 == 1))
	}
	assert.Equal(t, int64(k), vp.Stats().PrefillOnlyRequests, "every short-output request went whole to the kv_both prefill")
	assert.Zero(t, sp.Stats().Requests, "the SGLang prefill is never sent a whole request")
	assert.Zero(t, fleet.SumStats(vd, sd).Requests, "no decode leg")
	m := g.Metrics(t)
	assert.Equal(t, float64(k), m.Sum(decisions, "decision", "prefill_only", "reason", "output_below_threshold"))

	post(t, g, withMax(500, n+1, false))
	body := withMax(600, 1, false)
	delete(body, "max_tokens")
	post(t, g, body)
	assert.Equal(t, int64(k), vp.Stats().PrefillOnlyRequests, "N+1 and uncapped: no new prefill-only request")
	assert.Zero(t, sp.Stats().PrefillOnlyRequests)
	assert.Equal(t, int64(2), fleet.SumStats(vd, sd).Requests, "both went through a pair")
	assert.Equal(t, float64(k), g.Metrics(t).Sum(decisions, "decision", "prefill_only"))
}

// With no capable prefill (SGLang, or a vLLM prefill that is not kv_both) a short-output
// request goes through a pair as without the flag, and no prefill_only decision is counted.
func TestPrefillOnlyWithoutCapableWorkerStaysDisaggregated(t *testing.T) {
	t.Parallel()
	g := prefillOnlyGateway(t, 1<<20)
	vp := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill, KVConnector: sim.ConnectorNixl})
	vd := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode, KVConnector: sim.ConnectorNixl})
	register(t, g, vp, map[string]any{"kv_role": "kv_producer"})
	register(t, g, vd, nil)
	g.WaitWorkersHealthy(t, 2)
	post(t, g, withMax(700, 2, false))
	assert.Zero(t, vp.Stats().PrefillOnlyRequests)
	assert.Equal(t, int64(1), vd.Stats().HandoffsReceived, "through the pair")
	assert.Zero(t, g.Metrics(t).Sum(decisions, "decision", "prefill_only"))
}
