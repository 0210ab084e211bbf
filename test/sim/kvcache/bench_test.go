package kvcache_test

import (
	"context"
	"testing"

	"github.com/smg-go/smg/test/sim/kvcache"
)

// BenchmarkAcquire32k measures one 32k-token prompt against a warm cache: hashing the
// prompt, matching every block, holding and releasing them (block sizes 16 and 1).
func BenchmarkAcquire32k(b *testing.B) {
	for _, bs := range []int{16, 1} {
		b.Run("block="+itoa(bs), func(b *testing.B) {
			c, _ := kvcache.New(kvcache.Config{BlockSize: bs, Blocks: 1 << 17})
			ids := seq(1, 32768)
			l, _ := c.Acquire(context.Background(), ids, 0)
			l.Commit()
			l.Release()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				l, err := c.Acquire(context.Background(), ids, 0)
				if err != nil {
					b.Fatal(err)
				}
				l.Commit()
				l.Release()
			}
		})
	}
}

// BenchmarkInsert32k measures a cold 32k-token prompt: every block is new and committed,
// and an equal number is evicted (the cache is full of other prompts).
func BenchmarkInsert32k(b *testing.B) {
	for _, bs := range []int{16, 1} {
		b.Run("block="+itoa(bs), func(b *testing.B) {
			c, _ := kvcache.New(kvcache.Config{BlockSize: bs, Blocks: 2 * 32768 / bs})
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				ids := seq(i*40000, 32768)
				l, err := c.Acquire(context.Background(), ids, 0)
				if err != nil {
					b.Fatal(err)
				}
				l.Commit()
				l.Release()
			}
		})
	}
}

// BenchmarkBlockHashes32k is the hashing alone.
func BenchmarkBlockHashes32k(b *testing.B) {
	ids := seq(1, 32768)
	dst := make([]uint64, 0, 32768)
	b.SetBytes(4 * 32768)
	for b.Loop() {
		dst = kvcache.BlockHashes(dst, ids, 16, 0)
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
