package policy_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/wire"
)

// fakeKV is a policy.KVPrefixes with fixed liveness and matches; it records speculations.
type fakeKV struct {
	mu      sync.Mutex
	live    map[string]bool
	matched map[string]int
	spec    []string
}

func (f *fakeKV) Live(url string) bool { return f.live[url] }

func (f *fakeKV) Matched(string, []uint32) map[string]int { return f.matched }

func (f *fakeKV) Speculate(url, _ string, _ []uint32) {
	f.mu.Lock()
	f.spec = append(f.spec, url)
	f.mu.Unlock()
}

func ids(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(i + 1)
	}
	return out
}

func TestCacheAwareKVEventsSendAPromptToTheWorkerHoldingItsPrefix(t *testing.T) {
	t.Parallel()
	ws := workers(3)
	kv := &fakeKV{live: map[string]bool{ws[0].URL: true, ws[1].URL: true, ws[2].URL: true},
		matched: map[string]int{ws[2].URL: 64}}
	p, rec := cacheAware(t, func(o *policy.Options) { o.KVPrefixes = kv })
	setLoad(ws[2], 1) // a full match outweighs one in-flight request (weight 4)
	got := p.Select(ws, &policy.Request{Model: "m", Text: "hello", TokenIDs: ids(64)})
	assert.Equal(t, 2, got)
	assert.Equal(t, []string{ws[2].URL}, kv.spec, "the routed worker gets a speculative entry")
	assert.Equal(t, 1, rec.count(wire.PolicyCacheAware, wire.BranchCacheHit))
}

func TestCacheAwareKVEventsLoadOutweighsAPartialMatch(t *testing.T) {
	t.Parallel()
	ws := workers(2)
	kv := &fakeKV{live: map[string]bool{ws[0].URL: true, ws[1].URL: true}, matched: map[string]int{ws[1].URL: 16}}
	p, _ := cacheAware(t, func(o *policy.Options) { o.KVPrefixes = kv })
	setLoad(ws[1], 2) // a quarter match is worth 1 request, less than 2 in flight
	assert.Equal(t, 0, p.Select(ws, &policy.Request{Model: "m", TokenIDs: ids(64)}))
}

func TestCacheAwareKVEventsKeepTheBalanceGate(t *testing.T) {
	t.Parallel()
	ws := workers(2)
	kv := &fakeKV{live: map[string]bool{ws[0].URL: true, ws[1].URL: true}, matched: map[string]int{ws[1].URL: 64}}
	p, rec := cacheAware(t, func(o *policy.Options) {
		o.KVPrefixes, o.KVOverlapWeight, o.BalanceAbsThreshold = kv, 100, 2
	})
	setLoad(ws[1], 6) // avg 3: 6 > 3 × 1.5 and 6 > 3 + 2
	assert.Equal(t, 0, p.Select(ws, &policy.Request{Model: "m", TokenIDs: ids(64)}))
	assert.Equal(t, 1, rec.count(wire.PolicyCacheAware, wire.BranchCacheSpill))
}

func TestCacheAwareKVEventsWorkersWithoutEventsUseTheTree(t *testing.T) {
	t.Parallel()
	ws := workers(2)
	kv := &fakeKV{live: map[string]bool{ws[1].URL: true}, matched: map[string]int{}}
	p, _ := cacheAware(t, func(o *policy.Options) { o.KVPrefixes = kv })
	prompt := text(1, 400)
	// No token ids: the approximate path records worker 0 for the text (min load, index).
	require.Equal(t, 0, p.Select(ws, &policy.Request{Model: "m", Text: prompt}))
	// Worker 0 now has a request in flight but the tree says it holds the prompt; worker 1's
	// events say it holds nothing.
	setLoad(ws[0], 1)
	got := p.Select(ws, &policy.Request{Model: "m", Text: prompt, TokenIDs: ids(64)})
	assert.Equal(t, 0, got)
	assert.Empty(t, kv.spec, "no speculative entry for a worker without events")
}

func TestCacheAwareKVEventsNotLiveFallsBackToTheTree(t *testing.T) {
	t.Parallel()
	ws := workers(2)
	kv := &fakeKV{live: map[string]bool{}, matched: map[string]int{ws[1].URL: 64}}
	p, _ := cacheAware(t, func(o *policy.Options) { o.KVPrefixes = kv })
	assert.Equal(t, 0, p.Select(ws, &policy.Request{Model: "m", TokenIDs: ids(64)}),
		"a match from a stream that is not live is not trusted")
}

func TestKVOverlapWeightIsValidated(t *testing.T) {
	t.Parallel()
	o := policy.DefaultOptions()
	o.KVOverlapWeight = -1
	require.ErrorContains(t, o.Validate(), "--kv-overlap-weight")
}
