package policy_test

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// text returns n pseudo-random lowercase letters from seed.
func text(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return string(b)
}

func cacheAware(t *testing.T, mut func(*policy.Options)) (*policy.CacheAware, *recorder) {
	t.Helper()
	rec := newRecorder()
	o := policy.DefaultOptions()
	o.Observer = rec
	if mut != nil {
		mut(&o)
	}
	p := mustNew(t, "cache_aware", policy.LegPrefill, o)
	ca, ok := p.(*policy.CacheAware)
	require.True(t, ok)
	return ca, rec
}

func TestCacheAwareKeepsARepeatedPrefixOnOneWorkerWhileBalanced(t *testing.T) {
	t.Parallel()
	p, rec := cacheAware(t, nil)
	ws := workers(4)
	system := text(1, 2000)
	first := -1
	for i := range 20 {
		req := &policy.Request{Model: "m", Text: system + text(uint64(100+i), 200)}
		got := p.Select(ws, req)
		ws[got].Acquire() // the caller accounts every pick
		if first < 0 {
			first = got
		}
		require.Equal(t, first, got, "request %d left the cached worker", i)
	}
	assert.EqualValues(t, 20, ws[first].Load())
	assert.Equal(t, 19, rec.count("cache_aware", "cache_hit"))
	assert.Equal(t, 1, rec.count("cache_aware", "cache_miss"))

	other := p.Select(ws, &policy.Request{Model: "m", Text: text(2, 2000)})
	assert.NotEqual(t, first, other, "an unrelated prompt goes to a less loaded worker")
}

func TestCacheAwareSpillGate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		loads  [4]int // worker 0 holds the prefix
		want   int
		branch string
	}{
		{"balanced stays", [4]int{3, 0, 0, 0}, 0, "cache_hit"},
		{"abs and rel crossed spill to min-load", [4]int{100, 0, 0, 0}, 1, "cache_spill"},
		{"rel crossed but not abs stays", [4]int{80, 0, 0, 0}, 0, "cache_hit"},        // avg 20: 80 > 30, 80 <= 84
		{"abs crossed but not rel stays", [4]int{300, 250, 250, 250}, 0, "cache_hit"}, // avg 262.5: 300 <= 393.75
		{"both crossed at high load", [4]int{200, 100, 100, 100}, 1, "cache_spill"},   // avg 125: 200 > 187.5, 200 > 189
		{"spill picks the least loaded", [4]int{200, 40, 30, 90}, 2, "cache_spill"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, rec := cacheAware(t, nil)
			ws := workers(4)
			prefix := text(3, 3000)
			require.Equal(t, 0, p.Select(ws, &policy.Request{Model: "m", Text: prefix}), "idle tie goes to index 0")
			for i, l := range tc.loads {
				setLoad(ws[i], l)
			}
			assert.Equal(t, tc.want, p.Select(ws, &policy.Request{Model: "m", Text: prefix + "tail"}))
			assert.Equal(t, 1, rec.count("cache_aware", tc.branch))
		})
	}
}

func TestCacheAwareMatchThresholdIsStrict(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		shared    int // of 1000 chars
		threshold float64
		want      int
	}{
		{"25% shared is a miss at 0.3", 250, 0.3, 1},
		{"40% shared is a hit at 0.3", 400, 0.3, 0},
		{"exactly the threshold is a miss", 300, 0.3, 1},
		{"threshold 0 keeps any overlap", 10, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, _ := cacheAware(t, func(o *policy.Options) { o.CacheThreshold = tc.threshold })
			ws := workers(4)
			base := strings.Repeat("A", 1000)
			require.Equal(t, 0, p.Select(ws, &policy.Request{Model: "m", Text: base}))
			// min-load tie-break is (load, picks made, index): worker 0 has one pick, so a miss goes to 1
			probe := base[:tc.shared] + strings.Repeat("B", 1000-tc.shared)
			assert.Equal(t, tc.want, p.Select(ws, &policy.Request{Model: "m", Text: probe}))
		})
	}
}

func TestCacheAwareFollowsTheCachedWorkerAmongCandidates(t *testing.T) {
	t.Parallel()
	p, _ := cacheAware(t, nil)
	ws := workers(4)
	prefix := text(4, 1500)
	require.Equal(t, 0, p.Select(ws, &policy.Request{Model: "m", Text: prefix}))
	p.Select(ws, &policy.Request{Model: "m", Text: text(5, 1500)}) // worker 1 gets another prompt
	// The cached worker appears at another index in a reordered candidate list.
	reordered := []*worker.Live{ws[3], ws[1], ws[0]}
	assert.Equal(t, 2, p.Select(reordered, &policy.Request{Model: "m", Text: prefix + "x"}))
	// Without the cached worker among the candidates, the pick is min-load, not a failure.
	setLoad(ws[2], 1)
	assert.Equal(t, 1, p.Select([]*worker.Live{ws[2], ws[3]}, &policy.Request{Model: "m", Text: prefix + "y"}))
}

