package policy_test

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/smg-go/smg/domain/policy"
)

// rssMiB returns the process's resident set (VmRSS) in MiB, or -1 where /proc is missing.
func rssMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if f := bytes.Fields(l); len(f) >= 2 && string(f[0]) == "VmRSS:" {
			kb, _ := strconv.ParseFloat(string(f[1]), 64)
			return kb / 1024
		}
	}
	return -1
}

// BenchmarkCacheAwareTreeMemory routes distinct English-like chat prompts (promptGen: 32
// system prompts of 0.4-1.6 KB, half the prompts continuing an earlier conversation) through
// cache_aware with --max-tree-size 16,777,216 over idle workers, calling Evict every 20,000
// prompts as the --eviction-interval loop would under sustained traffic, then reports the
// tree's characters, the live heap and the off-heap text arena it takes, their sum per
// cached character (B/char), the process's RSS and the time per pick. It takes minutes, so it runs only with SMG_TREE_MEMORY_BENCH=1
// (`make bench-tree` runs each case in its own process, for a clean RSS).
func BenchmarkCacheAwareTreeMemory(b *testing.B) {
	if os.Getenv("SMG_TREE_MEMORY_BENCH") == "" {
		b.Skip("minutes per case: set SMG_TREE_MEMORY_BENCH=1 (make bench-tree)")
	}
	for _, w := range []int{1, 4} {
		for _, n := range []int{100_000, 1_000_000} {
			b.Run(fmt.Sprintf("workers=%d/prompts=%d", w, n), func(b *testing.B) {
				for b.Loop() {
					treeMemory(b, w, n)
				}
			})
		}
	}
}

func treeMemory(b *testing.B, nw, prompts int) {
	o := policy.DefaultOptions()
	o.MaxTreeSize = 16 << 20
	gen := newPromptGen(42, 32)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p := mustNew(b, "cache_aware", policy.LegPrefill, o).(*policy.CacheAware)
	ws := workers(nw)
	var pick time.Duration
	var textBytes int
	for i := range prompts {
		req := &policy.Request{Model: "m", Text: gen.next()}
		textBytes += len(req.Text)
		start := time.Now()
		p.Select(ws, req)
		pick += time.Since(start)
		if i%20_000 == 19_999 {
			p.Evict()
		}
	}
	p.Evict()
	runtime.GC()
	runtime.ReadMemStats(&after)
	chars := p.TreeSizes()["m"]
	heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	arena := float64(policy.TreeArenaBytes(p))
	b.ReportMetric(float64(chars), "chars")
	b.ReportMetric(heap/(1<<20), "heap-MiB")
	b.ReportMetric(arena/(1<<20), "arena-MiB")
	b.ReportMetric((heap+arena)/float64(chars), "B/char")
	b.ReportMetric(rssMiB(), "RSS-MiB")
	b.ReportMetric(float64(after.Sys)/(1<<20), "go-sys-MiB")
	b.ReportMetric(float64(pick.Nanoseconds())/float64(prompts), "ns/pick")
	b.ReportMetric(float64(textBytes)/float64(prompts), "B/prompt")
	runtime.KeepAlive(p)
}
