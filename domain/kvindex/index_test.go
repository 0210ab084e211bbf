package kvindex_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/kvevent"
	"github.com/smg-go/smg/domain/kvindex"
)

const bs = 4

func toks(from, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(from + i)
	}
	return out
}

// stored is a BlockStored of the blocks of tokens (full blocks of bs), engine hashes
// base, base+1, ... chained after parent when hasParent.
func stored(tokens []uint32, base uint64, parent uint64, hasParent bool) kvevent.Event {
	ev := kvevent.Event{Kind: kvevent.Stored, BlockSize: bs, Parent: parent, HasParent: hasParent, Medium: "GPU"}
	for i := 0; i*bs < len(tokens); i++ {
		end := min((i+1)*bs, len(tokens))
		ev.Blocks = append(ev.Blocks, kvevent.Block{EngineHash: base + uint64(i), Tokens: tokens[i*bs : end]})
	}
	return ev
}

func removed(h ...uint64) kvevent.Event { return kvevent.Event{Kind: kvevent.Removed, Removed: h} }

func hits(t *testing.T, m map[string]kvindex.Hit) map[string]int {
	t.Helper()
	out := map[string]int{}
	for w, h := range m {
		assert.Equal(t, bs, h.BlockSize)
		out[w] = h.Blocks
	}
	return out
}

func TestMatchCountsConsecutiveLeadingBlocksPerWorker(t *testing.T) {
	t.Parallel()
	x := kvindex.New(kvindex.Options{})
	prompt := toks(0, 3*bs+2) // three full blocks and a partial tail
	x.Apply("w1", "m", stored(prompt[:3*bs], 100, 0, false))
	// w2's engine uses another hash seed: different engine hashes, same content.
	x.Apply("w2", "m", stored(prompt[:bs], 900, 0, false))
	x.Apply("w2", "m", stored(prompt[bs:2*bs], 901, 900, true))
	// w3 holds only the second block's content, not after the same first block.
	x.Apply("w3", "m", stored(prompt[bs:2*bs], 300, 0, false))

	assert.Equal(t, map[string]int{"w1": 3, "w2": 2}, hits(t, x.Match("m", prompt)))
	assert.Equal(t, map[string]int{"w1": 2, "w2": 2}, hits(t, x.Match("m", prompt[:2*bs+3])), "the partial tail is ignored")
	assert.Empty(t, x.Match("m", prompt[:bs-1]), "no full block, no match")
	assert.Empty(t, x.Match("other-model", prompt))
	assert.Equal(t, 12, x.Match("m", prompt)["w1"].Tokens())
}

func TestStoredBlocksAfterAnUnknownParentAreDropped(t *testing.T) {
	t.Parallel()
	x := kvindex.New(kvindex.Options{})
	x.Apply("w1", "m", stored(toks(bs, bs), 2, 1, true))
	assert.Empty(t, x.Match("m", toks(0, 2*bs)))
	assert.Equal(t, uint64(1), x.Stats().Orphans)
}

func TestPartialStoredBlocksAreNotIndexed(t *testing.T) {
	t.Parallel()
	x := kvindex.New(kvindex.Options{})
	x.Apply("w1", "m", stored(toks(0, bs+2), 1, 0, false)) // SGLang's short last page
	assert.Equal(t, map[string]int{"w1": 1}, hits(t, x.Match("m", toks(0, 2*bs))))
	assert.Equal(t, uint64(1), x.Stats().Partial)
}

func TestRemovalByEngineHash(t *testing.T) {
	t.Parallel()
	x := kvindex.New(kvindex.Options{})
	prompt := toks(0, 3*bs)
	x.Apply("w1", "m", stored(prompt, 100, 0, false))
	x.Apply("w2", "m", stored(prompt, 200, 0, false))
	x.Apply("w1", "m", removed(102))
	assert.Equal(t, map[string]int{"w1": 2, "w2": 3}, hits(t, x.Match("m", prompt)))
	x.Apply("w1", "m", removed(100))
	assert.Equal(t, map[string]int{"w2": 3}, hits(t, x.Match("m", prompt)), "without its first block the chain is not a prefix hit")
	x.Apply("w1", "m", removed(555))
	s := x.Stats()
	assert.Equal(t, uint64(1), s.UnknownRemovals)
	assert.Equal(t, 4, s.Entries)
	assert.Equal(t, 3, s.Blocks)
}

