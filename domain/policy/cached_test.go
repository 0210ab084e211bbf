package policy_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/policy"
)

func TestCacheAwareCachedTokensFromTheApproximateTree(t *testing.T) {
	t.Parallel()
	p, _ := cacheAware(t, nil)
	ws := workers(2)
	first := strings.Repeat("a", 300) + strings.Repeat("b", 100) // 400 bytes
	// One worker alone: it gets the text.
	assert.Equal(t, 0, p.Select(ws[:1], &policy.Request{Model: "m", Text: first}))

	out := make([]int, 2)
	next := strings.Repeat("a", 300) + strings.Repeat("c", 100) // shares 300 of 400 bytes
	req := &policy.Request{Model: "m", Text: next}
	p.CachedTokens(req, ws, 100, out)
	assert.Equal(t, []int{75, 0}, out, "3/4 of the text on the worker that served it, nothing on the other")

	p.CachedTokens(req, ws, 100, out)
	assert.Equal(t, []int{75, 0}, out, "the query inserts nothing")
	p.CachedTokens(&policy.Request{Model: "m", Text: first}, ws, 40, out)
	assert.Equal(t, []int{40, 0}, out, "the whole prompt")
}

func TestCacheAwareCachedTokensFromKVEventsForLiveWorkers(t *testing.T) {
	t.Parallel()
	ws := workers(3)
	kv := &fakeKV{live: map[string]bool{ws[0].URL: true, ws[1].URL: true},
		matched: map[string]int{ws[0].URL: 48, ws[1].URL: 500}}
	p, _ := cacheAware(t, func(o *policy.Options) { o.KVPrefixes = kv })
	out := make([]int, 3)
	p.CachedTokens(&policy.Request{Model: "m", TokenIDs: ids(64)}, ws, 64, out)
	assert.Equal(t, []int{48, 64, 0}, out, "matched tokens, capped at the prompt; a worker without live events has no tree entry")
	assert.Empty(t, kv.spec, "nothing speculated")
}
