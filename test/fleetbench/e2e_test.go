package fleetbench_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleetbench"
	"github.com/smg-go/smg/test/load"
)

// TestFleetBenchEndToEnd runs the real thing, tiny: smg and smg-sim built from this tree, one
// vLLM NIXL prefill and decode, one gateway, a few shared-prefix requests. The report must be
// complete and its cache figures must be the prefill simulator's own /sim/stats accounting.
func TestFleetBenchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs smg and smg-sim")
	}
	bin := t.TempDir()
	var log bytes.Buffer
	require.NoError(t, fleetbench.EnsureBinaries(bin, false, &log), log.String())

	shape := fleetbench.DefaultShape()
	shape.Scale, shape.Prefixes, shape.MaxTokens = 0.05, 2, 4 // two 150-token prefixes: the third request repeats one
	knobs := fleetbench.DefaultKnobs()
	knobs.ITLms, knobs.PrefillTokensPerS, knobs.PrefillFixedMS = 1, 0, 5 // every prefill computes 5 ms: busy_ms > 0
	const n = 6
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := fleetbench.Run(ctx, fleetbench.Config{BinDir: bin, Engine: "vllm", Prefills: 1, Decodes: 1,
		Policies: []string{"round_robin"}, Replicas: []int{1}, Workloads: []string{fleetbench.SharedPrefix},
		Rate: 50, Requests: n, Duration: 30 * time.Second, RequestTimeout: 30 * time.Second, Seed: 1,
		Shape: shape, Sim: knobs, Log: &log,
		// The decode's blocks are larger than any prompt, so it caches nothing: its
		// cached_tokens (0) cannot stand in for the prefill's.
		DecodeArgs: []string{"--block-size", "1024"}})
	require.NoError(t, err, log.String())
	require.Len(t, rep.Cells, 1)
	c := rep.Cells[0]
	assert.Equal(t, "shared-prefix", c.Workload)
	assert.Equal(t, "round_robin", c.Policy)
	assert.Equal(t, 1, c.Replicas)
	require.Equal(t, n, c.Sent)
	require.Equal(t, n, c.OK, "first error: %s", c.FirstError)
	assert.Zero(t, c.Errors)
	assert.Equal(t, n, c.TTFTms.N)
	assert.Equal(t, n, c.E2Ems.N)
	assert.Len(t, c.TTFTSamples, n)
	assert.Positive(t, c.RequestsPerS)
	assert.Positive(t, c.OutputTokensPerS)
	assert.Zero(t, c.Recomputes, "every decode received its KV through NIXL")

	require.Len(t, c.Workers, 2)
	var prefill, decode fleetbench.WorkerStats
	for _, w := range c.Workers {
		require.NoError(t, load.CheckLoopback(w.URL))
		switch w.Role {
		case "prefill":
			prefill = w
		case "decode":
			decode = w
		}
	}
	require.True(t, prefill.CacheModel && decode.CacheModel, "smg-sim reports the KV-cache counters")
	assert.True(t, c.CacheModel)
	assert.Equal(t, int64(n), prefill.Requests)
	assert.Positive(t, prefill.BusyMS)
	assert.Positive(t, decode.BusyMS)

	// The cache figures are the prefill's own: its prompt tokens are exactly what was sent
	// (the stand-in tokenizer counts words of "role: content" lines), the hit rate is its
	// cached ÷ prompt tokens, and a shared prefix was hit.
	reqs, err := fleetbench.Generate(fleetbench.SharedPrefix, 1, n, shape)
	require.NoError(t, err)
	sent := 0
	for _, r := range reqs {
		sent += r.Words()
	}
	assert.Equal(t, int64(sent), prefill.PromptTokens)
	assert.Equal(t, prefill.PromptTokens, c.PromptTokens)
	assert.Equal(t, prefill.CachedTokens, c.CachedTokens)
	assert.InDelta(t, float64(prefill.CachedTokens)/float64(prefill.PromptTokens), c.CacheHitRate, 1e-12)
	assert.Positive(t, c.CacheHitRate, "a repeated prefix is a cache hit")
	assert.Less(t, c.CacheHitRate, 1.0)
	assert.Equal(t, 1.0, c.PrefillImbalance, "one prefill is perfectly balanced")
	assert.Zero(t, decode.CachedTokens)
}
