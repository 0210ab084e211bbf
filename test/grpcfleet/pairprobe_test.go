package grpcfleet_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// POST /workers/probe-pair over gRPC runs its request through the pipeline on exactly the
// named pair: a vLLM NIXL decode that drops the handoff (no-kv-params) is reported
// recomputed, with the whole prompt recomputed, and the counter moves by exactly that; a
// healthy pair reports the prompt cached and moves nothing.
func TestGRPCPairProbeReportsARecomputingDecode(t *testing.T) {
	t.Parallel()
	for _, drop := range []bool{false, true} {
		t.Run(map[bool]string{false: "healthy", true: "decode drops the handoff"}[drop], func(t *testing.T) {
			t.Parallel()
			m, _ := qwen3(t)
			g, p, d := startPD(t, grpcsim.EngineVLLM, func(role string, c *grpcsim.Config) {
				c.KVConnector = grpcsim.ConnectorNixl
				if role == grpcsim.RoleDecode && drop {
					c.Faults = []string{grpcsim.FaultNoKVParams}
				}
			}, nil, fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }))

			r := g.Post(t, "/workers/probe-pair", map[string]any{"prefill": p.URL(), "decode": d.URL()}, nil)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			var res struct {
				Outcome          string `json:"outcome"`
				Recomputed       bool   `json:"recomputed"`
				Measured         bool   `json:"measured"`
				Status           int    `json:"status"`
				Connector        string `json:"connector"`
				PromptTokens     int    `json:"prompt_tokens"`
				CachedTokens     int    `json:"cached_tokens"`
				RecomputedTokens int    `json:"recomputed_tokens"`
			}
			require.NoError(t, json.Unmarshal(r.Body, &res), "%s", r.Body)
			assert.Equal(t, http.StatusOK, res.Status)
			assert.True(t, res.Measured)
			assert.Equal(t, "nixl", res.Connector)
			assert.Greater(t, res.PromptTokens, 64, "the probe's prompt spans several KV pages")
			got := metric(t, g, `smg_pd_recomputed_prompts_total{connector="nixl",decode="`+d.URL()+`"}`)
			assert.EqualValues(t, 1, p.Stats().Requests, "the prefill leg ran once")
			if !drop {
				assert.Equal(t, "kv_received", res.Outcome)
				assert.False(t, res.Recomputed)
				assert.Equal(t, res.PromptTokens, res.CachedTokens)
				assert.Zero(t, d.Stats().RecomputedPrompts)
				assert.LessOrEqual(t, got, 0.0, "no series, or 0")
				return
			}
			assert.Equal(t, "recomputed", res.Outcome)
			assert.True(t, res.Recomputed)
			assert.Zero(t, res.CachedTokens)
			assert.Equal(t, res.PromptTokens, res.RecomputedTokens)
			assert.EqualValues(t, 1, d.Stats().RecomputedPrompts)
			assert.EqualValues(t, res.RecomputedTokens, got)
		})
	}
}
