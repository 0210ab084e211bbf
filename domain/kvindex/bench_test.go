package kvindex_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"syscall"
	"testing"

	"github.com/smg-go/smg/domain/kvevent"
	"github.com/smg-go/smg/domain/kvindex"
)

// The benchmark fleet: 8 workers × 100k blocks of 16 tokens (800k entries); every worker
// holds one shared 32k-token prompt (2048 blocks), the rest are unique 64-block chains.
const (
	benchWorkers   = 8
	benchBlocks    = 100_000
	benchBlockSize = 16
	benchPrompt    = 32 * 1024
)

var (
	benchOnce   sync.Once
	benchIndex  *kvindex.Index
	benchShared []uint32
)

func benchChain(tokens []uint32, base uint64) kvevent.Event {
	ev := kvevent.Event{Kind: kvevent.Stored, BlockSize: benchBlockSize}
	for i := 0; i+benchBlockSize <= len(tokens); i += benchBlockSize {
		ev.Blocks = append(ev.Blocks, kvevent.Block{EngineHash: base + uint64(i/benchBlockSize), Tokens: tokens[i : i+benchBlockSize]})
	}
	return ev
}

func randTokens(r *rand.Rand, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = r.Uint32N(150_000)
	}
	return out
}

func benchSetup(b *testing.B) *kvindex.Index {
	benchOnce.Do(func() {
		r := rand.New(rand.NewPCG(1, 2))
		benchShared = randTokens(r, benchPrompt)
		benchIndex = kvindex.New(kvindex.Options{MaxBlocks: 2 * benchWorkers * benchBlocks})
		for w := 0; w < benchWorkers; w++ {
			id := fmt.Sprintf("worker-%d", w)
			base := uint64(w) << 40
			benchIndex.Apply(id, "m", benchChain(benchShared, base))
			for n := benchPrompt / benchBlockSize; n < benchBlocks; n += 64 {
				base += 1 << 20
				benchIndex.Apply(id, "m", benchChain(randTokens(r, 64*benchBlockSize), base))
			}
		}
	})
	b.ResetTimer()
	return benchIndex
}

// cpuTimer reports cpu-ns/op, the process's user+system CPU time per iteration: on a
// shared machine wall time per op includes waiting for a core, CPU time does not.
func cpuTimer(b *testing.B) func() {
	start := cpuNow()
	return func() { b.ReportMetric(float64(cpuNow()-start)/float64(b.N), "cpu-ns/op") }
}

func cpuNow() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkMatch32kFullHit: every worker holds the whole prompt, the worst case (2048
// hashes and lookups, 8 holders each).
func BenchmarkMatch32kFullHit(b *testing.B) {
	x := benchSetup(b)
	b.ReportAllocs()
	defer cpuTimer(b)()
	for b.Loop() {
		if m := x.Match("m", benchShared); m["worker-0"].Blocks != benchPrompt/benchBlockSize {
			b.Fatalf("matched %d blocks", m["worker-0"].Blocks)
		}
	}
}

// BenchmarkMatch32kHalfHit: the prompt shares its first 16k tokens with the cached one.
func BenchmarkMatch32kHalfHit(b *testing.B) {
	x := benchSetup(b)
	prompt := append(append([]uint32{}, benchShared[:benchPrompt/2]...), randTokens(rand.New(rand.NewPCG(3, 4)), benchPrompt/2)...)
	b.ReportAllocs()
	defer cpuTimer(b)()
	for b.Loop() {
		if m := x.Match("m", prompt); m["worker-0"].Blocks != benchPrompt/2/benchBlockSize {
			b.Fatalf("matched %d blocks", m["worker-0"].Blocks)
		}
	}
}

// BenchmarkMatch32kMiss: no worker holds the first block.
func BenchmarkMatch32kMiss(b *testing.B) {
	x := benchSetup(b)
	prompt := randTokens(rand.New(rand.NewPCG(5, 6)), benchPrompt)
	b.ReportAllocs()
	defer cpuTimer(b)()
	for b.Loop() {
		if m := x.Match("m", prompt); len(m) != 0 {
			b.Fatal("unexpected match")
		}
	}
}

// BenchmarkApplyStoreRemove: one 16-block store then its removal, on the loaded index.
func BenchmarkApplyStoreRemove(b *testing.B) {
	x := benchSetup(b)
	tokens := randTokens(rand.New(rand.NewPCG(7, 8)), 16*benchBlockSize)
	ev := benchChain(tokens, 1<<60)
	rm := kvevent.Event{Kind: kvevent.Removed}
	for _, blk := range ev.Blocks {
		rm.Removed = append(rm.Removed, blk.EngineHash)
	}
	b.ReportAllocs()
	defer cpuTimer(b)()
	for b.Loop() {
		x.Apply("worker-0", "m", ev)
		x.Apply("worker-0", "m", rm)
	}
}

// BenchmarkMemoryPerEntry reports the live heap per (worker, block) entry of an index
// holding 8 workers × 20k distinct blocks of 16 tokens.
func BenchmarkMemoryPerEntry(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	chains := make([][]uint32, 20_000/64)
	for i := range chains {
		chains[i] = randTokens(r, 64*benchBlockSize)
	}
	var perEntry float64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		x := kvindex.New(kvindex.Options{})
		for w := 0; w < benchWorkers; w++ {
			for i, c := range chains {
				ev := benchChain(c, uint64(w)<<40|uint64(i)<<20)
				ev.Blocks[0].Tokens = append([]uint32{uint32(w)}, c[1:benchBlockSize]...) // distinct per worker
				x.Apply(fmt.Sprint("worker-", w), "m", ev)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perEntry = float64(after.HeapAlloc-before.HeapAlloc) / float64(x.Stats().Entries)
		runtime.KeepAlive(x)
	}
	b.ReportMetric(perEntry, "B/entry")
}
