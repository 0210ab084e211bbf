package kvindex

import (
	"math/bits"
	"sync"
)

// Query is a lookup: the prompt's token ids for one model and LoRA adapter.
type Query struct {
	// Model is the model id as the workers' events were applied under.
	Model string
	// LoRA is the adapter name, "" for the base model.
	LoRA string
	// Tokens are the prompt's token ids.
	Tokens []uint32
}

// Match returns, for every worker holding at least the first block of tokens under model
// (base model, no LoRA), how many consecutive leading blocks it holds. A partial tail
// block is ignored. Cost: one hash and one pointer step per matched block and namespace
// (a map lookup for the first block, or where a chain link is missing); it stops at the
// first block no worker extends.
func (x *Index) Match(model string, tokens []uint32) map[string]Hit {
	return x.MatchQuery(Query{Model: model, Tokens: tokens})
}

// MatchQuery is Match with a LoRA adapter. A worker appearing under several block sizes
// reports the longest match in tokens. Lookups run concurrently with each other (read
// lock); recording their use for eviction takes the write lock briefly afterwards.
func (x *Index) MatchQuery(q Query) map[string]Hit {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	out := map[string]Hit{}
	x.mu.RLock()
	for _, ns := range x.models[modelKey{q.Model, q.LoRA}] {
		x.matchNamespace(sc, ns, q.Tokens, out)
	}
	x.mu.RUnlock()
	if len(sc.matched) > 0 {
		// A block dropped in between is unlinked (prev nil); moveFront skips it.
		x.mu.Lock()
		for i := len(sc.matched) - 1; i >= 0; i-- {
			x.moveFront(sc.matched[i])
		}
		x.mu.Unlock()
		clear(sc.matched)
		sc.matched = sc.matched[:0]
	}
	return out
}

// scratch is one lookup's working memory, pooled so lookups allocate only their result.
type scratch struct {
	h       hasher
	counts  []int32
	matched []*node
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// matchNamespace walks the prompt's chain in ns. Workers in slots below 64 are tracked as
// a bit mask (alive: held every block so far); others through per-slot counts.
func (x *Index) matchNamespace(sc *scratch, ns *namespace, tokens []uint32, out map[string]Hit) {
	bs := ns.key.blockSize
	if len(tokens) < bs {
		return
	}
	big := len(x.slots) > 64
	if big && cap(sc.counts) < len(x.slots) {
		sc.counts = make([]int32, len(x.slots))
	}
	counts := sc.counts[:cap(sc.counts)]
	key := sc.h.next(rootKey, 0, tokens[:bs])
	first := ns.blocks[key]
	if first == nil {
		return
	}
	alive := first.mask
	if big {
		x.advance(first, counts, 0)
	}
	sc.matched = append(sc.matched, first)
	record := func(mask uint64, depth int) {
		for ; mask != 0; mask &= mask - 1 {
			x.put(out, x.slots[bits.TrailingZeros64(mask)].id, Hit{Blocks: depth, BlockSize: bs})
		}
	}
	n, depth := first, 1
	for i := bs; i+bs <= len(tokens); i += bs {
		key = sc.h.next(key, 0, tokens[i:i+bs])
		c := n.childWith(key)
		if c == nil {
			if c = ns.blocks[key]; c == nil {
				break
			}
		}
		still := alive & c.mask
		extended := big && x.advance(c, counts, depth)
		if still == 0 && !extended {
			break
		}
		record(alive&^still, depth)
		alive = still
		n = c
		depth++
		sc.matched = append(sc.matched, c)
	}
	record(alive, depth)
	if big {
		for _, h := range first.holders {
			if c := counts[h.slot]; c > 0 {
				counts[h.slot] = 0
				x.put(out, x.slots[h.slot].id, Hit{Blocks: int(c), BlockSize: bs})
			}
		}
	}
}

// advance moves the counts of slots >= 64 holding n at depth to depth+1; it reports
// whether any did.
func (x *Index) advance(n *node, counts []int32, depth int) bool {
	moved := false
	for _, h := range n.holders {
		if h.slot >= 64 && counts[h.slot] == int32(depth) {
			counts[h.slot] = int32(depth + 1)
			moved = true
		}
	}
	return moved
}

// put keeps a worker's longest match in tokens.
func (x *Index) put(out map[string]Hit, id string, h Hit) {
	if prev, ok := out[id]; !ok || prev.Tokens() < h.Tokens() {
		out[id] = h
	}
}
