package policy

import (
	"math"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// DefaultKVOverlapWeight is Options.KVOverlapWeight's default: a prompt whose whole prefix
// a worker holds is worth 4 in-flight requests on it.
const DefaultKVOverlapWeight = 4.0

// KVPrefixes is the engines' own view of which worker holds which prompt prefix in its KV
// cache (app/kvroute: one domain/kvindex fed by the workers' KV-event streams, plus
// short-lived speculative entries). cache_aware consults it for requests whose token ids
// are known (Request.TokenIDs). Methods are called on the selection path, under the leg's
// selection lock: they must be fast and safe for concurrent use.
type KVPrefixes interface {
	// Live reports whether the event stream of the worker registered at url is live
	// (subscribed and connected): its matches are trusted. A worker that is not live is
	// scored with the approximate tree.
	Live(url string) bool
	// Matched returns, for each worker url holding at least the first block of tokens under
	// model, the length in tokens of the leading prefix it holds (event-driven and
	// speculative entries, the longer of the two).
	Matched(model string, tokens []uint32) map[string]int
	// Speculate records that tokens were just routed to url under model: a short-lived entry
	// Matched reports until it expires, so a burst of one prompt does not scatter before
	// the worker's first event arrives.
	Speculate(url, model string, tokens []uint32)
}

// KVPredictor is optionally implemented by a KVPrefixes: Predicted receives, for each pick
// of a live worker, the prompt tokens cache_aware counted on it holding (its Matched
// length, 0 for a miss), beside the engine's own report later.
type KVPredictor interface {
	Predicted(url string, tokens int)
}

// selectKV is cache_aware's pick when the request's token ids are known and at least one
// candidate's event stream is live. Cost model, per candidate i (lowest wins):
//
//	cost_i = load_i − KVOverlapWeight × hit_i
//
// With LoadMetric LoadTokens (--load-metric tokens) the cost is counted in tokens instead, the
// prefill work the worker would have before this prompt's first token:
//
//	cost_i = tokens_i + (1 − hit_i) × prompt tokens
//
// tokens_i is the worker's in-flight tokens (worker.Live.TokenLoad: prompts of the legs in
// flight plus the decodes' expected tokens), the second term what it would compute of this
// prompt. A worker holding a prefix keeps it while the prompt's uncached remainder plus what
// it already has in flight is less than a cold worker's whole prompt plus its queue, so one
// worker holding a prefix everybody shares (a system prompt) does not take every request on
// an idle fleet, where a request count of 0 or 1 says nothing about the work queued.
//
// load_i is the worker's in-flight requests (worker.Live.Load); hit_i in [0, 1] is the share
// of the prompt's tokens the worker already holds: from KVPrefixes.Matched for live workers,
// else the approximate tree's match rate when the worker is recorded at the deepest matched
// node and the rate is above CacheThreshold (0 otherwise). Ties go to the highest
// tieKey(prompt, worker URL): a function of the prompt and the worker alone, so every
// gateway replica breaks a tie the same way (a tie broken by this instance's own pick
// counts sends one cold prompt to a different worker from each replica and splits the
// fleet's cache N ways), while different prompts spread over the tied workers. SMG's balance gate
// stays: when the winner holds a prefix but its load is > avg × BalanceRelThreshold and
// > avg + BalanceAbsThreshold, the min-load candidate is taken instead (cache_spill).
// Branches: cache_hit (the winner holds a prefix), cache_spill, cache_miss. The chosen
// live worker gets a speculative entry for the prompt. ok is false when no candidate is
// live (the caller takes the approximate path).
func (p *CacheAware) selectKV(c []*worker.Live, req *Request, t *radixTree, loads []int64, ids []int32,
	minIdx int, avg float64) (chosen int, branch string, ok bool) {
	kv := p.kv
	var lbuf [16]bool
	live := lbuf[:0]
	if len(c) > len(lbuf) {
		live = make([]bool, 0, len(c))
	}
	anyLive := false
	for _, w := range c {
		l := kv.Live(w.URL)
		live = append(live, l)
		anyLive = anyLive || l
	}
	if !anyLive {
		return 0, "", false
	}
	matched := kv.Matched(req.Model, req.TokenIDs)
	total := float64(len(req.TokenIDs))
	var approxRate float64
	var approxAt *node
	if req.Text != "" {
		if m, n := t.match(req.Text); float64(m)/float64(len(req.Text)) > p.threshold {
			approxRate, approxAt = float64(m)/float64(len(req.Text)), n
		}
	}
	best, bestCost, bestHit, bestTie := -1, math.Inf(1), 0.0, uint64(0)
	seed := tieSeed(req.TokenIDs)
	for i, w := range c {
		hit := 0.0
		if live[i] {
			hit = math.Min(float64(matched[w.URL])/total, 1)
		} else if approxAt != nil && approxAt.hasTenant(ids[i]) {
			hit = approxRate
		}
		cost := float64(loads[i]) - p.overlap*hit
		if p.tokens {
			cost = float64(w.TokenLoad()) + (1-hit)*total
		}
		if cost > bestCost {
			continue
		}
		tie := tieKey(seed, w.URL)
		if cost < bestCost || tie > bestTie {
			best, bestCost, bestHit, bestTie = i, cost, hit, tie
		}
	}
	chosen, branch = best, wire.BranchCacheMiss
	if bestHit > 0 {
		branch = wire.BranchCacheHit
		if l := float64(loads[best]); l > avg*p.relThresh && l > avg+p.absThresh {
			chosen, branch = minIdx, wire.BranchCacheSpill
		}
	}
	if live[chosen] {
		if pr, ok := kv.(KVPredictor); ok {
			pr.Predicted(c[chosen].URL, min(matched[c[chosen].URL], len(req.TokenIDs)))
		}
		kv.Speculate(c[chosen].URL, req.Model, req.TokenIDs)
	}
	return chosen, branch, true
}

// hasTenant reports whether tenant id is recorded at n.
func (n *node) hasTenant(id int32) bool {
	for _, s := range n.tenants {
		if s.tenant == id {
			return true
		}
	}
	return false
}

// TieTokens is how many leading prompt tokens key a tie between equal-cost candidates
// (selectKV): enough to tell conversations apart, few enough that the requests sharing a
// document or a conversation's first turn key the same (and land where the first one did
// when its KV events have not arrived yet).
const TieTokens = 64

// FNV-1a 64-bit (hash/fnv's constants, inlined: the selection path must not allocate).
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// tieSeed hashes the first TieTokens token ids (little-endian bytes).
func tieSeed(tokens []uint32) uint64 {
	h := uint64(fnvOffset)
	for _, t := range tokens[:min(len(tokens), TieTokens)] {
		for range 4 {
			h ^= uint64(t & 0xff)
			h *= fnvPrime
			t >>= 8
		}
	}
	return h
}

// tieKey mixes a worker URL into seed: the same (prompt, worker) gives the same key in
// every process.
func tieKey(seed uint64, url string) uint64 {
	h := seed
	for i := 0; i < len(url); i++ {
		h ^= uint64(url[i])
		h *= fnvPrime
	}
	// FNV's low bits mix poorly across the last bytes: finish with a 64-bit avalanche
	// (splitmix64's) so URLs differing in one trailing digit do not order alike.
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
