package kvcache_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim/kvcache"
)

// recorder is a Sink that keeps every batch.
type recorder struct {
	mu  sync.Mutex
	evs []kvcache.Event
}

func (r *recorder) Publish(evs []kvcache.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, evs...)
}

func (r *recorder) take() []kvcache.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.evs
	r.evs = nil
	return out
}

// seq returns n token ids starting at from.
func seq(from, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(from + i)
	}
	return out
}

func cat(a, b []uint32) []uint32 { return append(append([]uint32(nil), a...), b...) }

func newCache(t *testing.T, bs, blocks int, sink kvcache.Sink) *kvcache.Cache {
	t.Helper()
	c, err := kvcache.New(kvcache.Config{BlockSize: bs, Blocks: blocks, Sink: sink})
	require.NoError(t, err)
	return c
}

// run acquires, commits and releases one prompt, returning its cached tokens.
func run(t *testing.T, c *kvcache.Cache, ids []uint32) int {
	t.Helper()
	l, err := c.Acquire(context.Background(), ids, 0)
	require.NoError(t, err)
	l.Commit()
	l.Release()
	return l.CachedTokens()
}

func TestSharedPrefixHitsAreBlockAlignedAndLeaveOneTokenToCompute(t *testing.T) {
	t.Parallel()
	c := newCache(t, 4, 100, nil)
	system := seq(1, 10) // 2 full blocks + 2 tokens
	assert.Equal(t, 0, run(t, c, cat(system, seq(100, 5))), "cold")
	assert.Equal(t, 8, run(t, c, cat(system, seq(200, 5))), "the system prompt's 2 full blocks hit; its tail block differs")
	assert.Equal(t, 12, run(t, c, cat(system, seq(100, 5))), "an exact repeat of 15 tokens: the 3 full blocks")
	exact := seq(500, 8)
	assert.Equal(t, 0, run(t, c, exact))
	assert.Equal(t, 4, run(t, c, exact), "8 tokens = 2 blocks, but one token is always computed: 1 block hits")
	assert.Equal(t, 0, run(t, c, seq(2, 9)), "a different first token shares nothing (hashes are chained)")
	st := c.Stats()
	assert.Equal(t, int64(15+15+15+8+8+9), st.PromptTokens)
	assert.Equal(t, int64(8+12+4), st.CachedTokens)
	assert.Zero(t, st.EvictedBlocks)
}

func TestLoRAKeysSeparateChains(t *testing.T) {
	t.Parallel()
	c := newCache(t, 2, 100, nil)
	ids := seq(1, 9)
	l, err := c.Acquire(context.Background(), ids, 7)
	require.NoError(t, err)
	l.Commit()
	l.Release()
	l, err = c.Acquire(context.Background(), ids, 0)
	require.NoError(t, err)
	assert.Zero(t, l.CachedTokens(), "the base model does not match an adapter's blocks")
	l.Release()
	l, err = c.Acquire(context.Background(), ids, 7)
	require.NoError(t, err)
	assert.Equal(t, 8, l.CachedTokens())
	l.Release()
}

func TestEvictionAtCapacityIsLRUTailFirst(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	c := newCache(t, 2, 6, rec)
	a, b := seq(10, 5), seq(20, 5) // 3 blocks each (2 full + a partial tail)
	run(t, c, a)
	run(t, c, b)
	assert.Equal(t, int64(4), c.Stats().BlocksUsed, "2 full blocks each stay cached; partial tails are freed")
	assert.Equal(t, 4, run(t, c, a), "a is used again: now the most recent")
	rec.take()
	// 3 more blocks with capacity 6 and 4 used: one block is evicted, the last block of b
	// (b is the least recently used prompt, and a prompt's tail goes first).
	d := seq(30, 6)
	run(t, c, d)
	hb := kvcache.BlockHashes(nil, b, 2, 0)
	evs := rec.take()
	require.NotEmpty(t, evs)
	require.NotNil(t, evs[0].Removed, "the eviction is published before the new blocks")
	assert.Equal(t, []uint64{hb[1]}, evs[0].Removed.BlockHashes)
	assert.Equal(t, int64(1), c.Stats().EvictedBlocks)
	assert.Equal(t, 4, run(t, c, a), "a was more recent than b: untouched")
	assert.Equal(t, int64(2), c.Stats().EvictedBlocks, "a's tail block took b's first block, next in LRU order")
	assert.Equal(t, 0, run(t, c, b))
}

