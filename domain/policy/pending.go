package policy

import "sync"

// pendingBook is what one policy instance dispatched to each reported worker since that
// worker's latest load report (the pending correction of engine reports: a burst must not
// pile on a worker whose report lags). A worker's entry resets when its report's Seq
// changes: the new report already counts what was sent before it. Safe for concurrent use.
type pendingBook struct {
	mu      sync.Mutex
	credits map[string]*credit
}

// since returns the tokens credited to url since the report seq, resetting the entry when
// seq changed. Caller holds b.mu.
func (b *pendingBook) since(url string, seq uint64) *credit {
	if b.credits == nil {
		b.credits = map[string]*credit{}
	}
	cr := b.credits[url]
	if cr == nil || cr.seq != seq {
		cr = &credit{seq: seq}
		b.credits[url] = cr
	}
	return cr
}

// remove drops url's entry.
func (b *pendingBook) remove(url string) {
	b.mu.Lock()
	delete(b.credits, url)
	b.mu.Unlock()
}

// pendingTokens is the prompt size a pick credits to its worker: Request.PromptTokens (the
// gateway's count or estimate), else Request.Tokens, else mean.
func pendingTokens(req *Request, mean float64) float64 {
	switch {
	case req == nil:
		return mean
	case req.PromptTokens > 0:
		return float64(req.PromptTokens)
	case req.Tokens > 0:
		return float64(req.Tokens)
	}
	return mean
}
