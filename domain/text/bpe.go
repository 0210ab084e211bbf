package text

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
	var buf [48]uint32
	syms := buf[:0]
	if len(piece) > len(buf) {
		syms = make([]uint32, 0, len(piece))
	}
	for i := 0; i < len(piece); i++ {
		syms = append(syms, t.byteID[piece[i]])
	}
	return t.merge(syms, out)
}

// merge applies the merge rules to syms (consumed) and appends the result to out.
func (t *Tokenizer) merge(syms, out []uint32) []uint32 {
	if len(syms) > 48 {
		return t.mergeHeap(syms, out)
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

// mergeHeap is merge for long symbol runs (runs of letters or whitespace, SentencePiece
// segments): O(n log n) with a heap of candidate merges over a linked list of symbols, in the
// same order as the quadratic loop.
func (t *Tokenizer) mergeHeap(ids, out []uint32) []uint32 {
	n := len(ids)
	prev := make([]int, n)
	next := make([]int, n)
	alive := make([]bool, n)
	for i := 0; i < n; i++ {
		prev[i], next[i], alive[i] = i-1, i+1, true
	}
	next[n-1] = -1
	h := make(mergeHeap, 0, n)
	push := func(l int) {
		if l < 0 || next[l] < 0 {
			return
		}
		r := next[l]
		if m, ok := t.merges[mergeKey(ids[l], ids[r])]; ok {
			h.push(cand{rank: m.rank, pos: l, left: ids[l], right: ids[r], id: m.id})
		}
	}
	for i := 0; i+1 < n; i++ {
		push(i)
	}
	for len(h) > 0 {
		c := h.pop()
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

// mergeHeap is a binary min-heap of candidates by (rank, pos), typed to avoid container/heap's
// per-push allocation.
type mergeHeap []cand

func (h mergeHeap) less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].pos < h[j].pos
}

func (h *mergeHeap) push(c cand) {
	*h = append(*h, c)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a.less(i, p) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *mergeHeap) pop() cand {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(a) && a.less(l, m) {
			m = l
		}
		if r < len(a) && a.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}