func TestHeldBlocksAreNotEvictedAndAFullCacheMakesAcquireWait(t *testing.T) {
	t.Parallel()
	c := newCache(t, 2, 4, nil)
	long := seq(1, 8) // all 4 blocks
	l1, err := c.Acquire(context.Background(), long, 0)
	require.NoError(t, err)
	l1.Commit()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.Acquire(ctx, seq(100, 3), 0)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "every block is held: the request waits (it is not admitted)")

	got := make(chan int, 1)
	go func() {
		l, err := c.Acquire(context.Background(), seq(100, 3), 0)
		if err != nil {
			got <- -1
			return
		}
		n := l.Blocks()
		l.Release() // before the test goes on: a lease still held changes what it can evict
		got <- n
	}()
	select {
	case <-got:
		t.Fatal("admitted while every block is held")
	case <-time.After(20 * time.Millisecond):
	}
	l1.Release()
	select {
	case n := <-got:
		assert.Equal(t, 2, n, "admitted once the holder released")
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting Acquire was not woken by Release")
	}
	assert.Equal(t, 0, run(t, c, long[:2]), "1 block prompt: nothing to hit (one token is computed)")
	assert.Equal(t, 4, run(t, c, long[:5]), "long's first two blocks stayed cached (its tail blocks went first)")

	_, err = c.Acquire(context.Background(), seq(1, 9), 0)
	assert.ErrorIs(t, err, kvcache.ErrTooLarge)
}

func TestEventsInOrderWithParentsAndTokens(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	c := newCache(t, 2, 100, rec)
	p := seq(1, 5)
	run(t, c, p)
	run(t, c, cat(p[:4], seq(50, 3)))
	h1 := kvcache.BlockHashes(nil, p, 2, 0)
	h2 := kvcache.BlockHashes(nil, cat(p[:4], seq(50, 3)), 2, 0)
	assert.Equal(t, h1[:2], h2[:2], "a shared prefix has the same chained hashes")
	c.Clear()
	assert.Equal(t, []kvcache.Event{
		{Stored: &kvcache.BlockStored{BlockHashes: h1, TokenIDs: p[:4], BlockSize: 2}},
		{Stored: &kvcache.BlockStored{BlockHashes: h2[2:], ParentBlockHash: h2[1], HasParent: true, TokenIDs: []uint32{50, 51}, BlockSize: 2}},
		{Cleared: true},
	}, rec.take())
	assert.Equal(t, int64(0), c.Stats().BlocksUsed)
	assert.Equal(t, 0, run(t, c, p), "cleared")
}

func TestDuplicateCommitsShareTheCachedCopy(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	c := newCache(t, 2, 100, rec)
	ids := seq(1, 4)
	a, err := c.Acquire(context.Background(), ids, 0)
	require.NoError(t, err)
	b, err := c.Acquire(context.Background(), ids, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(4), c.Stats().BlocksUsed, "both reserved their blocks")
	a.Commit()
	b.Commit()
	assert.Len(t, rec.take(), 1, "the second computation of the same blocks stores nothing")
	assert.Equal(t, int64(2), c.Stats().BlocksUsed, "b's own copies are freed at its commit")
	a.Release()
	assert.Equal(t, 4, run(t, c, seq(1, 5)), "b still holds the blocks")
	b.Release()
	assert.Equal(t, int64(2), c.Stats().BlocksUsed)
}

func TestConcurrentLeasesKeepAccountingExact(t *testing.T) {
	t.Parallel()
	c := newCache(t, 4, 64, nil)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				ids := cat(seq(1, 16), seq(1000*g+i%7, 13))
				l, err := c.Acquire(context.Background(), ids, 0)
				if !assert.NoError(t, err) {
					return
				}
				l.Commit()
				l.Release()
			}
		}()
	}
	wg.Wait()
	st := c.Stats()
	assert.LessOrEqual(t, st.BlocksUsed, int64(64))
	assert.Equal(t, int64(8*200*29), st.PromptTokens)
}
