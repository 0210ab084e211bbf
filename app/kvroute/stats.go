package kvroute

import (
	"sort"
	"sync"
	"sync/atomic"
)

// cacheCounts are one worker's predicted and engine-reported cached prompt tokens.
type cacheCounts struct {
	predicted, engine, prompt atomic.Uint64
}

// cacheBook keeps cacheCounts by worker URL. Safe for concurrent use.
type cacheBook struct{ m sync.Map }

func (b *cacheBook) of(url string) *cacheCounts {
	if c, ok := b.m.Load(url); ok {
		return c.(*cacheCounts)
	}
	c, _ := b.m.LoadOrStore(url, &cacheCounts{})
	return c.(*cacheCounts)
}

// Predicted counts the prompt tokens cache_aware counted on url holding for one pick
// (policy.KVPredictor).
func (r *Router) Predicted(url string, tokens int) {
	if tokens > 0 {
		r.cache.of(url).predicted.Add(uint64(tokens))
	}
}

// EngineCached counts a prefill leg's engine-reported prompt and cached tokens on url
// (the gRPC pipeline's prefill complete).
func (r *Router) EngineCached(url string, prompt, cached int) {
	c := r.cache.of(url)
	if prompt > 0 {
		c.prompt.Add(uint64(prompt))
	}
	if cached > 0 {
		c.engine.Add(uint64(cached))
	}
}

// WorkerStats is one worker's event-stream health and cache counters, for metrics.
type WorkerStats struct {
	URL string
	// Subscribed: the worker has a subscription (the stream fields below are set).
	Subscribed, Connected, Stalled bool
	LagSeconds                     float64
	Gaps, Resets, DecodeErrors     uint64
	HasSeq                         bool
	LastSeq                        uint64
	// PredictedCached, EngineCached and EnginePrompt are token counters since start.
	PredictedCached, EngineCached, EnginePrompt uint64
	// Speculative counts the worker's speculative entries by outcome.
	Speculative SpecCounts
}

// Stats lists every worker with a subscription or cache counters, by URL.
func (r *Router) Stats() []WorkerStats {
	byURL := map[string]*WorkerStats{}
	get := func(url string) *WorkerStats {
		if s := byURL[url]; s != nil {
			return s
		}
		s := &WorkerStats{URL: url}
		byURL[url] = s
		return s
	}
	r.mu.Lock()
	subs := make(map[string]*sub, len(r.subs))
	for u, s := range r.subs {
		subs[u] = s
	}
	r.mu.Unlock()
	for u, s := range subs {
		h := s.g.Health()
		w := get(u)
		w.Subscribed, w.Connected, w.Stalled = true, h.Connected, r.Stalled(u)
		w.LagSeconds, w.Gaps, w.Resets, w.DecodeErrors = h.Lag.Seconds(), h.Gaps, h.Resets, h.DecodeErrors
		w.HasSeq, w.LastSeq = h.HasSeq, h.LastSeq
	}
	r.cache.m.Range(func(k, v any) bool {
		c, w := v.(*cacheCounts), get(k.(string))
		w.PredictedCached, w.EngineCached, w.EnginePrompt = c.predicted.Load(), c.engine.Load(), c.prompt.Load()
		return true
	})
	for u, c := range r.spec.stats() {
		get(u).Speculative = c
	}
	out := make([]WorkerStats, 0, len(byURL))
	for _, s := range byURL {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	return out
}
