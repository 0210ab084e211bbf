package sim_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/test/sim"
)

// prefill_only_requests counts what a prefill received without handoff data (served whole
// there); a tagged PD prefill leg is not counted, nor anything on a decode.
func TestPrefillOnlyRequestsCounted(t *testing.T) {
	t.Parallel()
	p, d := pair(t, sim.EngineVLLM)
	nixlPrefill(t, p, "a tagged prefill leg")
	assert.Zero(t, p.Stats().PrefillOnlyRequests, "a PD prefill leg carries kv_transfer_params")
	c := parseCompl(t, post(p.URL()+"/v1/completions", map[string]any{"model": "sim-model", "prompt": "served whole", "max_tokens": 3}))
	assert.Equal(t, 3, c.Usage.CompletionTokens, "served whole: every output token")
	assert.EqualValues(t, 1, p.Stats().PrefillOnlyRequests)
	parseCompl(t, post(d.URL()+"/v1/completions", map[string]any{"model": "sim-model", "prompt": "alone on the decode", "max_tokens": 2}))
	assert.Zero(t, d.Stats().PrefillOnlyRequests)
	assert.EqualValues(t, 1, d.Stats().DecodeOnlyRequests)
	p.Reset()
	assert.Zero(t, p.Stats().PrefillOnlyRequests, "reset")
}
