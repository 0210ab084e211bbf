package selectivepd_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

const (
	model     = "sim-model"
	threshold = 16
	decisions = "smg_pd_decisions_total"
)

func gateway(t *testing.T, n int) *fleet.Gateway {
	t.Helper()
	cfg := fleet.DefaultConfig()
	cfg.SelectivePD.UncachedTokens = n
	return fleet.StartGateway(t, cfg)
}

func register(t *testing.T, g *fleet.Gateway, s *sim.Server, extra map[string]any) {
	t.Helper()
	body := fleet.WorkerSpec(s)
	for k, v := range extra {
		body[k] = v
	}
	g.Register(t, body)
}

// ids is a /v1/completions body whose prompt is n token ids (counted exactly by the gateway).
func ids(n int, stream bool) map[string]any {
	p := make([]int, n)
	for i := range p {
		p[i] = 100 + i
	}
	return map[string]any{"model": model, "prompt": p, "max_tokens": 3, "stream": stream}
}

func post(t *testing.T, g *fleet.Gateway, body map[string]any) {
	t.Helper()
	r := g.Post(t, "/v1/completions", body, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	if body["stream"] == true {
		require.True(t, strings.HasSuffix(strings.TrimSpace(string(r.Body)), "data: [DONE]"), "%s", r.Body)
	}
}

// A vLLM kv_both decode takes the prompts of at most N uncached tokens alone (no prefill
// leg, no kv_transfer_params: it computes them itself); N+1 goes through a PD pair. The
// SGLang PD pair beside it, its decode labelled kv_both too, never sees a decode-only
// request, whatever the threshold says.
func TestOnlyAKVBothVLLMDecodeServesAlone(t *testing.T) {
	t.Parallel()
	g := gateway(t, threshold)
	vp := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill, KVConnector: sim.ConnectorNixl})
	vd := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode, KVConnector: sim.ConnectorNixl})
	sp := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RolePrefill})
	sd := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RoleDecode})
	register(t, g, vp, nil)
	register(t, g, vd, map[string]any{"kv_role": "kv_both"})
	register(t, g, sp, nil)
	register(t, g, sd, map[string]any{"labels": map[string]string{"kv_role": "kv_both"}})
	g.WaitWorkersHealthy(t, 4)

	const n = 4
	for i := range n {
		post(t, g, ids(threshold, i%2 == 1)) // N uncached tokens: decode-only
	}
	vs, ss := vd.Stats(), sd.Stats()
	assert.Equal(t, int64(n), vs.DecodeOnlyRequests, "every short prompt went to the kv_both decode alone")
	assert.Zero(t, vs.HandoffsReceived)
	assert.Zero(t, fleet.SumStats(vp, sp).Requests, "no prefill leg")
	assert.Zero(t, ss.Requests, "the SGLang decode is never sent a lone request")
	m := g.Metrics(t)
	assert.Equal(t, float64(n), m.Sum(decisions, "decision", "decode_only", "reason", "uncached_below_threshold"))

	for range n {
		post(t, g, ids(threshold+1, false)) // N+1: disaggregated
	}
	vs, ss = vd.Stats(), sd.Stats()
	assert.Equal(t, int64(n), vs.DecodeOnlyRequests, "no new decode-only request")
	assert.Zero(t, ss.DecodeOnlyRequests, "no decode-only request reached the SGLang decode")
	assert.Equal(t, int64(n), fleet.SumStats(vp, sp).Requests, "one prefill leg each")
	assert.Equal(t, int64(n), vs.HandoffsReceived+ss.HandoffsReceived, "each decode got its prefill's KV")
	m = g.Metrics(t)
	assert.Equal(t, float64(n), m.Sum(decisions, "decision", "disaggregated", "reason", "uncached_above_threshold"))
	assert.Zero(t, m.Sum("smg_pd_recomputed_prompts_total"), "a decode-only answer is no silent recompute")
}

// A fleet whose decodes cannot prefill alone (SGLang, kv_consumer vLLM) keeps every request
// disaggregated: the decision says no_local_worker.
func TestNoCapableWorkerKeepsEveryRequestDisaggregated(t *testing.T) {
	t.Parallel()
	g := gateway(t, 1<<20)
	vp := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill, KVConnector: sim.ConnectorNixl})
	vd := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode, KVConnector: sim.ConnectorNixl})
	sp := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RolePrefill})
	sd := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RoleDecode})
	register(t, g, vp, nil)
	register(t, g, vd, map[string]any{"kv_role": "kv_consumer"})
	register(t, g, sp, nil)
	register(t, g, sd, map[string]any{"labels": map[string]string{"kv_role": "kv_both"}})
	g.WaitWorkersHealthy(t, 4)
	const n = 4
	for range n {
		post(t, g, ids(4, false))
	}
	assert.Zero(t, fleet.SumStats(vd, sd).DecodeOnlyRequests)
	assert.Equal(t, int64(n), fleet.SumStats(vp, sp).Requests)
	assert.Equal(t, float64(n), g.Metrics(t).Sum(decisions, "decision", "disaggregated", "reason", "no_local_worker"))
}

// A "regular" worker registered beside the PD fleet takes the decode-only requests (here a
// vLLM instance registered as regular); the PD decode, not kv_both, takes none.
func TestARegularWorkerBesideThePDFleetServesAlone(t *testing.T) {
	t.Parallel()
	g := gateway(t, threshold)
	vp := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill, KVConnector: sim.ConnectorNixl})
	vd := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode, KVConnector: sim.ConnectorNixl})
	reg := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode, KVConnector: sim.ConnectorNixl})
	register(t, g, vp, nil)
	register(t, g, vd, nil)
	g.Register(t, map[string]any{"url": reg.URL(), "worker_type": "regular", "runtime_type": "vllm"})
	g.WaitWorkersHealthy(t, 3)
	const n = 3
	for range n {
		post(t, g, ids(threshold, true))
	}
	assert.Equal(t, int64(n), reg.Stats().DecodeOnlyRequests)
	assert.Zero(t, fleet.SumStats(vp, vd).Requests)
	post(t, g, ids(threshold+1, false))
	assert.Equal(t, int64(1), vd.Stats().HandoffsReceived, "N+1 through the PD pair")
	assert.Equal(t, int64(n), reg.Stats().Requests)
}
