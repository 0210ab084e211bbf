package policy_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/smg-go/smg/domain/policy"
)

// BenchmarkSelect measures one pick over 16 idle workers per policy, with a 1 KB text from
// a pool of 64 prompts and a routing key from a pool of 1000.
func BenchmarkSelect(b *testing.B) {
	reqs := make([]*policy.Request, 1000)
	for i := range reqs {
		reqs[i] = &policy.Request{Model: "m", Text: text(uint64(i%64), 1024), RoutingKey: fmt.Sprintf("key-%d", i)}
	}
	for _, name := range policy.Names() {
		b.Run(name, func(b *testing.B) {
			o := policy.DefaultOptions()
			o.Sticky = newFakeStore()
			p := mustNew(b, name, policy.LegPrefill, o)
			ws := workers(16)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				p.Select(ws, reqs[i%len(reqs)])
				i++
			}
		})
	}
}

// cacheFixture returns a cache_aware instance over 16 workers whose "m" tree holds 100,000
// prompts: one of 64 2 KB system prompts plus a unique 200-byte tail each (~20 MB of text).
func cacheFixture(b *testing.B) (policy.Policy, []string) {
	b.Helper()
	p := mustNew(b, "cache_aware", policy.LegPrefill, policy.DefaultOptions())
	ws := workers(16)
	systems := make([]string, 64)
	for i := range systems {
		systems[i] = text(uint64(i), 2048)
	}
	for i := range 100_000 {
		p.Select(ws, &policy.Request{Model: "m", Text: systems[i%64] + text(uint64(1_000_000+i), 200)})
	}
	return p, systems
}

// BenchmarkCacheAwareSelect4KB is one cache_aware pick for a 4 KB prompt against a tree of
// 100,000 entries: "hit" shares a 2 KB system prompt with the tree (the 2 KB tail is new the
// first time, then repeats from a pool of 1000), "miss" shares nothing.
func BenchmarkCacheAwareSelect4KB(b *testing.B) {
	p, systems := cacheFixture(b)
	ws := workers(16)
	hit := make([]*policy.Request, 1000)
	miss := make([]*policy.Request, 1000)
	for i := range hit {
		hit[i] = &policy.Request{Model: "m", Text: systems[i%64] + text(uint64(2_000_000+i), 2048)}
		miss[i] = &policy.Request{Model: "m", Text: "#" + text(uint64(3_000_000+i), 4095)}
	}
	for _, bc := range []struct {
		name string
		reqs []*policy.Request
	}{{"hit", hit}, {"miss", miss}} {
		b.Run(bc.name, func(b *testing.B) {
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				p.Select(ws, bc.reqs[i%len(bc.reqs)])
				i++
			}
		})
	}
}

// BenchmarkCacheAwareMemoryAtMaxTreeSize fills one worker's share of a tree past
// --max-tree-size (default 67,108,864 chars) with prompts made of a system prompt from a pool
// of 64 plus a unique tail (4 KB prompts: 2 KB + 2 KB; short prompts: 64 B + 192 B), runs
// Evict, and reports the live heap and the off-heap text arena of the trimmed tree, their
// sum per stored char, and how long the whole Evict pass took (it holds the tree lock in
// batches of a few ms). Run with -benchtime=1x.
func BenchmarkCacheAwareMemoryAtMaxTreeSize(b *testing.B) {
	cases := []struct {
		name         string
		maxSize      int
		system, tail int
	}{
		{"4KB-prompts/max=4194304", 1 << 22, 2048, 2048},
		{"4KB-prompts/max=67108864", policy.DefaultOptions().MaxTreeSize, 2048, 2048},
		{"256B-prompts/max=67108864", policy.DefaultOptions().MaxTreeSize, 64, 192},
	}
	for _, bc := range cases {
		maxSize := bc.maxSize
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				o := policy.DefaultOptions()
				o.MaxTreeSize = maxSize
				systems := make([]string, 64)
				for i := range systems {
					systems[i] = text(uint64(i), bc.system)
				}
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				p := mustNew(b, "cache_aware", policy.LegPrefill, o).(*policy.CacheAware)
				ws := workers(1)
				// past the bound, below the 1.25 × mark where a pick starts a background pass
				for i := 0; p.TreeSizes()["m"] < maxSize+maxSize/8; i++ {
					for j := range 256 { // check the size every 256 inserts
						k := i*256 + j
						p.Select(ws, &policy.Request{Model: "m", Text: systems[k%64] + text(uint64(k), bc.tail)})
					}
				}
				start := time.Now()
				p.Evict()
				evict := time.Since(start)
				runtime.GC()
				runtime.ReadMemStats(&after)
				chars := p.TreeSizes()["m"]
				heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
				arena := float64(policy.TreeArenaBytes(p))
				b.ReportMetric(float64(chars), "chars")
				b.ReportMetric(heap/(1<<20), "heap-MiB")
				b.ReportMetric(arena/(1<<20), "arena-MiB")
				b.ReportMetric((heap+arena)/float64(chars), "B/char")
				b.ReportMetric(float64(evict.Milliseconds()), "evict-total-ms")
				runtime.KeepAlive(p)
			}
		})
	}
}
