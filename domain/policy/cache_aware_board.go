package policy

import (
	"math/rand/v2"

	"github.com/smg-go/smg/domain/worker"
)

var _ BoardSelector = (*CacheAware)(nil)

// SelectBoard is Select over the load board b of the candidates c, in O(log candidates +
// tenants of the matched node + prompt length) instead of O(candidates): the min-load
// candidate (ties: fewest picks by this instance, then index — the tree keeps its picks per
// worker as the board's tie values) and the average load come from b, and only the tenants
// recorded at the matched node are read. The decision is Select's. Falls back to Select when
// b is not the board of c, is closed, or the request is scored by KV events
// (Options.KVPrefixes with token ids: that cost model reads every candidate's cache view).
func (p *CacheAware) SelectBoard(c []*worker.Live, b *worker.LoadBoard, req *Request) int {
	if !b.For(c) || (p.kv != nil && req != nil && len(req.TokenIDs) > 0) {
		return p.Select(c, req)
	}
	var text string
	if req != nil {
		text = req.Text
	}
	if i, ok := p.selectOnBoard(c, b, req, text); ok {
		return i
	}
	return p.Select(c, req) // b was closed
}

// selectOnBoard is SelectBoard's pick; ok is false when b is closed (nothing was inserted).
func (p *CacheAware) selectOnBoard(c []*worker.Live, b *worker.LoadBoard, req *Request, text string) (int, bool) {
	model := treeKey(c, req)
	ct := p.tree(model)
	ct.mu.Lock()
	defer ct.mu.Unlock()
	t := ct.t
	bs := t.useBoard(b, c)
	minIdx, sum, ok := b.Min()
	if !ok {
		return -1, false
	}
	avg := float64(sum) / float64(len(c))
	chosen, branch := p.decide(t, text, minIdx, avg, func(n *node) (int, int64) {
		return leastLoadedTenantOn(t, n, c, b, bs)
	})
	p.record(model, ct, text, t.tenantID(c[chosen].URL), branch)
	return chosen, true
}

// leastLoadedTenantOn is leastLoadedTenant reading only n's tenants: the candidate index of
// the least-loaded tenant recorded at n that is one of c (bs: b's indexes of the tree's
// tenant ids), ties random, and its load; -1 when none is a candidate. Call it with t's lock
// held.
func leastLoadedTenantOn(t *radixTree, n *node, c []*worker.Live, b *worker.LoadBoard, bs *boardSlots) (best int, load int64) {
	best, ties := -1, 0
	for _, s := range n.tenants {
		i := t.slot(b, bs, s.tenant)
		if i < 0 {
			continue
		}
		l := c[i].Load()
		switch {
		case best < 0 || l < load:
			best, load, ties = i, l, 1
		case l == load:
			ties++
			if rand.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return best, load
}
