package policy

import (
	"math"

	"github.com/smg-go/smg/domain/worker"
)

// CachedPrefixes is implemented by policies that keep a prefix index (cache_aware): for a
// request and candidate workers, how many of its prompt tokens each already holds. The
// selective-PD decision reads it to count a worker's uncached tokens (domain/pdmode).
type CachedPrefixes interface {
	// CachedTokens fills out[i] (len(out) == len(ws)) with the prompt tokens worker ws[i]
	// holds, of promptTokens: from Options.KVPrefixes.Matched (tokens) when req.TokenIDs
	// are known and the worker's event stream is live; else from the approximate tree, the
	// share of req.Text's bytes on the longest path stamped by the worker, times
	// promptTokens (rounded down). 0 for a worker the index knows nothing of. Read-only:
	// nothing is inserted or speculated. Safe for concurrent use.
	CachedTokens(req *Request, ws []*worker.Live, promptTokens int, out []int)
}

var _ CachedPrefixes = (*CacheAware)(nil)

// CachedTokens implements CachedPrefixes.
func (p *CacheAware) CachedTokens(req *Request, ws []*worker.Live, promptTokens int, out []int) {
	for i := range out {
		out[i] = 0
	}
	if len(ws) == 0 || req == nil {
		return
	}
	var matched map[string]int
	if p.kv != nil && len(req.TokenIDs) > 0 {
		matched = p.kv.Matched(req.Model, req.TokenIDs)
	}
	ct := p.tree(treeKey(ws, req))
	ct.mu.Lock()
	defer ct.mu.Unlock()
	for i, w := range ws {
		if matched != nil && p.kv.Live(w.URL) {
			out[i] = min(matched[w.URL], promptTokens)
			continue
		}
		if req.Text == "" {
			continue
		}
		id, ok := ct.t.ids[w.URL]
		if !ok {
			continue
		}
		share := float64(ct.t.matchFor(req.Text, id)) / float64(len(req.Text))
		out[i] = int(math.Floor(share * float64(promptTokens)))
	}
}

// matchFor returns the length in bytes of the longest prefix of text on a path whose nodes
// all carry tenant id (a partial edge match counts up to where it diverges).
func (t *radixTree) matchFor(text string, id int32) int {
	n, i := &t.root, 0
	for i < len(text) {
		_, c := n.child(text[i])
		if c == nil || c.stampIndex(id) < 0 {
			break
		}
		k := lcp(c.text, text[i:])
		i += k
		n = c
		if k < len(c.text) {
			break
		}
	}
	return i
}
