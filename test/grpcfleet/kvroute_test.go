package grpcfleet_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/kvroute"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

const kvEventsVLLM = `{"enable_kv_cache_events":true,"endpoint":"tcp://127.0.0.1:0","replay_endpoint":"tcp://127.0.0.1:0"}`

// kvFleet is two vLLM prefills publishing KV events and one decode behind a gateway
// routing prefills with cache_aware and KV events (no speculative entries, so routing
// follows the engines' events alone). It returns the gateway's Router.
func kvFleet(t *testing.T) (*fleet.Gateway, []*grpcsim.Server, *kvroute.Router) {
	t.Helper()
	_, dir := qwen3(t)
	mk := func(role string) grpcsim.Config {
		return grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: role, Model: pdModel, TokenizerPath: dir, KVEventsConfig: kvEventsVLLM}
	}
	s := sims(t, mk(grpcsim.RolePrefill), mk(grpcsim.RolePrefill), mk(grpcsim.RoleDecode))
	cfg := fleet.DefaultConfig()
	cfg.Policy = "cache_aware"
	cfg.KVEventsRouting, cfg.KVSpeculativeTTL = true, 0
	cfg.Prefill = []config.PrefillSpec{{URL: s[0].URL()}, {URL: s[1].URL()}}
	cfg.Decode = []string{s[2].URL()}
	var kv policy.KVPrefixes
	g := fleet.StartGateway(t, cfg, fx.Populate(&kv))
	g.WaitWorkers(t, 3)
	r, ok := kv.(*kvroute.Router)
	require.True(t, ok, "the gateway runs a kvroute.Router")
	require.Eventually(t, func() bool { return r.Live(s[0].URL()) && r.Live(s[1].URL()) }, 10*time.Second, 10*time.Millisecond,
		"both prefills' event streams come up")
	return g, s, r
}

// ids are n in-vocabulary token ids starting at from.
func tokenRange(from, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(from + i)
	}
	return out
}

func complete(t *testing.T, g *fleet.Gateway, prompt []uint32) {
	t.Helper()
	r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": prompt, "max_tokens": 2}, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
}

// A prompt sharing only a token prefix with an earlier one (its routing text shares
// nothing) lands on the prefill whose engine reported holding that prefix; once that
// engine clears its cache, the next such prompt does not count on it.
func TestKVEventsRouteASharedPrefixToTheWorkerHoldingIt(t *testing.T) {
	t.Parallel()
	g, s, r := kvFleet(t)
	shared := tokenRange(1000, 64) // four 16-token blocks
	x := append(append([]uint32(nil), shared...), tokenRange(5000, 16)...)
	complete(t, g, x)
	holder, other := s[0], s[1]
	if holder.Stats().PromptTokens == 0 {
		holder, other = other, holder
	}
	require.NotZero(t, holder.Stats().PromptTokens)
	require.Eventually(t, func() bool { return r.Matched(pdModel, x)[holder.URL()] >= len(shared) }, 10*time.Second, 10*time.Millisecond,
		"the holder's events reach the index")

	// The approximate path would take the other prefill (same load, fewer picks).
	y := append(append([]uint32(nil), shared...), tokenRange(7000, 64)...)
	complete(t, g, y)
	assert.Equal(t, int64(len(shared)), holder.Stats().CachedTokens, "the holder served the shared prefix from its cache")
	assert.Zero(t, other.Stats().PromptTokens)

	holder.FlushCache()
	require.Eventually(t, func() bool { _, ok := r.Matched(pdModel, x)[holder.URL()]; return !ok }, 10*time.Second, 10*time.Millisecond,
		"the cleared cache's entries leave the index")
	// With nothing cached anywhere the two prefills tie (same load, no match): the tie is
	// keyed by the prompt's head and the worker (the same on every replica), so z may go to
	// either; wherever it goes, the router counts on no cached token there (its prediction)
	// and the engine computes it whole.
	predicted := func() (n uint64) { // on the prefills (the decode holds the prefix: it got its KV)
		for _, w := range r.Stats() {
			if w.URL == holder.URL() || w.URL == other.URL() {
				n += w.PredictedCached
			}
		}
		return n
	}
	z := append(append([]uint32(nil), shared...), tokenRange(9000, 64)...)
	before, predictedBefore := holder.Stats().PromptTokens+other.Stats().PromptTokens, predicted()
	complete(t, g, z)
	assert.Equal(t, predictedBefore, predicted(), "the cleared entries were not counted on")
	assert.Equal(t, int64(len(z)), holder.Stats().PromptTokens+other.Stats().PromptTokens-before)
	assert.Equal(t, int64(len(shared)), holder.Stats().CachedTokens+other.Stats().CachedTokens, "nothing of z came from a cache")
}

// A prefill whose event stream sends garbage or skips sequence numbers keeps serving
// (approximate routing while its stream is down); nothing panics.
func TestKVEventsGarbageAndGapsFallBack(t *testing.T) {
	t.Parallel()
	g, s, r := kvFleet(t)
	require.NoError(t, s[0].SetFault("kv-events-garbage"))
	require.NoError(t, s[1].SetFault("kv-events-gap"))
	for i := range 6 {
		complete(t, g, tokenRange(1000+100*i, 80))
	}
	h0, ok := r.Health(s[0].URL())
	require.True(t, ok)
	h1, ok := r.Health(s[1].URL())
	require.True(t, ok)
	assert.NotZero(t, h0.Resets+h0.DecodeErrors+h1.Gaps+h1.Resets, "the faults were seen: %+v %+v", h0, h1)
	s[0].ClearFaults()
	s[1].ClearFaults()
	complete(t, g, tokenRange(3000, 80))
}