func TestClearResetAndRemoveWorker(t *testing.T) {
	t.Parallel()
	x := kvindex.New(kvindex.Options{})
	prompt := toks(0, 2*bs)
	for i, w := range []string{"w1", "w2", "w3"} {
		x.Apply(w, "m", stored(prompt, uint64(100*i), 0, false))
	}
	x.Apply("w1", "m", kvevent.Event{Kind: kvevent.Cleared})
	x.Reset("w2")
	assert.Equal(t, map[string]int{"w3": 2}, hits(t, x.Match("m", prompt)))
	x.RemoveWorker("w3")
	assert.Empty(t, x.Match("m", prompt))
	s := x.Stats()
	assert.Zero(t, s.Entries)
	assert.Zero(t, s.Blocks)
	assert.Zero(t, s.Namespaces)
	assert.Equal(t, 2, s.Workers, "cleared workers stay known; the removed one is gone")

	// A removed worker's slot is reused without inheriting anything.
	x.Apply("w4", "m", stored(prompt[:bs], 7, 0, false))
	assert.Equal(t, map[string]int{"w4": 1}, hits(t, x.Match("m", prompt)))
}

func TestLoRAAndExtraKeysAreKeptApart(t *testing.T) {
	t.Parallel()
	x := kvindex.New(kvindex.Options{})
	prompt := toks(0, 2*bs)
	base := stored(prompt, 1, 0, false)
	withLoRA := stored(prompt, 1, 0, false)
	withLoRA.LoRAName = "sql-adapter"
	withID := stored(prompt, 1, 0, false)
	withID.LoRAID, withID.HasLoRAID = 7, true
	withImage := stored(prompt, 1, 0, false)
	withImage.Blocks[0].Extra = 42
	x.Apply("base", "m", base)
	x.Apply("lora", "m", withLoRA)
	x.Apply("lora-id", "m", withID)
	x.Apply("image", "m", withImage)

	assert.Equal(t, map[string]int{"base": 2}, hits(t, x.Match("m", prompt)))
	assert.Equal(t, map[string]int{"lora": 2}, hits(t, x.MatchQuery(kvindex.Query{Model: "m", LoRA: "sql-adapter", Tokens: prompt})))
	assert.Equal(t, map[string]int{"lora-id": 2}, hits(t, x.MatchQuery(kvindex.Query{Model: "m", LoRA: "lora-id:7", Tokens: prompt})))
}

func TestOtherTiersAndGroupsAreIgnored(t *testing.T) {
	t.Parallel()
	x := kvindex.New(kvindex.Options{})
	prompt := toks(0, bs)
	cpu := stored(prompt, 1, 0, false)
	cpu.Medium = "CPU"
	group1 := stored(prompt, 1, 0, false)
	group1.Group = 1
	x.Apply("w1", "m", cpu)
	x.Apply("w2", "m", group1)
	assert.Empty(t, x.Match("m", prompt))
	assert.Equal(t, uint64(2), x.Stats().Ignored)
}

func TestBlockSizesAreMatchedWithTheirOwnChunking(t *testing.T) {
	t.Parallel()
	x := kvindex.New(kvindex.Options{})
	prompt := toks(0, 16)
	x.Apply("small", "m", stored(prompt, 1, 0, false))
	big := kvevent.Event{Kind: kvevent.Stored, BlockSize: 8, Blocks: []kvevent.Block{{EngineHash: 1, Tokens: prompt[:8]}}}
	x.Apply("big", "m", big)
	m := x.Match("m", prompt)
	assert.Equal(t, kvindex.Hit{Blocks: 4, BlockSize: 4}, m["small"])
	assert.Equal(t, kvindex.Hit{Blocks: 1, BlockSize: 8}, m["big"])
}

func TestMemoryBoundEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	x := kvindex.New(kvindex.Options{MaxBlocks: 4})
	a, b, c := toks(0, 2*bs), toks(1000, 2*bs), toks(2000, 2*bs)
	x.Apply("w", "m", stored(a, 10, 0, false))
	x.Apply("w", "m", stored(b, 20, 0, false))
	require.Equal(t, map[string]int{"w": 2}, hits(t, x.Match("m", a))) // a is now more recent than b
	x.Apply("w", "m", stored(c, 30, 0, false))

	s := x.Stats()
	assert.LessOrEqual(t, s.Entries, 4)
	assert.Equal(t, uint64(2), s.Evicted)
	assert.Equal(t, map[string]int{"w": 2}, hits(t, x.Match("m", a)), "recently matched chain kept")
	assert.Empty(t, x.Match("m", b), "least recently used chain evicted")
	assert.Equal(t, map[string]int{"w": 2}, hits(t, x.Match("m", c)))
	// The evicted blocks' engine hashes are forgotten too: removing them is a no-op.
	x.Apply("w", "m", removed(20, 21))
	assert.Equal(t, uint64(2), x.Stats().UnknownRemovals)
}

func TestEvictionTakesLeavesBeforeRoots(t *testing.T) {
	t.Parallel()
	x := kvindex.New(kvindex.Options{MaxBlocks: 3})
	a := toks(0, 3*bs)
	x.Apply("w", "m", stored(a, 10, 0, false))
	x.Apply("w", "m", stored(toks(500, bs), 99, 0, false)) // one more block than fits
	assert.Equal(t, map[string]int{"w": 2}, hits(t, x.Match("m", a)), "the chain's deepest block went first")
}

func TestBlockKeysMatchTheIndexChunking(t *testing.T) {
	t.Parallel()
	keys := kvindex.BlockKeys(toks(0, 2*bs+1), bs)
	assert.Len(t, keys, 2)
	assert.NotEqual(t, keys[0], keys[1])
	assert.Equal(t, keys[:1], kvindex.BlockKeys(toks(0, bs), bs))
	assert.Nil(t, kvindex.BlockKeys(toks(0, bs), 0))
}

func TestMatchWithMoreThan64Workers(t *testing.T) {
	t.Parallel()
	x := kvindex.New(kvindex.Options{})
	prompt := toks(0, 5*bs)
	want := map[string]int{}
	for i := 0; i < 70; i++ {
		n := 1 + i%5
		w := "w" + string(rune('A'+i/26)) + string(rune('a'+i%26))
		x.Apply(w, "m", stored(prompt[:n*bs], uint64(1000*i), 0, false))
		want[w] = n
	}
	assert.Equal(t, want, hits(t, x.Match("m", prompt)))
	assert.Equal(t, want, hits(t, x.Match("m", prompt)), "a second lookup starts from clean counters")
}

func TestChainSurvivesItsRootBeingRemovedAndStoredAgain(t *testing.T) {
	t.Parallel()
	x := kvindex.New(kvindex.Options{})
	prompt := toks(0, 3*bs)
	x.Apply("w", "m", stored(prompt, 10, 0, false))
	x.Apply("w", "m", removed(10))
	assert.Empty(t, x.Match("m", prompt))
	x.Apply("w", "m", stored(prompt[:bs], 10, 0, false))
	assert.Equal(t, map[string]int{"w": 3}, hits(t, x.Match("m", prompt)), "the deeper blocks are found again once the root is back")
	x.Apply("w", "m", removed(11))
	assert.Equal(t, map[string]int{"w": 1}, hits(t, x.Match("m", prompt)))
}

// Lookups run beside updates and evictions (run with -race): results stay within the
// prompt and the bound holds.
func TestConcurrentLookupsAndUpdates(t *testing.T) {
	t.Parallel()
	x := kvindex.New(kvindex.Options{MaxBlocks: 40})
	prompt := toks(0, 8*bs)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				for _, h := range x.Match("m", prompt) {
					if h.Blocks < 1 || h.Blocks > 8 {
						t.Errorf("match of %d blocks", h.Blocks)
						return
					}
				}
			}
		}()
	}
	for i := 0; i < 300; i++ {
		w := "w" + string(rune('0'+i%5))
		x.Apply(w, "m", stored(prompt[:(1+i%8)*bs], uint64(i%5)*100, 0, false))
		x.Apply(w, "m", stored(toks(10_000+i*bs, bs), uint64(1_000_000+i), 0, false))
		switch i % 7 {
		case 3:
			x.Apply(w, "m", removed(uint64(i%5)*100+uint64(i%3)))
		case 5:
			x.RemoveWorker(w)
		}
	}
	wg.Wait()
	assert.LessOrEqual(t, x.Stats().Entries, 40)
}