func TestCacheAwareEvictionBoundsEachWorkersShare(t *testing.T) {
	t.Parallel()
	const maxSize = 10_000
	p, rec := cacheAware(t, func(o *policy.Options) { o.MaxTreeSize = maxSize })
	ws := workers(4)
	var prompts []string
	for i := range 200 { // 200 × 500 bytes over 4 workers: 25,000 bytes each
		prompts = append(prompts, text(uint64(1000+i), 500))
		p.Select(ws, &policy.Request{Model: "m", Text: prompts[i]})
	}
	before := p.TreeSizes()["m"]
	require.Greater(t, before, 4*maxSize)

	p.Evict()
	after := p.TreeSizes()["m"]
	assert.LessOrEqual(t, after, 4*maxSize, "every tenant trimmed to max_tree_size")
	assert.Greater(t, after, 4*maxSize-4*500, "eviction stops as soon as a tenant fits")
	assert.Equal(t, map[string]int{"m": after}, rec.trees, "tree size reported to the observer")

	// The newest prompt survived and still hits its worker; the oldest was evicted.
	last := prompts[len(prompts)-1]
	hits := rec.count("cache_aware", "cache_hit")
	p.Select(ws, &policy.Request{Model: "m", Text: last})
	assert.Equal(t, hits+1, rec.count("cache_aware", "cache_hit"))
	misses := rec.count("cache_aware", "cache_miss")
	p.Select(ws, &policy.Request{Model: "m", Text: prompts[0]})
	assert.Equal(t, misses+1, rec.count("cache_aware", "cache_miss"))
}

func TestCacheAwareEvictionKeepsRecentlyUsedSharedPrefixes(t *testing.T) {
	t.Parallel()
	p, _ := cacheAware(t, func(o *policy.Options) { o.MaxTreeSize = 3000 })
	ws := workers(1)
	hot := text(6, 1000)
	for i := range 20 {
		p.Select(ws, &policy.Request{Model: "m", Text: text(uint64(2000+i), 400)})
		p.Select(ws, &policy.Request{Model: "m", Text: hot + text(uint64(3000+i), 50)})
	}
	p.Evict()
	size := p.TreeSizes()["m"]
	assert.LessOrEqual(t, size, 3000)
	assert.GreaterOrEqual(t, size, 1000, "the hot shared prefix is kept")
}

func TestCacheAwareRemoveWorkerPurgesItsEntries(t *testing.T) {
	t.Parallel()
	p, rec := cacheAware(t, nil)
	ws := workers(2)
	prefix := text(7, 800)
	require.Equal(t, 0, p.Select(ws, &policy.Request{Model: "m", Text: prefix}))
	require.Equal(t, 1, p.Select(ws, &policy.Request{Model: "m", Text: text(8, 400)}))
	p.RemoveWorker(ws[0].URL)
	assert.Equal(t, map[string]int{"m": 400}, p.TreeSizes())
	assert.Equal(t, 400, rec.trees["m"])
	// worker 0 comes back: its old prefix is no longer credited to it
	misses := rec.count("cache_aware", "cache_miss")
	p.Select(ws, &policy.Request{Model: "m", Text: prefix})
	assert.Equal(t, misses+1, rec.count("cache_aware", "cache_miss"))
}

func TestCacheAwareKeepsOneTreePerRegisteredModel(t *testing.T) {
	t.Parallel()
	p, _ := cacheAware(t, nil)
	ws := workers(2) // serve "m" only
	p.Select(ws, &policy.Request{Model: "m", Text: "abc"})
	p.Select(ws, &policy.Request{Model: "client-invented-1", Text: "defg"})
	p.Select(ws, &policy.Request{Model: "client-invented-2", Text: "hi"})
	p.Select(ws, &policy.Request{Text: "j"})
	assert.Equal(t, map[string]int{"m": 3, "unknown": 7}, p.TreeSizes())
}

func TestCacheAwareIsRaceFreeUnderConcurrentSelectAndEvict(t *testing.T) {
	t.Parallel()
	p, _ := cacheAware(t, func(o *policy.Options) { o.MaxTreeSize = 5000 })
	ws := workers(4)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				i := p.Select(ws, &policy.Request{Model: "m", Text: text(uint64(g%3), 300) + text(uint64(g*1000+i), 100)})
				assert.True(t, i >= 0 && i < 4)
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			p.Evict()
		}
	})
	wg.Go(func() { p.RemoveWorker(ws[3].URL) })
	wg.Wait()
	p.Evict()
	assert.LessOrEqual(t, p.TreeSizes()["m"], 4*5000)
}

// Under sustained traffic with no Evict call (a long --eviction-interval), a worker's share
// past 1.25 × MaxTreeSize starts an eviction pass in the background: the tree stays bounded,
// and a prefix used all along survives it.
func TestCacheAwareTreeStaysBoundedBetweenEvictCalls(t *testing.T) {
	t.Parallel()
	const maxSize = 20_000
	p, rec := cacheAware(t, func(o *policy.Options) { o.MaxTreeSize = maxSize })
	ws := workers(1)
	hot := text(9, 2000)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 250 { // 4 × 250 × 500 bytes = 500,000 bytes, 25 × the bound
				p.Select(ws, &policy.Request{Model: "m", Text: text(uint64(10_000+g*1000+i), 500)})
				if i%10 == 0 {
					p.Select(ws, &policy.Request{Model: "m", Text: hot + text(uint64(20_000+g*1000+i), 20)})
				}
			}
		})
	}
	wg.Wait()
	bound := maxSize + maxSize/4
	require.Eventually(t, func() bool { return p.TreeSizes()["m"] <= bound }, 10*time.Second, 10*time.Millisecond,
		"tree at %d chars, bound %d", p.TreeSizes()["m"], bound)
	rec.mu.Lock()
	reported := rec.trees["m"]
	rec.mu.Unlock()
	assert.Positive(t, reported, "the background pass reports the tree size")

	hits := rec.count("cache_aware", "cache_hit")
	p.Select(ws, &policy.Request{Model: "m", Text: hot + "tail"})
	assert.Equal(t, hits+1, rec.count("cache_aware", "cache_hit"), "the hot prefix survived the passes")
}
