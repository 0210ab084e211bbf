package pairing_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// Issue #6, Done when: with --pd-pairing-mode off a NIXL prefill and a Mooncake decode pair.
// What actually happens then: the gateway dispatches both legs (the prefill tagged for NIXL,
// counted in smg_pd_kv_connector_mode_total{mode="nixl"}); the Mooncake decode cannot use
// NIXL kv_transfer_params, so it recomputes the prompt (vLLM's "Got invalid
// KVTransferParams", sim recomputed_prompts) and the client still gets 200, with the
// recompute text; the prefill's NIXL blocks are never pulled and stay held until their lease
// expires. This is the silent recompute the seed's pairing modes exist to prevent.
func TestPairingOffDispatchesAnIncompatiblePair(t *testing.T) {
	t.Parallel()
	g, logs := gateway(t, wire.PairingModeOff)
	p := vllmSim(t, sim.RolePrefill, sim.ConnectorNixl)
	d := vllmSim(t, sim.RoleDecode, sim.ConnectorMooncake)
	register(t, g, p, nil)
	register(t, g, d, nil)
	waitDetected(t, g, 2)
	assert.Equal(t, map[string]string{p.URL(): "vllm/nixl/?", d.URL(): "vllm/mooncake/?"}, pairingKeys(t, g),
		"off still shows each worker's key")

	const n = 3
	for i := range n {
		r := g.Post(t, "/v1/completions", completion("off pairs anything", 4, false), nil)
		require.Equal(t, http.StatusOK, r.Status, "request %d: %s", i, r.Body)
		assert.Equal(t, sim.RecomputeText("off pairs anything", 4), completionText(t, r), "the decode recomputed the prompt")
	}
	ps, ds := p.Stats(), d.Stats()
	assert.Equal(t, int64(n), ps.Requests, "the gateway dispatched every prefill leg")
	assert.Equal(t, int64(n), ds.Requests, "the gateway dispatched every decode leg")
	assert.Equal(t, int64(n), ds.RecomputedPrompts)
	assert.Zero(t, ds.HandoffsReceived)
	assert.Zero(t, ps.HandoffsSent)
	assert.Equal(t, n, p.PendingHandoffs(), "the NIXL blocks wait for a pull that never comes")
	m := g.Metrics(t)
	assert.Equal(t, float64(n), m.Sum("smg_pd_kv_connector_mode_total", "mode", "nixl"))
	assert.Equal(t, float64(n), m.Sum("smg_worker_selection_total", "worker_type", "prefill"))
	assert.Equal(t, float64(n), m.Sum("smg_worker_selection_total", "worker_type", "decode"))
	assert.Empty(t, logs.warned(seedPrefix))
}

// Seed "Pairing Modes": under strict, HTTP workers need an explicit protocol or, for vLLM, a
// registered kv_connector. Each case registers a NIXL prefill and decode; the ones that pair
// answer 200, and only a registered connector gives a real handoff (without one the gateway
// cannot tag the prefill and the decode recomputes).
func TestStrictPairsHTTPWorkersOnlyWithProtocolOrConnector(t *testing.T) {
	t.Parallel()
	noConn := map[string]any{"kv_connector": nil}
	proto := map[string]any{"kv_connector": nil, "labels": map[string]string{"pairing_protocol": "nixl-v1"}}
	for _, tc := range []struct {
		name, mode     string
		pExtra, dExtra map[string]any
		key            string
		status         int
		handoff        bool
	}{
		{"strict, connector registered", wire.PairingModeStrict, nil, nil, "vllm/nixl/?", http.StatusOK, true},
		{"strict, url only", wire.PairingModeStrict, noConn, noConn, "vllm/?/?", http.StatusServiceUnavailable, false},
		{"strict, explicit protocol label", wire.PairingModeStrict, proto, proto, "nixl-v1", http.StatusOK, false},
		{"lenient, url only", wire.PairingModeLenient, noConn, noConn, "vllm/?/?", http.StatusOK, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, _ := gateway(t, tc.mode)
			p := vllmSim(t, sim.RolePrefill, sim.ConnectorNixl)
			d := vllmSim(t, sim.RoleDecode, sim.ConnectorNixl)
			register(t, g, p, tc.pExtra)
			register(t, g, d, tc.dExtra)
			waitDetected(t, g, 2)
			assert.Equal(t, map[string]string{p.URL(): tc.key, d.URL(): tc.key}, pairingKeys(t, g))

			r := g.Post(t, "/v1/completions", completion("strict or not", 3, false), nil)
			require.Equal(t, tc.status, r.Status, "%s", r.Body)
			if tc.status != http.StatusOK {
				requireNoPair(t, r, explain(t, g, p, d, tc.key, tc.key, "transport"))
				assert.Zero(t, fleet.SumStats(p, d).Requests)
				return
			}
			want, received := sim.RecomputeText("strict or not", 3), int64(0)
			if tc.handoff {
				want, received = sim.HandoffText("strict or not", 3), 1
			}
			assert.Equal(t, want, completionText(t, r))
			assert.Equal(t, received, d.Stats().HandoffsReceived)
			assert.Equal(t, 1-received, d.Stats().RecomputedPrompts)
		})
	}
}

