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
