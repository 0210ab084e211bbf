package grpcfleet_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// Selective PD over gRPC: a kv_both vLLM decode (kv_role from GetServerInfo) serves a prompt
// of at most N tokens alone through the sequential path without its prefill leg: the prefill
// gets nothing, the decode computes the prompt itself (no kv_transfer_params), and that is
// counted as a decode_only decision, not as a silent recompute. A kv_consumer decode never
// does.
func TestVLLMKVBothDecodeServesShortPromptsAloneOverGRPC(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		role  string
		alone bool
	}{{"kv_both", true}, {"kv_consumer", false}} {
		t.Run(tc.role, func(t *testing.T) {
			t.Parallel()
			g, p, d := pdFleet(t, grpcsim.EngineVLLM, func(role string, c *grpcsim.Config) {
				if role == grpcsim.RoleDecode {
					c.KVRole = tc.role
				}
			}, func(c *config.Config) { c.SelectivePD.UncachedTokens = 64 })
			r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "a short prompt", "max_tokens": 4, "stream": true}, nil)
			require.Equal(t, http.StatusOK, r.Status, string(r.Body))
			if !tc.alone {
				assert.EqualValues(t, 1, p.Stats().Requests, "a prefill leg")
				assert.EqualValues(t, 1, metric(t, g, `smg_pd_decisions_total{decision="disaggregated",reason="no_local_worker"}`))
				return
			}
			assert.Zero(t, p.Stats().Requests, "no prefill leg")
			assert.EqualValues(t, 1, d.Stats().Requests)
			assert.Zero(t, d.Stats().HandoffsReceived, "no KV handed over")
			assert.EqualValues(t, 1, metric(t, g, `smg_pd_decisions_total{decision="decode_only",reason="uncached_below_threshold"}`))
			assert.LessOrEqual(t, metric(t, g, "smg_pd_recomputed_prompts_total"), 0.0, "no silent recompute counted")
			assert.LessOrEqual(t, metric(t, g, `smg_pd_kv_connector_mode_total{mode="nixl"}`), 0.0, "no connector mode for a lone request")
		})
	}
}