// Issue #6, Done when: `curl -s localhost:30000/workers | jq '.workers[] | {url, worker_type,
// is_healthy, pd_pairing}'` shows the keys — every prefill and decode entry carries the four
// fields, and a vLLM worker registered with NixlConnector and the seed's layout labels shows
// exactly the seed's example key. SGLang workers added as startup workers show the key built
// from the facts detection copies from /get_server_info; the explicit protocol (label or the
// spec's pairing_protocol field, stored as the label) replaces the derived key.
func TestWorkersShowPDPairingKeys(t *testing.T) {
	t.Parallel()
	sp := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RolePrefill})
	sd := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RoleDecode})
	bp := sp.BootstrapPort()
	g, _ := gateway(t, "", func(c *config.Config) {
		c.Prefill = []config.PrefillSpec{{URL: sp.URL(), BootstrapPort: &bp}}
		c.Decode = []string{sd.URL()}
	})
	vp := vllmSim(t, sim.RolePrefill, sim.ConnectorNixl)
	vd := vllmSim(t, sim.RoleDecode, sim.ConnectorMooncake)
	vx := vllmSim(t, sim.RoleDecode, sim.ConnectorNixl)
	register(t, g, vp, map[string]any{"labels": map[string]string{
		"kv_cache_dtype": "auto", "block_size": "16", "attention_backend": "flash_attn", "model_dtype": "torch.bfloat16"}})
	register(t, g, vd, nil)
	register(t, g, vx, map[string]any{"pairing_protocol": "team-kv/2"})
	waitDetected(t, g, 5)

	r := g.Get(t, "/workers")
	require.Equal(t, http.StatusOK, r.Status)
	var got []map[string]any
	for _, w := range path(t, r.Object(t), "workers").([]any) {
		e := w.(map[string]any)
		got = append(got, map[string]any{"url": e["url"], "worker_type": e["worker_type"],
			"is_healthy": e["is_healthy"], "pd_pairing": e["pd_pairing"]})
	}
	sglangKey := "sglang/mooncake/dtype=auto,page=1,attn=flashinfer"
	assert.ElementsMatch(t, []map[string]any{
		{"url": sp.URL(), "worker_type": "prefill", "is_healthy": true, "pd_pairing": sglangKey},
		{"url": sd.URL(), "worker_type": "decode", "is_healthy": true, "pd_pairing": sglangKey},
		{"url": vp.URL(), "worker_type": "prefill", "is_healthy": true,
			"pd_pairing": "vllm/nixl/dtype=auto,page=16,attn=flash_attn,model=torch.bfloat16"},
		{"url": vd.URL(), "worker_type": "decode", "is_healthy": true, "pd_pairing": "vllm/mooncake/?"},
		{"url": vx.URL(), "worker_type": "decode", "is_healthy": true, "pd_pairing": "team-kv/2"},
	}, got)
}

// path walks decoded JSON objects by key.
func path(t *testing.T, v any, keys ...string) any {
	t.Helper()
	for _, k := range keys {
		m, ok := v.(map[string]any)
		require.True(t, ok, "want an object for %q in %v", k, v)
		v = m[k]
	}
	return v
}
