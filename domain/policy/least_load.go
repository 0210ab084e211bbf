package policy

import (
	"sync"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// LeastLoad picks the candidate with the lowest least-load score (smg-spec.md §5.4), ties
// broken uniformly at random.
//
// How the --least-load-* options apply:
//   - Without a LoadSource (Options.Loads nil, today's default) or when no candidate has a
//     report, the score is the in-flight count (worker.Live.Load): join-shortest-queue. None
//     of the four options changes the pick then.
//   - With reports, a reported worker scores
//     (queued + credited) / throughput + LeastLoadKVPressureWeight × k / (1 − k), where queued
//     is the report's waiting uncached tokens, else waiting requests × LeastLoadMeanPrefillTokens;
//     credited is the tokens this instance sent it since that report (Request.Tokens, else
//     LeastLoadMeanPrefillTokens, per pick); throughput is the report's, else
//     LeastLoadDefaultThroughput; k is its KV token usage clamped to [0, 0.999]. An unreported
//     worker scores in-flight × LeastLoadMeanPrefillTokens / the mean reported throughput.
//   - With LoadMetric LoadTokens (--load-metric tokens) the in-flight count above is the
//     worker's in-flight tokens (worker.Live.TokenLoad), and an unreported worker scores
//     those tokens / the mean reported throughput.
//   - LeastLoadMaxWaitingRequests > 0 drops reported workers whose waiting requests plus
//     picks since that report reach it; when every candidate is dropped Select returns -1.
//
// Credits live in the instance, per worker URL, and reset when the report's Seq changes.
type LeastLoad struct {
	params     scoreParams
	maxWaiting int
	loads      LoadSource
	metric     string // LoadRequests or LoadTokens

	mu      sync.Mutex
	credits map[string]*credit
}

type credit struct {
	seq        uint64
	tokens     float64
	dispatched int
}

var (
	_ Policy        = (*LeastLoad)(nil)
	_ WorkerRemover = (*LeastLoad)(nil)
)

func newLeastLoad(o Options) *LeastLoad {
	return &LeastLoad{
		params: scoreParams{
			kvWeight:    o.LeastLoadKVPressureWeight,
			defaultTput: o.LeastLoadDefaultThroughput,
			meanPrefill: float64(o.LeastLoadMeanPrefillTokens),
		},
		maxWaiting: o.LeastLoadMaxWaitingRequests,
		loads:      o.Loads,
		metric:     o.LoadMetric,
		credits:    map[string]*credit{},
	}
}

// Name returns "least_load".
func (*LeastLoad) Name() string { return wire.PolicyLeastLoad }

// NeedsText returns false.
func (*LeastLoad) NeedsText() bool { return false }

// Select returns the least-loaded candidate, or -1 for no candidates or when the
// waiting-queue veto drops all of them.
func (p *LeastLoad) Select(c []*worker.Live, req *Request) int {
	if len(c) == 0 {
		return -1
	}
	if p.loads == nil {
		return minLoadBy(c, p.metric)
	}
	var rbuf [16]LoadReport
	var hbuf, okbuf [16]bool
	var sbuf [16]float64
	reps, has, ok, scores := rbuf[:0], hbuf[:0], okbuf[:0], sbuf[:0]
	if len(c) > len(rbuf) {
		reps, has, ok, scores = make([]LoadReport, 0, len(c)), make([]bool, 0, len(c)),
			make([]bool, 0, len(c)), make([]float64, 0, len(c))
	}
	reps, has, ok, scores = reps[:len(c)], has[:len(c)], ok[:len(c)], scores[:len(c)]
	if !fetchReports(p.loads, c, reps, has) {
		return minLoadBy(c, p.metric)
	}
	nominal := p.params.nominalThroughput(reps, has)

	p.mu.Lock()
	defer p.mu.Unlock()
	for i, w := range c {
		ok[i] = true
		if !has[i] {
			scores[i] = p.params.unreportedScoreBy(w, p.metric, nominal)
			continue
		}
		cr := p.creditFor(w.URL, reps[i].Seq)
		if p.maxWaiting > 0 && reps[i].WaitingReqs+cr.dispatched >= p.maxWaiting {
			ok[i] = false
			continue
		}
		scores[i] = p.params.reportScore(reps[i], cr.tokens)
	}
	best := argmin(scores, ok)
	if best >= 0 && has[best] {
		cr := p.credits[c[best].URL]
		if req != nil && req.Tokens > 0 {
			cr.tokens += float64(req.Tokens)
		} else {
			cr.tokens += p.params.meanPrefill
		}
		cr.dispatched++
	}
	return best
}

// creditFor returns url's credit, reset when the report seq changed. Caller holds p.mu.
func (p *LeastLoad) creditFor(url string, seq uint64) *credit {
	cr := p.credits[url]
	if cr == nil {
		cr = &credit{seq: seq}
		p.credits[url] = cr
	}
	if cr.seq != seq {
		*cr = credit{seq: seq}
	}
	return cr
}

// RemoveWorker drops the credits kept for url.
func (p *LeastLoad) RemoveWorker(url string) {
	p.mu.Lock()
	delete(p.credits, url)
	p.mu.Unlock()
}
