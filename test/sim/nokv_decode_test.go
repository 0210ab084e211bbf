package sim_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/test/sim"
)

// A vLLM decode with the no-kv-params fault drops the handoff it is given: it pulls nothing
// from the prefill, recomputes the prompt (counted) and reports no cached tokens, as a
// decode whose connector lost the params would.
func TestVLLMDecodeWithNoKVParamsDropsTheHandoff(t *testing.T) {
	t.Parallel()
	p := start(t, cfgOf(sim.EngineVLLM, sim.RolePrefill))
	d := start(t, cfgOf(sim.EngineVLLM, sim.RoleDecode, func(c *sim.Config) { c.Faults = []string{sim.FaultNoKVParams} }))
	prompt := "dropped " + strings.Repeat("a prompt long enough to span several KV pages ", 4)
	kv := nixlPrefill(t, p, prompt)

	dc := parseCompl(t, post(d.URL()+"/v1/completions", map[string]any{"model": "sim-model", "prompt": prompt, "max_tokens": 2,
		"kv_transfer_params": kv}, "X-Request-Id", "req-1"))
	assert.Greater(t, dc.Usage.PromptTokens, 16)
	assert.Zero(t, dc.Usage.PromptTokensDetails.CachedTokens, "nothing came through the handoff")
	assert.EqualValues(t, 1, d.Stats().RecomputedPrompts)
	assert.Zero(t, d.Stats().HandoffsReceived)
}
