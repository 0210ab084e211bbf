package kvindex_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/kvevent"
	"github.com/smg-go/smg/domain/kvindex"
)

// TestIndexAgainstAReferenceModel applies random stores, removals, clears and worker
// removals and compares every lookup with a brute-force model: a worker's match is the
// number of leading block keys of the prompt it holds. Without eviction the two must be
// equal; with a small MaxBlocks the index may only know less, never more.
func TestIndexAgainstAReferenceModel(t *testing.T) {
	t.Parallel()
	for _, max := range []int{0, 12} {
		t.Run(fmt.Sprintf("max_blocks=%d", max), func(t *testing.T) {
			t.Parallel()
			for seed := uint64(1); seed <= 20; seed++ {
				runModel(t, seed, max)
			}
		})
	}
}

func runModel(t *testing.T, seed uint64, max int) {
	const nBlocks = 8
	r := rand.New(rand.NewPCG(seed, 99))
	shared := toks(0, nBlocks*bs)
	var prompts [][]uint32
	for k := 0; k < 6; k++ { // prompts sharing 0..5 leading blocks with each other
		p := append([]uint32{}, shared[:k*bs]...)
		prompts = append(prompts, append(p, toks(1000*(k+1), (nBlocks-k)*bs)...))
	}
	keys := make([][]uint64, len(prompts))
	for i, p := range prompts {
		keys[i] = kvindex.BlockKeys(p, bs)
	}
	workers := []string{"w0", "w1", "w2", "w3"}
	// An engine hash is a per-worker function of the block's content key, as a real
	// engine's chained hash is of content (with its own seed).
	engineHash := func(w int, key uint64) uint64 { return key*0x9E3779B97F4A7C15 + uint64(w)*7919 + 1 }
	ref := make([]map[uint64]uint64, len(workers)) // engine hash -> content key
	for i := range ref {
		ref[i] = map[uint64]uint64{}
	}
	x := kvindex.New(kvindex.Options{MaxBlocks: max})

	for step := 0; step < 300; step++ {
		w := r.IntN(len(workers))
		switch op := r.IntN(20); {
		case op < 12: // store blocks [a, b) of a prompt, chained after block a-1
			p := r.IntN(len(prompts))
			a := r.IntN(nBlocks)
			b := a + 1 + r.IntN(nBlocks-a)
			ev := kvevent.Event{Kind: kvevent.Stored, BlockSize: bs}
			if a > 0 {
				ev.Parent, ev.HasParent = engineHash(w, keys[p][a-1]), true
			}
			for i := a; i < b; i++ {
				ev.Blocks = append(ev.Blocks, kvevent.Block{EngineHash: engineHash(w, keys[p][i]), Tokens: prompts[p][i*bs : (i+1)*bs]})
			}
			x.Apply(workers[w], "m", ev)
			if _, ok := ref[w][ev.Parent]; a == 0 || ok {
				for i := a; i < b; i++ {
					ref[w][engineHash(w, keys[p][i])] = keys[p][i]
				}
			}
		case op < 17: // remove a few of the worker's blocks
			ev := kvevent.Event{Kind: kvevent.Removed}
			for n := 1 + r.IntN(3); n > 0; n-- {
				p, i := r.IntN(len(prompts)), r.IntN(nBlocks)
				h := engineHash(w, keys[p][i])
				ev.Removed = append(ev.Removed, h)
				delete(ref[w], h)
			}
			x.Apply(workers[w], "m", ev)
		case op < 19:
			x.Apply(workers[w], "m", kvevent.Event{Kind: kvevent.Cleared})
			ref[w] = map[uint64]uint64{}
		default:
			x.RemoveWorker(workers[w])
			ref[w] = map[uint64]uint64{}
		}

		entries := 0
		for _, m := range ref {
			entries += len(m)
		}
		s := x.Stats()
		if max == 0 {
			require.Equal(t, entries, s.Entries, "seed %d step %d", seed, step)
		} else {
			require.LessOrEqual(t, s.Entries, max, "seed %d step %d", seed, step)
		}
		for p := range prompts {
			got := x.Match("m", prompts[p])
			for w := range workers {
				held := map[uint64]bool{}
				for _, k := range ref[w] {
					held[k] = true
				}
				want := 0
				for want < nBlocks && held[keys[p][want]] {
					want++
				}
				if max == 0 {
					require.Equal(t, want, got[workers[w]].Blocks, "seed %d step %d prompt %d worker %d", seed, step, p, w)
				} else {
					require.LessOrEqual(t, got[workers[w]].Blocks, want, "seed %d step %d prompt %d worker %d", seed, step, p, w)
				}
			}
		}
	}
}
