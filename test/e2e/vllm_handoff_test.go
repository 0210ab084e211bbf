package e2e_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

func vllmFleet(t *testing.T, connector string, prefills, decodes int) *fleet.Fleet {
	t.Helper()
	return fleet.Start(t, fleet.Spec{Engine: sim.EngineVLLM, Connector: connector, Prefills: prefills, Decodes: decodes})
}

// Issue #5, Done when: NIXL and Mooncake fleets: chat, completions and responses, streaming
// and not, 200 with handoffs_received = requests and recomputed_prompts 0 on the decode sims.
func TestVLLMConnectorsHandOffTheKV(t *testing.T) {
	t.Parallel()
	for _, conn := range []string{sim.ConnectorNixl, sim.ConnectorMooncake} {
		t.Run(conn, func(t *testing.T) {
			t.Parallel()
			f := vllmFleet(t, conn, 2, 2)
			const prompt, maxTokens = "a vllm prompt with several words in it", 4
			sent := int64(0)
			for _, a := range vllmAPIs {
				for _, stream := range []bool{false, true} {
					t.Run(a.name+"/"+streamName(stream), func(t *testing.T) {
						want := sim.HandoffText(a.simPrompt(prompt), maxTokens)
						if !stream {
							r := f.Gateway.Post(t, a.path, a.body(prompt, maxTokens, false), nil)
							require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
							assert.Equal(t, want, a.text(t, r.Object(t)), "decode text after a real handoff")
						} else {
							r := f.Gateway.Stream(t, a.path, a.body(prompt, maxTokens, true))
							require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
							assert.Equal(t, "text/event-stream", r.Header.Get("Content-Type"))
							assert.Empty(t, r.Errors(), "%s", r.Body)
							require.NotEmpty(t, r.Events)
							assert.Equal(t, a.done, r.Events[len(r.Events)-1].Done(), "stream end: %s", r.Body)
							assert.Equal(t, want, a.streamText(t, r.Events), "streamed decode text after a real handoff")
						}
						sent++
					})
				}
			}
			waitIdle(t, f.Sims()...)
			d, p := fleet.SumStats(f.Decodes...), fleet.SumStats(f.Prefills...)
			assert.Equal(t, sent, d.Requests)
			assert.Equal(t, sent, d.HandoffsReceived, "handoffs_received = requests")
			assert.Equal(t, sent, p.HandoffsSent)
			assert.Equal(t, sent, p.Requests, "one prefill leg per request, no retry")
			assert.Zero(t, d.RecomputedPrompts, "recomputed_prompts")
			assert.Zero(t, d.UnmatchedRooms+p.UnmatchedRooms+p.DuplicateRooms)
			assert.Zero(t, d.Errors+p.Errors)
			m := f.Gateway.Metrics(t)
			mode := map[string]string{sim.ConnectorNixl: "nixl", sim.ConnectorMooncake: "mooncake"}[conn]
			assert.Equal(t, float64(sent), m.Sum("smg_pd_kv_connector_mode_total", "mode", mode))
			assert.Zero(t, m.Sum("smg_pd_kv_transfer_failures_total"))
			pd := []string{"backend_type", "pd", "model", model, "runtime", "vllm"}
			assert.Equal(t, float64(sent), m.Sum("smg_pd_ttft_seconds_count", pd...))
			assert.Equal(t, float64(sent), m.Sum("smg_pd_prefill_duration_seconds_count", pd...))
		})
	}
}

// Issue #5, Done when: the seed's "vLLM (HTTP)" example works verbatim: PD mode without
// startup workers, then the two registrations (url, worker_type, kv_connector
// NixlConnector; the runtime is detected).
func TestVLLMSeedExampleVerbatim(t *testing.T) {
	t.Parallel()
	pre := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill})
	dec := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode})
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	g.Register(t, `{"url": "`+pre.URL()+`", "worker_type": "prefill", "kv_connector": "NixlConnector"}`)
	g.Register(t, `{"url": "`+dec.URL()+`", "worker_type": "decode", "kv_connector": "NixlConnector"}`)
	g.WaitWorkers(t, 2)
	for _, w := range g.Workers(t) {
		assert.Equal(t, "vllm", w.RuntimeType, "detected runtime of %s", w.URL)
		assert.Equal(t, "NixlConnector", w.KVConnector)
	}
	r := g.Post(t, apiChat.path, apiChat.body("hello from the seed", 3, false), nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	assert.Equal(t, sim.HandoffText(userPrompt("hello from the seed"), 3), apiChat.text(t, r.Object(t)))
	waitIdle(t, pre, dec)
	assert.Equal(t, int64(1), dec.Stats().HandoffsReceived)
	assert.Zero(t, dec.Stats().RecomputedPrompts)
}

// Issue #5, Done when: a worker registered by URL alone (startup --prefill/--decode flags)
// runs passthrough: requests succeed, the decode sims count recomputes, and
// smg_pd_kv_connector_mode_total{mode="passthrough"} grows.
func TestVLLMURLOnlyWorkersRunPassthrough(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineVLLM, Prefills: 1, Decodes: 1, Via: fleet.ViaFlags})
	before := f.Gateway.Metrics(t).Sum("smg_pd_kv_connector_mode_total", "mode", "passthrough")
	const n = 3
	for i := 0; i < n; i++ {
		a := vllmAPIs[i%len(vllmAPIs)]
		r := f.Gateway.Post(t, a.path, a.body("passthrough prompt", 3, false), nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		assert.Equal(t, sim.RecomputeText(a.simPrompt("passthrough prompt"), 3), a.text(t, r.Object(t)), "decode recomputed")
	}
	waitIdle(t, f.Sims()...)
	d := f.Decodes[0].Stats()
	assert.Equal(t, int64(n), d.RecomputedPrompts, "recomputed_prompts")
	assert.Zero(t, d.HandoffsReceived)
	assert.Equal(t, int64(n), f.Prefills[0].Stats().Requests, "the prefill leg still runs")
	m := f.Gateway.Metrics(t)
	assert.Equal(t, before+n, m.Sum("smg_pd_kv_connector_mode_total", "mode", "passthrough"))
	assert.Zero(t, m.Sum("smg_pd_kv_transfer_failures_total"), "passthrough is not a NIXL transfer failure")
}

// Issue #5, Done when: n: 2 → the prefill sim sees no request; decode answers 2 choices.
func TestVLLMNTwoSkipsThePrefill(t *testing.T) {
	t.Parallel()
	f := vllmFleet(t, sim.ConnectorNixl, 1, 1)
	for _, a := range []api{apiChat, apiCompletions} {
		body := a.body("two samples", 3, false)
		body["n"] = 2
		r := f.Gateway.Post(t, a.path, body, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		choices, ok := r.Object(t)["choices"].([]any)
		require.True(t, ok, "%s", r.Body)
		assert.Len(t, choices, 2, a.path)
	}
	waitIdle(t, f.Sims()...)
	assert.Zero(t, f.Prefills[0].Stats().Requests, "no prefill leg")
	assert.Equal(t, int64(2), f.Decodes[0].Stats().Requests)
	m := f.Gateway.Metrics(t)
	assert.Zero(t, m.Sum("smg_pd_kv_transfer_failures_total"), "skipping the prefill is not a transfer failure")
	assert.Zero(t, m.Sum("smg_pd_prefill_duration_seconds_count"), "no prefill leg to time")
}
