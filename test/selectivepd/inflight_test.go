package selectivepd_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/ports"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// bound bounds each wait for the counters to settle.
const bound = 5 * time.Second

// A lone worker (decode-only on a kv_both decode, prefill-only on a kv_both prefill) whose
// request the client cancels mid-stream, or that fails (a 503 before any output): every
// worker's in-flight requests and tokens return to zero, and the other worker never saw the
// request.
func TestLoneWorkerInFlightBackToZero(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		prefillOnly bool
	}{{"decode-only", false}, {"prefill-only", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := fleet.DefaultConfig()
			cfg.DisableRetries = true
			if tc.prefillOnly {
				cfg.SelectivePD.PrefillOnlyMaxTokens = 1 << 20
			} else {
				cfg.SelectivePD.UncachedTokens = 1 << 20
			}
			var store ports.WorkerStore
			g := fleet.StartGateway(t, cfg, fx.Populate(&store))
			mk := func(role string) *sim.Server {
				return fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: role, KVConnector: sim.ConnectorNixl, ITL: 20 * time.Millisecond})
			}
			p, d := mk(sim.RolePrefill), mk(sim.RoleDecode)
			register(t, g, p, map[string]any{"kv_role": "kv_both"})
			register(t, g, d, map[string]any{"kv_role": "kv_both"})
			g.WaitWorkersHealthy(t, 2)
			lone, other := d, p
			if tc.prefillOnly {
				lone, other = p, d
			}
			settled := func() {
				t.Helper()
				require.Eventually(t, func() bool {
					for _, w := range store.List() {
						if w.Load() != 0 || w.TokenLoad() != 0 {
							return false
						}
					}
					return true
				}, bound, 10*time.Millisecond, "in-flight requests or tokens left")
			}

			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			resp := g.Open(t, ctx, "/v1/completions", withMax(900, 200, true))
			require.Equal(t, http.StatusOK, resp.StatusCode)
			_, err := resp.Body.Read(make([]byte, 64))
			require.NoError(t, err)
			cancel()
			_ = resp.Body.Close()
			require.Eventually(t, func() bool { return lone.Stats().Aborted == 1 }, bound, 10*time.Millisecond, "the lone worker's request is aborted")
			settled()

			require.NoError(t, lone.SetFault("status:503"))
			r := g.Post(t, "/v1/completions", withMax(950, 3, false), nil)
			assert.Equal(t, http.StatusServiceUnavailable, r.Status, "%s", r.Body)
			settled()
			assert.Zero(t, other.Stats().Requests, "the other worker never saw either request")
		})
	}
}
