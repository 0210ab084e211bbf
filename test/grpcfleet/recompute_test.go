package grpcfleet_test

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/telemetry"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// A silent recompute is counted: a vLLM NIXL pair whose prefill returns no
// kv_transfer_params (the no-kv-params fault) still answers 200, but its decode reports
// only its own cache hits, so smg_pd_recomputed_prompts_total{decode,connector="nixl"}
// grows by the prompt tokens the decode simulator recomputed, and one WARN (rate-limited
// per pair) names the pair. A healthy pair moves nothing.
func TestGRPCSilentRecomputeIsCounted(t *testing.T) {
	t.Parallel()
	for _, faulty := range []bool{false, true} {
		t.Run(map[bool]string{false: "healthy", true: "no-kv-params"}[faulty], func(t *testing.T) {
			t.Parallel()
			m, _ := qwen3(t)
			logs := &logSink{}
			g, p, d := startPD(t, grpcsim.EngineVLLM, func(role string, c *grpcsim.Config) {
				c.KVConnector = grpcsim.ConnectorNixl
				if role == grpcsim.RolePrefill && faulty {
					c.Faults = []string{grpcsim.FaultNoKVParams}
				}
			}, func(c *config.Config) { c.LogLevel = "info" },
				fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }),
				fx.Decorate(func(*slog.Logger) *slog.Logger {
					return telemetry.NewLogger(telemetry.LogOptions{Level: "info", JSON: true}, logs)
				}))
			prompts := 0
			for i := 0; i < 2; i++ {
				// The prompts differ from their first token: the decode's own cache (it keeps the
				// blocks it computed) must not serve the second one.
				q := strconv.Itoa(i) + " " + strings.Repeat("a prompt long enough to span several KV pages ", 4)
				r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": q, "max_tokens": 2}, nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				n := int(r.Object(t)["usage"].(map[string]any)["prompt_tokens"].(float64))
				require.Greater(t, n, 16, "longer than one page")
				prompts += n
			}
			got := metric(t, g, `smg_pd_recomputed_prompts_total{connector="nixl",decode="`+d.URL()+`"}`)
			warns := debugRecords(logs, "PD decode recomputed the prompt instead of receiving its KV")
			if !faulty {
				assert.Zero(t, d.Stats().RecomputedPrompts)
				assert.LessOrEqual(t, got, 0.0, "no series, or 0")
				assert.Empty(t, warns)
				return
			}
			assert.EqualValues(t, 2, d.Stats().RecomputedPrompts, "the decode simulator recomputed both")
			assert.EqualValues(t, prompts, got, "the recomputed prompt tokens")
			require.Len(t, warns, 1, "one WARN per pair within the interval")
			assert.Equal(t, p.URL(), warns[0]["prefill"])
			assert.Equal(t, d.URL(), warns[0]["decode"])
		})
	}
}
