package pairing_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// Issue #6, Done when: a NIXL prefill with a Mooncake decode → 503 no_compatible_pd_pair
// naming transport (and both legs' keys), with X-SMG-Error-Code and the seed's body, for a
// plain and a streamed request, without touching either worker; the same is logged at warn
// level. Adding a compatible decode makes requests succeed, and only compatible pairs are
// ever used (sim stats: the Mooncake decode never receives a request, every NIXL handoff
// completes, nothing is recomputed).
func TestNixlPrefillWithMooncakeDecodeIsRefusedUntilACompatibleDecodeJoins(t *testing.T) {
	t.Parallel()
	g, logs := gateway(t, "") // default: lenient
	p := vllmSim(t, sim.RolePrefill, sim.ConnectorNixl)
	mc := vllmSim(t, sim.RoleDecode, sim.ConnectorMooncake)
	register(t, g, p, nil)
	register(t, g, mc, nil)
	waitDetected(t, g, 2)

	want := explain(t, g, p, mc, "vllm/nixl/?", "vllm/mooncake/?", "transport")
	for _, tc := range []struct {
		name, path string
		body       map[string]any
	}{
		{"completion", "/v1/completions", completion("pairing is checked first", 4, false)},
		{"streamed completion", "/v1/completions", completion("pairing is checked first", 4, true)},
		{"chat", "/v1/chat/completions", map[string]any{"model": model, "max_tokens": 4,
			"messages": []map[string]any{{"role": "user", "content": "hello"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireNoPair(t, g.Post(t, tc.path, tc.body, nil), want)
		})
	}
	assert.Zero(t, fleet.SumStats(p, mc).Requests, "no leg was sent anywhere")
	assert.Equal(t, []string{want}, logs.warned(seedPrefix), "logged once at warn level for this fleet")

	nx := vllmSim(t, sim.RoleDecode, sim.ConnectorNixl)
	register(t, g, nx, nil)
	waitDetected(t, g, 3)

	const n = 24
	prompt := func(i int) string { return "a compatible pair for request " + string(rune('a'+i)) }
	rs := sendAll(t, g, "/v1/completions", n, func(i int) map[string]any { return completion(prompt(i), 4, false) })
	for i, r := range rs {
		require.Equal(t, http.StatusOK, r.Status, "request %d: %s", i, r.Body)
		assert.Equal(t, sim.HandoffText(prompt(i), 4), completionText(t, r), "request %d used a real NIXL handoff", i)
	}
	assert.Equal(t, int64(n), p.Stats().HandoffsSent)
	st := nx.Stats()
	assert.Equal(t, int64(n), st.Requests)
	assert.Equal(t, int64(n), st.HandoffsReceived)
	assert.Zero(t, st.RecomputedPrompts)
	assert.Zero(t, mc.Stats().Requests, "the incompatible Mooncake decode was never used")
	assert.Zero(t, p.PendingHandoffs(), "every NIXL block set was pulled")
}

// Issue #6, Done when: in a mixed fleet — a NIXL and a Mooncake prefill, a NIXL and a
// Mooncake decode — every request succeeds through a same-transport pair: each decode
// received exactly the handoffs its own-transport prefill sent, nothing is recomputed, both
// pairs carry traffic.
func TestMixedFleetOnlyUsesCompatiblePairs(t *testing.T) {
	t.Parallel()
	g, _ := gateway(t, "")
	pn := vllmSim(t, sim.RolePrefill, sim.ConnectorNixl)
	pm := vllmSim(t, sim.RolePrefill, sim.ConnectorMooncake)
	dn := vllmSim(t, sim.RoleDecode, sim.ConnectorNixl)
	dm := vllmSim(t, sim.RoleDecode, sim.ConnectorMooncake)
	for _, s := range []*sim.Server{pn, pm, dm, dn} {
		register(t, g, s, nil)
	}
	waitDetected(t, g, 4)
	assert.Equal(t, map[string]string{
		pn.URL(): "vllm/nixl/?", dn.URL(): "vllm/nixl/?", pm.URL(): "vllm/mooncake/?", dm.URL(): "vllm/mooncake/?",
	}, pairingKeys(t, g))

	const n = 40
	prompt := func(i int) string { return "mixed fleet request number " + string(rune('A'+i)) }
	rs := sendAll(t, g, "/v1/completions", n, func(i int) map[string]any { return completion(prompt(i), 3, false) })
	for i, r := range rs {
		require.Equal(t, http.StatusOK, r.Status, "request %d: %s", i, r.Body)
		assert.Equal(t, sim.HandoffText(prompt(i), 3), completionText(t, r), "request %d", i)
	}
	waitStats(t, func() bool { return pm.Stats().HandoffsSent == dm.Stats().HandoffsReceived },
		"Mooncake prefill sent %d, decode received %d", pm.Stats().HandoffsSent, dm.Stats().HandoffsReceived)
	nxP, nxD, mcP, mcD := pn.Stats(), dn.Stats(), pm.Stats(), dm.Stats()
	assert.Equal(t, nxP.HandoffsSent, nxD.HandoffsReceived, "NIXL prefill → NIXL decode only")
	assert.Equal(t, mcP.HandoffsSent, mcD.HandoffsReceived, "Mooncake prefill → Mooncake decode only")
	assert.Equal(t, int64(n), nxD.HandoffsReceived+mcD.HandoffsReceived)
	assert.Equal(t, int64(n), nxD.Requests+mcD.Requests, "one decode leg per request")
	assert.Positive(t, nxD.Requests, "the NIXL pair carried traffic")
	assert.Positive(t, mcD.Requests, "the Mooncake pair carried traffic")
	all := fleet.SumStats(pn, pm, dn, dm)
	assert.Zero(t, all.RecomputedPrompts)
	assert.Zero(t, all.Errors)
	assert.Zero(t, all.UnmatchedRooms)
}

// Seed "Explicit Pairing Protocol": a prefill worker with no compatible decode is skipped as
// long as other prefill workers can pair — no request fails and none reaches it.
func TestPrefillWithoutCompatibleDecodeIsSkipped(t *testing.T) {
	t.Parallel()
	g, logs := gateway(t, "")
	pm := vllmSim(t, sim.RolePrefill, sim.ConnectorMooncake)
	pn := vllmSim(t, sim.RolePrefill, sim.ConnectorNixl)
	dn := vllmSim(t, sim.RoleDecode, sim.ConnectorNixl)
	for _, s := range []*sim.Server{pm, pn, dn} {
		register(t, g, s, nil)
	}
	waitDetected(t, g, 3)

	const n = 12
	rs := sendAll(t, g, "/v1/completions", n, func(int) map[string]any { return completion("skip the odd one", 2, false) })
	for i, r := range rs {
		require.Equal(t, http.StatusOK, r.Status, "request %d: %s", i, r.Body)
	}
	assert.Zero(t, pm.Stats().Requests, "the Mooncake prefill has no compatible decode")
	assert.Equal(t, int64(n), pn.Stats().HandoffsSent)
	assert.Equal(t, int64(n), dn.Stats().HandoffsReceived)
	assert.Empty(t, logs.warned(seedPrefix), "a fleet that can pair logs no pairing warning")
}

// Issue #6, table: every component a client can trip over end to end yields the 503 naming
// exactly that component and both keys; the sims never see a leg.
func TestIncompatibleComponentsAreNamed(t *testing.T) {
	t.Parallel()
	layout := func(dtype, block string) map[string]any {
		return map[string]any{"labels": map[string]string{
			"kv_cache_dtype": dtype, "block_size": block, "attention_backend": "flash_attn", "model_dtype": "torch.bfloat16"}}
	}
	for _, tc := range []struct {
		name, mode        string
		pConn, dConn      string
		pExtra, dExtra    map[string]any
		pKey, dKey, diffs string
	}{
		{name: "nixl vs mooncake", pConn: sim.ConnectorNixl, dConn: sim.ConnectorMooncake,
			pKey: "vllm/nixl/?", dKey: "vllm/mooncake/?", diffs: "transport"},
		{name: "mooncake vs nixl under strict", mode: wire.PairingModeStrict, pConn: sim.ConnectorMooncake, dConn: sim.ConnectorNixl,
			pKey: "vllm/mooncake/?", dKey: "vllm/nixl/?", diffs: "transport"},
		{name: "fp8 vs auto kv cache", pConn: sim.ConnectorNixl, dConn: sim.ConnectorNixl,
			pExtra: layout("fp8", "16"), dExtra: layout("auto", "16"),
			pKey: "vllm/nixl/dtype=fp8,page=16,attn=flash_attn,model=torch.bfloat16",
			dKey: "vllm/nixl/dtype=auto,page=16,attn=flash_attn,model=torch.bfloat16", diffs: "kv_cache_dtype"},
		{name: "block size and transport", pConn: sim.ConnectorNixl, dConn: sim.ConnectorMooncake,
			pExtra: layout("auto", "16"), dExtra: layout("auto", "32"),
			pKey: "vllm/nixl/dtype=auto,page=16,attn=flash_attn,model=torch.bfloat16",
			dKey: "vllm/mooncake/dtype=auto,page=32,attn=flash_attn,model=torch.bfloat16", diffs: "transport, page_size"},
		{name: "different explicit protocols", pConn: sim.ConnectorNixl, dConn: sim.ConnectorNixl,
			pExtra: map[string]any{"pairing_protocol": "kv-a"}, dExtra: map[string]any{"labels": map[string]string{"pairing_protocol": "kv-b"}},
			pKey: "kv-a", dKey: "kv-b", diffs: "pairing_protocol"},
		{name: "explicit protocol on one leg under strict", mode: wire.PairingModeStrict, pConn: sim.ConnectorNixl, dConn: sim.ConnectorNixl,
			pExtra: map[string]any{"pairing_protocol": "kv-a"}, pKey: "kv-a", dKey: "vllm/nixl/?", diffs: "pairing_protocol"},
		{name: "http vllm without connector under strict", mode: wire.PairingModeStrict, pConn: sim.ConnectorNixl, dConn: sim.ConnectorNixl,
			pExtra: map[string]any{"kv_connector": nil}, dExtra: map[string]any{"kv_connector": nil},
			pKey: "vllm/?/?", dKey: "vllm/?/?", diffs: "transport"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, _ := gateway(t, tc.mode)
			p := vllmSim(t, sim.RolePrefill, tc.pConn)
			d := vllmSim(t, sim.RoleDecode, tc.dConn)
			register(t, g, p, tc.pExtra)
			register(t, g, d, tc.dExtra)
			waitDetected(t, g, 2)
			assert.Equal(t, map[string]string{p.URL(): tc.pKey, d.URL(): tc.dKey}, pairingKeys(t, g))
			requireNoPair(t, g.Post(t, "/v1/completions", completion("which part differs", 2, false), nil),
				explain(t, g, p, d, tc.pKey, tc.dKey, tc.diffs))
			assert.Zero(t, fleet.SumStats(p, d).Requests)
		})
	}
}
