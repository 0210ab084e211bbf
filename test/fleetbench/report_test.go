package fleetbench_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleetbench"
)

func TestImbalanceIsMaxOverMean(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		xs   []float64
		want float64
	}{
		{"even load is 1", []float64{5, 5, 5, 5}, 1},
		{"one worker did everything is n", []float64{0, 0, 8, 0}, 4},
		{"max over mean", []float64{1, 2, 3}, 1.5},
		{"no workers", nil, 0},
		{"no load", []float64{0, 0}, 0},
	} {
		assert.InDelta(t, c.want, fleetbench.Imbalance(c.xs), 1e-9, c.name)
	}
}

func TestHitRateIsCachedOverPromptTokensOfTheRole(t *testing.T) {
	t.Parallel()
	ws := []fleetbench.WorkerStats{
		{Role: "prefill", PromptTokens: 1000, CachedTokens: 900},
		{Role: "prefill", PromptTokens: 1000, CachedTokens: 100},
		{Role: "decode", PromptTokens: 5000, CachedTokens: 0},
	}
	assert.InDelta(t, 0.5, fleetbench.HitRate(ws, "prefill"), 1e-9)
	assert.Zero(t, fleetbench.HitRate(ws, "decode"))
	assert.Zero(t, fleetbench.HitRate(nil, "prefill"))
}

func sampleCell() fleetbench.Cell {
	ms := time.Millisecond
	var rs []fleetbench.Result
	for i := 1; i <= 100; i++ {
		rs = append(rs, fleetbench.Result{Index: i, TTFT: time.Duration(i) * ms, E2E: time.Duration(10*i) * ms, OutputTokens: 4})
	}
	rs = append(rs, fleetbench.Result{Index: 101, Err: "HTTP 503: shed"})
	ws := []fleetbench.WorkerStats{
		{URL: "http://127.0.0.1:1", Role: "prefill", PromptTokens: 400, CachedTokens: 300, EvictedBlocks: 2, BusyMS: 30, CacheModel: true},
		{URL: "http://127.0.0.1:2", Role: "prefill", PromptTokens: 600, CachedTokens: 0, EvictedBlocks: 1, BusyMS: 90, CacheModel: true},
		{URL: "http://127.0.0.1:3", Role: "decode", BusyMS: 50, RecomputedPrompts: 1, CacheModel: true},
	}
	return fleetbench.Summarise("shared-prefix", "cache_aware", 4, rs, 2*time.Second, ws)
}

func TestSummariseComputesTheCellFigures(t *testing.T) {
	t.Parallel()
	c := sampleCell()
	assert.Equal(t, 101, c.Sent)
	assert.Equal(t, 100, c.OK)
	assert.Equal(t, 1, c.Errors)
	assert.Equal(t, "HTTP 503: shed", c.FirstError)
	// Nearest rank over 1..100 ms.
	assert.Equal(t, fleetbench.Quantiles{N: 100, P50: 50, P90: 90, P99: 99, Max: 100}, c.TTFTms)
	assert.Equal(t, fleetbench.Quantiles{N: 100, P50: 500, P90: 900, P99: 990, Max: 1000}, c.E2Ems)
	assert.InDelta(t, 50, c.RequestsPerS, 1e-9)
	assert.InDelta(t, 200, c.OutputTokensPerS, 1e-9)
	assert.InDelta(t, 0.3, c.CacheHitRate, 1e-9)
	assert.Equal(t, int64(1000), c.PromptTokens)
	assert.Equal(t, int64(300), c.CachedTokens)
	assert.Equal(t, int64(3), c.EvictedBlocks)
	assert.InDelta(t, 1.5, c.PrefillImbalance, 1e-9)
	assert.InDelta(t, 1, c.DecodeImbalance, 1e-9)
	assert.Equal(t, int64(1), c.Recomputes)
	assert.True(t, c.CacheModel)
	assert.Len(t, c.TTFTSamples, 100)
	assert.Equal(t, 1.0, c.TTFTSamples[0])
}

func TestReportJSONShape(t *testing.T) {
	t.Parallel()
	rep := fleetbench.Report{Started: time.Unix(0, 0).UTC(), Machine: fleetbench.Machine(),
		Setup: fleetbench.Setup{Engine: "vllm", Prefills: 4, Decodes: 4, Rate: 8, Requests: 100, DurationS: 60, Seed: 1,
			Sim: fleetbench.DefaultKnobs(), Shape: fleetbench.DefaultShape()},
		Cells: []fleetbench.Cell{sampleCell()}}
	path := filepath.Join(t.TempDir(), "r.json")
	require.NoError(t, fleetbench.WriteJSON(path, rep))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	assert.ElementsMatch(t, []string{"started", "machine", "setup", "cells"}, keys(doc))
	cells := doc["cells"].([]any)
	require.Len(t, cells, 1)
	cell := cells[0].(map[string]any)
	assert.ElementsMatch(t, []string{"workload", "policy", "replicas", "sent", "ok", "errors", "first_error", "elapsed_s",
		"ttft_ms", "e2e_ms", "requests_per_s", "output_tokens_per_s", "cache_hit_rate", "prompt_tokens", "cached_tokens",
		"evicted_blocks", "prefill_imbalance", "decode_imbalance", "recomputes", "cache_model", "workers", "ttft_samples_ms"}, keys(cell))
	assert.ElementsMatch(t, []string{"n", "p50", "p90", "p99", "max"}, keys(cell["ttft_ms"].(map[string]any)))
	w := cell["workers"].([]any)[0].(map[string]any)
	assert.ElementsMatch(t, []string{"url", "role", "requests", "errors", "prompt_tokens", "cached_tokens", "evicted_blocks",
		"kv_cache_blocks_used", "queue_ms", "busy_ms", "recomputed_prompts", "cache_model"}, keys(w))
	assert.Equal(t, 0.3, cell["cache_hit_rate"])
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestWriteTableHasOneLinePerCell(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	c := sampleCell()
	noCache := c
	noCache.CacheModel = false
	fleetbench.WriteTable(&b, []fleetbench.Cell{c, noCache})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 3)
	assert.Contains(t, lines[0], "hit rate")
	assert.Regexp(t, `shared-prefix\s+cache_aware\s+4\s+100/101\s+50\s+90\s+99\s+500\s+990\s+50.00\s+200\s+0.300\s+1.50\s+1.00\s+1\s+1`, lines[1])
	assert.Contains(t, lines[2], "n/a", "no cache model: the hit rate is not measured")
}

func TestWritePlotDrawsSVGAndPNG(t *testing.T) {
	t.Parallel()
	a := sampleCell()
	b := a
	b.Policy, b.Replicas = "round_robin", 1
	other := a
	other.Workload = "unique"
	dir := t.TempDir()
	svg := filepath.Join(dir, "p.svg")
	require.NoError(t, fleetbench.WritePlotFile(svg, []fleetbench.Cell{a, b, other}))
	body, err := os.ReadFile(svg)
	require.NoError(t, err)
	s := string(body)
	assert.Contains(t, s, "<svg")
	for _, want := range []string{"TTFT CDF: shared-prefix", "TTFT CDF: unique", "cache_aware ×4", "round_robin ×1"} {
		assert.Contains(t, s, want)
	}
	png := filepath.Join(dir, "p.png")
	require.NoError(t, fleetbench.WritePlotFile(png, []fleetbench.Cell{a}))
	body, err = os.ReadFile(png)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(body, []byte("\x89PNG")))
	assert.Error(t, fleetbench.WritePlot(&bytes.Buffer{}, nil, false), "no cells")
}
