package grpcfleet_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/ports"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// Prefill-only over gRPC, per engine: a kv_both vLLM prefill takes a request capped at N
// output tokens whole (prefill_only_requests, every output token, no decode leg), N+1 goes
// through the pair; a SGLang or TokenSpeed prefill (labelled kv_both) and a kv_producer
// vLLM prefill never get a whole request.
func TestPrefillOnlyShapesPerEngineOverGRPC(t *testing.T) {
	t.Parallel()
	const n = 4
	for _, tc := range []struct {
		name    string
		engine  string
		conn    string
		kvRole  string
		label   bool
		capable bool
	}{
		{"vllm nixl kv_both", grpcsim.EngineVLLM, grpcsim.ConnectorNixl, "kv_both", false, true},
		{"vllm nixl kv_producer", grpcsim.EngineVLLM, grpcsim.ConnectorNixl, "kv_producer", false, false},
		{"sglang labelled kv_both", grpcsim.EngineSGLang, "", "", true, false},
		{"tokenspeed labelled kv_both", grpcsim.EngineTokenSpeed, "", "", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, p, d, store := prefillOnlyPair(t, tc.engine, tc.conn, tc.kvRole, tc.label, n)
			for i := range 2 {
				r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": idsFrom(7000+100*i, 12), "max_tokens": n, "stream": i == 1}, nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				if i == 0 {
					assert.EqualValues(t, n, r.Object(t)["usage"].(map[string]any)["completion_tokens"], "every output token")
				}
			}
			if tc.capable {
				assert.EqualValues(t, 2, p.Stats().PrefillOnlyRequests)
				assert.Zero(t, d.Stats().Requests, "no decode leg")
				assert.EqualValues(t, 2, metric(t, g, `smg_pd_decisions_total{decision="prefill_only",reason="output_below_threshold"}`))
				r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": idsFrom(7500, 12), "max_tokens": n + 1}, nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				assert.EqualValues(t, 2, p.Stats().PrefillOnlyRequests, "N+1: no new prefill-only request")
				handoffClean(t, p, d, 1)
			} else {
				assert.Zero(t, p.Stats().PrefillOnlyRequests, "no whole request reached this prefill")
				handoffClean(t, p, d, 2)
				assert.LessOrEqual(t, metric(t, g, `smg_pd_decisions_total{decision="prefill_only",reason="output_below_threshold"}`), 0.0)
			}
			assertNoInFlight(t, store)
		})
	}
}

// A prefill-only request cancelled by its client mid-stream leaves nothing in flight.
func TestPrefillOnlyClientCancelLeavesNothingInFlightOverGRPC(t *testing.T) {
	t.Parallel()
	g, p, d, store := prefillOnlyPair(t, grpcsim.EngineVLLM, grpcsim.ConnectorNixl, "kv_both", false, 200, func(c *grpcsim.Config) { c.ITL = 20 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), faultBound)
	defer cancel()
	resp := g.Open(t, ctx, "/v1/completions", map[string]any{"model": pdModel, "prompt": idsFrom(8000, 12), "max_tokens": 200, "stream": true})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, err := resp.Body.Read(make([]byte, 64))
	require.NoError(t, err)
	cancel()
	_ = resp.Body.Close()
	require.Eventually(t, func() bool { return p.Stats().Aborted == 1 }, faultBound, 10*time.Millisecond, "the prefill's RPC is aborted")
	assert.EqualValues(t, 1, p.Stats().PrefillOnlyRequests)
	assert.Zero(t, d.Stats().Requests)
	assertNoInFlight(t, store)
}

// prefillOnlyPair is spdPair with the prefill's kv_role (or a kv_both label) and
// --selective-pd-prefill-only-max-tokens n; mods adjust the prefill sim.
func prefillOnlyPair(t *testing.T, engine, conn, kvRole string, label bool, n int, mods ...func(*grpcsim.Config)) (*fleet.Gateway, *grpcsim.Server, *grpcsim.Server, ports.WorkerStore) {
	t.Helper()
	sp := spdPair{engine: engine, connector: conn, prefillKVRole: kvRole, prefillLabelBoth: label, prefillMods: mods}
	return sp.start(t, func(c *config.Config) { c.SelectivePD.PrefillOnlyMaxTokens = n })
}
