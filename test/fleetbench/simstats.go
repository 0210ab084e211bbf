package fleetbench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// WorkerStats is one simulator's GET /sim/stats at the end of a cell (the simulator's own
// accounting; field names are the /sim/stats contract).
type WorkerStats struct {
	// URL and Role ("prefill", "decode") identify the simulator.
	URL  string `json:"url"`
	Role string `json:"role"`
	// Requests and Errors count inference requests received and answered with an error.
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	// PromptTokens are the prompt tokens of the requests; CachedTokens those of them found in
	// the KV cache (the matched prefix).
	PromptTokens int64 `json:"prompt_tokens"`
	CachedTokens int64 `json:"cached_tokens"`
	// EvictedBlocks counts blocks evicted from the cache; KVCacheBlocksUsed is the blocks in
	// use at the end (a gauge).
	EvictedBlocks     int64 `json:"evicted_blocks"`
	KVCacheBlocksUsed int64 `json:"kv_cache_blocks_used"`
	// QueueMS is the time requests waited for a compute slot and BusyMS the time the
	// simulator spent computing, both in milliseconds.
	QueueMS float64 `json:"queue_ms"`
	BusyMS  float64 `json:"busy_ms"`
	// RecomputedPrompts counts decodes that computed the prompt locally (no usable KV).
	RecomputedPrompts int64 `json:"recomputed_prompts"`
	// DecodeOnlyRequests counts requests the decode served alone (selective PD: no handoff
	// data; a vLLM decode counts them in RecomputedPrompts too).
	DecodeOnlyRequests int64 `json:"decode_only_requests,omitempty"`
	// CacheModel reports whether the simulator's stats carry the KV-cache counters at all
	// (cached_tokens present); without them the hit rate is not measured.
	CacheModel bool `json:"cache_model"`
}

// fetchStats reads /sim/stats of every simulator, prefills first.
func fetchStats(ctx context.Context, f *Fleet) ([]WorkerStats, error) {
	hc := &http.Client{Timeout: 10 * time.Second}
	var out []WorkerStats
	for _, g := range []struct {
		role string
		sims []*Sim
	}{{"prefill", f.Prefills}, {"decode", f.Decodes}} {
		for _, s := range g.sims {
			var raw map[string]json.RawMessage
			if err := getJSON(ctx, hc, s.StatsURL+"/sim/stats", &raw); err != nil {
				return nil, fmt.Errorf("fleetbench: %s stats: %w", g.role, err)
			}
			b, _ := json.Marshal(raw)
			w := WorkerStats{}
			if err := json.Unmarshal(b, &w); err != nil {
				return nil, fmt.Errorf("fleetbench: %s %s /sim/stats: %w", g.role, s.URL, err)
			}
			_, w.CacheModel = raw["cached_tokens"]
			w.URL, w.Role = s.URL, g.role
			out = append(out, w)
		}
	}
	return out, nil
}

// HitRate is Σ cached_tokens ÷ Σ prompt_tokens over the workers of role (0 when no prompt
// tokens).
func HitRate(ws []WorkerStats, role string) float64 {
	var cached, prompt int64
	for _, w := range ws {
		if w.Role == role {
			cached += w.CachedTokens
			prompt += w.PromptTokens
		}
	}
	if prompt == 0 {
		return 0
	}
	return float64(cached) / float64(prompt)
}

// Imbalance is max ÷ mean of xs: 1 for a perfectly even load, len(xs) when one worker did
// everything; 0 for no values or no load.
func Imbalance(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum, hi float64
	for _, x := range xs {
		sum += x
		hi = max(hi, x)
	}
	if sum <= 0 {
		return 0
	}
	return hi / (sum / float64(len(xs)))
}

// busy returns the busy_ms of role's workers.
func busy(ws []WorkerStats, role string) []float64 {
	var out []float64
	for _, w := range ws {
		if w.Role == role {
			out = append(out, w.BusyMS)
		}
	}
	return out
}
