package text

import "container/heap"

// mergeKey packs a pair of adjacent symbol ids.
func mergeKey(a, b uint32) uint64 { return uint64(a)<<32 | uint64(b) }

// merge is one BPE merge rule: its priority (lower merges first) and the id it produces.
type merge struct {
	rank uint32
	id   uint32
}

// bpe appends the ids of one pre-token (raw bytes) to out with HF's BPE: start from one symbol
// per byte, then repeatedly apply the lowest-ranked merge, leftmost first. With ignoreMerges
// (Llama-3) a piece that is itself in the vocabulary is one token.
func (t *Tokenizer) bpe(piece string, out []uint32) []uint32 {
	if len(piece) == 1 {
		return append(out, t.byteID[piece[0]])
	}
	if t.ignoreMerges {
		if id, ok := t.vocab[piece]; ok {
			return append(out, id)
		}
	}
	if len(piece) > 48 {
		return t.bpeHeap(piece, out)
	}
	var buf [48]uint32
	syms := buf[:len(piece)]
	for i := 0; i < len(piece); i++ {
		syms[i] = t.byteID[piece[i]]
	}
	for len(syms) > 1 {
		best, bestRank, bestID := -1, ^uint32(0), uint32(0)
		for i := 0; i+1 < len(syms); i++ {
			if m, ok := t.merges[mergeKey(syms[i], syms[i+1])]; ok && m.rank < bestRank {
				best, bestRank, bestID = i, m.rank, m.id
			}
		}
		if best < 0 {
			break
		}
		syms[best] = bestID
		syms = append(syms[:best+1], syms[best+2:]...)
	}
	return append(out, syms...)
}

// bpeHeap is bpe for long pieces (runs of letters or whitespace): O(n log n) with a heap of
// candidate merges over a linked list of symbols, the same order as the quadratic loop.
func (t *Tokenizer) bpeHeap(piece string, out []uint32) []uint32 {
	n := len(piece)
	ids := make([]uint32, n)
	prev := make([]int, n)
	next := make([]int, n)
	alive := make([]bool, n)
	for i := 0; i < n; i++ {
		ids[i] = t.byteID[piece[i]]
		prev[i], next[i], alive[i] = i-1, i+1, true
	}
	next[n-1] = -1
	h := &mergeHeap{}
	push := func(l int) {
		if l < 0 || next[l] < 0 {
			return
		}
		r := next[l]
		if m, ok := t.merges[mergeKey(ids[l], ids[r])]; ok {
			heap.Push(h, cand{rank: m.rank, pos: l, left: ids[l], right: ids[r], id: m.id})
		}
	}
	for i := 0; i+1 < n; i++ {
		push(i)
	}
	for h.Len() > 0 {
		c := heap.Pop(h).(cand)
		l := c.pos
		if !alive[l] || next[l] < 0 || ids[l] != c.left || ids[next[l]] != c.right {
			continue
		}
		r := next[l]
		ids[l] = c.id
		alive[r] = false
		next[l] = next[r]
		if next[r] >= 0 {
			prev[next[r]] = l
		}
		push(prev[l])
		push(l)
	}
	for i := 0; i >= 0; i = next[i] {
		out = append(out, ids[i])
	}
	return out
}

type cand struct {
	rank, left, right, id uint32
	pos                   int
}

type mergeHeap []cand

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].pos < h[j].pos
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(cand)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
