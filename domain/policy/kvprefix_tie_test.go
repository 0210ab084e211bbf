package policy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/policy"
)

// prompt returns n token ids starting at from.
func prompt(from, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(from + i)
	}
	return out
}

// Two gateway replicas with different histories (one has made many picks, so its own
// min-load order differs) send a cold prompt to the same worker: the tie between
// equal-cost candidates is broken by the prompt and the worker URL alone.
func TestCacheAwareKVEventsTieIsTheSameOnEveryReplica(t *testing.T) {
	t.Parallel()
	ws := workers(4)
	live := map[string]bool{}
	for _, w := range ws {
		live[w.URL] = true
	}
	a, _ := cacheAware(t, func(o *policy.Options) { o.KVPrefixes = &fakeKV{live: live, matched: map[string]int{}} })
	b, _ := cacheAware(t, func(o *policy.Options) { o.KVPrefixes = &fakeKV{live: live, matched: map[string]int{}} })
	for i := range 7 { // replica b has routed other prompts before
		b.Select(ws, &policy.Request{Model: "m", TokenIDs: prompt(10_000+i*100, 64)})
	}
	spread := map[int]int{}
	for i := range 64 {
		req := &policy.Request{Model: "m", TokenIDs: prompt(i*1000, 200)}
		ga, gb := a.Select(ws, req), b.Select(ws, req)
		require.Equal(t, ga, gb, "prompt %d: replicas disagree", i)
		spread[ga]++
	}
	assert.Len(t, spread, 4, "different prompts spread over the tied workers: %v", spread)
	for w, n := range spread {
		assert.GreaterOrEqual(t, n, 4, "worker %d got %d of 64 cold prompts", w, n)
	}
}

// The key covers the prompt's first policy.TieTokens tokens: two prompts sharing them (one
// document, two questions) tie to the same worker; the load still decides before the tie.
func TestCacheAwareKVEventsTieKeysOnThePromptHead(t *testing.T) {
	t.Parallel()
	ws := workers(4)
	live := map[string]bool{}
	for _, w := range ws {
		live[w.URL] = true
	}
	p, _ := cacheAware(t, func(o *policy.Options) { o.KVPrefixes = &fakeKV{live: live, matched: map[string]int{}} })
	doc := prompt(5, policy.TieTokens)
	q1 := append(append([]uint32{}, doc...), prompt(90_000, 30)...)
	q2 := append(append([]uint32{}, doc...), prompt(70_000, 50)...)
	first := p.Select(ws, &policy.Request{Model: "m", TokenIDs: q1})
	assert.Equal(t, first, p.Select(ws, &policy.Request{Model: "m", TokenIDs: q2}))
	setLoad(ws[first], 1)
	assert.NotEqual(t, first, p.Select(ws, &policy.Request{Model: "m", TokenIDs: q2}), "a busier worker is not a tie")
}

// With --load-metric tokens the KV cost is the prefill work in tokens: a worker holding
// half of a prompt (the system prompt every conversation shares) loses it to an idle worker
// once it has more than that half in flight, where the request count (1 in flight against a
// half match worth 2) kept sending it everything; a prompt it holds 90 % of stays.
func TestCacheAwareKVEventsTokenCostSpreadsASharedPrefix(t *testing.T) {
	t.Parallel()
	ws := workers(2)
	live := map[string]bool{ws[0].URL: true, ws[1].URL: true}
	byTokens, _ := cacheAware(t, func(o *policy.Options) {
		o.KVPrefixes, o.LoadMetric = &fakeKV{live: live, matched: map[string]int{ws[0].URL: 50}}, policy.LoadTokens
	})
	byRequests, _ := cacheAware(t, func(o *policy.Options) {
		o.KVPrefixes = &fakeKV{live: live, matched: map[string]int{ws[0].URL: 50}}
	})
	setLoad(ws[0], 1)
	ws[0].HoldTokens(60, 0)
	req := &policy.Request{Model: "m", TokenIDs: prompt(1, 100)}
	assert.Equal(t, 0, byRequests.Select(ws, req), "requests: 1 in flight − 4 × 0.5 beats 0")
	assert.Equal(t, 1, byTokens.Select(ws, req), "tokens: 60 in flight + 50 to compute > 100")

	mostly, _ := cacheAware(t, func(o *policy.Options) {
		o.KVPrefixes, o.LoadMetric = &fakeKV{live: live, matched: map[string]int{ws[0].URL: 90}}, policy.LoadTokens
	})
	assert.Equal(t, 0, mostly.Select(ws, req), "tokens: 60 + 10 < 100")
}
