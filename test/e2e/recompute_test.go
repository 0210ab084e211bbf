package e2e_test

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// Over HTTP too, a silent recompute is counted from the decode's own usage: a vLLM NIXL
// pair whose prefill returns no kv_transfer_params answers 200 and
// smg_pd_recomputed_prompts_total{decode,connector="nixl"} grows by the prompt tokens the
// decode simulator recomputed; a pair whose decode received the KV moves nothing.
func TestVLLMSilentRecomputeIsCountedOverHTTP(t *testing.T) {
	t.Parallel()
	f := vllmFleet(t, sim.ConnectorNixl, 1, 1)
	dec := f.Decodes[0].URL()
	prompt := strings.Repeat("a prompt long enough to span several KV pages ", 4)

	r := f.Gateway.Post(t, apiCompletions.path, apiCompletions.body(prompt+"handed off", 2, false), nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	waitIdle(t, f.Sims()...)
	assert.Zero(t, f.Gateway.Metrics(t).Sum("smg_pd_recomputed_prompts_total"), "the decode received the KV")

	// The recomputed prompt differs from the first word: the decode's own cache (it keeps
	// the blocks it received) must not serve it.
	body := apiCompletions.body("recomputed "+prompt, 2, false)
	body["sim_fault"] = "prefill:no-kv-params"
	r = f.Gateway.Post(t, apiCompletions.path, body, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	n := r.Object(t)["usage"].(map[string]any)["prompt_tokens"].(float64)
	require.Greater(t, n, 16.0, "longer than one page")
	waitIdle(t, f.Sims()...)
	assert.EqualValues(t, 1, f.Decodes[0].Stats().RecomputedPrompts)
	assert.Equal(t, n, f.Gateway.Metrics(t).Sum("smg_pd_recomputed_prompts_total", "decode", dec, "connector", "nixl"))
}

// A streamed answer is read too, from the decode's own usage event when the client asked for
// one (stream_options.include_usage; the gateway adds none, so the client's stream stays as
// the engine sent it): the recompute moves the counter by the prompt tokens, once.
func TestVLLMSilentRecomputeIsCountedInAStream(t *testing.T) {
	t.Parallel()
	f := vllmFleet(t, sim.ConnectorNixl, 1, 1)
	dec := f.Decodes[0].URL()
	prompt := strings.Repeat("a prompt long enough to span several KV pages ", 4)
	promptTokens := regexp.MustCompile(`"prompt_tokens":(\d+)`)

	body := apiCompletions.body("streamed healthy "+prompt, 2, true)
	body["stream_options"] = map[string]any{"include_usage": true}
	r := f.Gateway.Post(t, apiCompletions.path, body, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	waitIdle(t, f.Sims()...)
	assert.Zero(t, f.Gateway.Metrics(t).Sum("smg_pd_recomputed_prompts_total"), "the decode received the KV")

	body = apiCompletions.body("streamed recomputed "+prompt, 2, true)
	body["stream_options"] = map[string]any{"include_usage": true}
	body["sim_fault"] = "prefill:no-kv-params"
	r = f.Gateway.Post(t, apiCompletions.path, body, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	m := promptTokens.FindSubmatch(r.Body)
	require.NotNil(t, m, "a usage event: %s", r.Body)
	n, err := strconv.Atoi(string(m[1]))
	require.NoError(t, err)
	require.Greater(t, n, 16, "longer than one page")
	waitIdle(t, f.Sims()...)
	assert.EqualValues(t, 1, f.Decodes[0].Stats().RecomputedPrompts)
	assert.EqualValues(t, n, f.Gateway.Metrics(t).Sum("smg_pd_recomputed_prompts_total", "decode", dec, "connector", "nixl"))

	// Without a usage event there is nothing to read: not counted (documented).
	body = apiCompletions.body("streamed unmeasured "+prompt, 2, true)
	body["sim_fault"] = "prefill:no-kv-params"
	r = f.Gateway.Post(t, apiCompletions.path, body, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	assert.NotContains(t, string(r.Body), `"usage":{`, "the client's stream gets no usage it did not ask for")
	waitIdle(t, f.Sims()...)
	assert.EqualValues(t, n, f.Gateway.Metrics(t).Sum("smg_pd_recomputed_prompts_total", "decode", dec, "connector", "nixl"))
}

// A Mooncake prefill registered without kv_engine_id: the gateway cannot mint the handoff,
// the decode recomputes, and the counter moves by the prompt tokens under
// connector="mooncake" (the pair's transport), the decode named.
func TestMooncakeWithoutEngineIDRecomputeIsCounted(t *testing.T) {
	t.Parallel()
	pre := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill, KVConnector: sim.ConnectorMooncake})
	dec := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode, KVConnector: sim.ConnectorMooncake})
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	g.Register(t, map[string]any{"url": pre.URL(), "worker_type": "prefill", "kv_connector": "MooncakeConnector",
		"bootstrap_port": pre.BootstrapPort()})
	g.Register(t, fleet.WorkerSpec(dec))
	g.WaitWorkers(t, 2)
	prompt := "no engine id " + strings.Repeat("a prompt long enough to span several KV pages ", 4)
	r := g.Post(t, apiCompletions.path, apiCompletions.body(prompt, 2, false), nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	n := r.Object(t)["usage"].(map[string]any)["prompt_tokens"].(float64)
	require.Greater(t, n, 16.0, "longer than one page")
	waitIdle(t, pre, dec)
	assert.EqualValues(t, 1, dec.Stats().RecomputedPrompts)
	assert.Equal(t, n, g.Metrics(t).Sum("smg_pd_recomputed_prompts_total", "decode", dec.URL(), "connector", "mooncake"))
}
