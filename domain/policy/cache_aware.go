package policy

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// CacheAware routes by prompt-prefix affinity with a load spill (smg-spec.md §5.5, HTTP text
// path). It keeps one approximate radix tree of request text per model, each worker URL a
// tenant. Per pick:
//
//  1. Match Request.Text against the model's tree; rate = matched / total bytes (0 if empty).
//  2. rate > CacheThreshold (strict): among the candidates recorded at the deepest matched
//     node, take the least loaded (ties random). Spill gate: if its in-flight load is
//     > avg × BalanceRelThreshold and > avg + BalanceAbsThreshold (avg over the candidates),
//     take the min-load candidate instead. If no recorded worker is a candidate, min-load.
//  3. Otherwise the min-load candidate, by (in-flight, picks made by this instance, index).
//  4. Insert the whole text for the chosen worker.
//
// The pair selector calls SelectBoard instead, with a worker.LoadBoard of the candidates: the
// same steps and decisions in O(log candidates + tenants of the matched node) rather than
// O(candidates).
//
// Sizes are UTF-8 bytes ("chars" in the flags and smg_cache_tree_chars). The tree key is the
// request's model when the first candidate lists it explicitly, else "unknown", so the number
// of trees is bounded by the registered models whatever clients send. Evict (call it every
// EvictionInterval) trims each tenant's share of each tree to MaxTreeSize bytes, least
// recently used leaves first, and reports each tree's size to Observer.TreeSize; RemoveWorker
// purges a worker from every tree. Between two Evict calls a pick that takes a tenant's
// share past 1.25 × MaxTreeSize starts the same pass for that tree in the background (one
// at a time per tree), so sustained traffic cannot grow a tree past the bound for a whole
// interval.
//
// With Options.KVPrefixes set, a request whose token ids are known (Request.TokenIDs, the
// gRPC pipeline) and with at least one candidate whose KV-event stream is live is scored
// by the engines' own cache view instead (selectKV's cost model; workers without live
// events keep the tree's estimate). The text is inserted into the tree either way.
//
// Branches (Observer, policy "cache_aware", smg additions): cache_hit, cache_spill, cache_miss.
// Differences from SMG: engine KV-usage imbalance checks (need load reports) are not done;
// when no recorded worker is a candidate SMG takes the first candidate without inserting,
// here the min-load one, inserted; a model's first pick takes the min-load path instead of
// a random one.
type CacheAware struct {
	threshold float64
	absThresh float64
	relThresh float64
	maxSize   int
	highWater int // a tenant's share past this starts a background eviction pass
	obs       observe
	kv        KVPrefixes
	overlap   float64
	tokens    bool // LoadMetric LoadTokens: the KV cost is counted in tokens (selectKV)

	mu    sync.RWMutex
	trees map[string]*cacheTree
}

type cacheTree struct {
	mu sync.Mutex
	t  *radixTree

	evictMu  sync.Mutex  // one eviction pass at a time (Evict or background)
	evicting atomic.Bool // a background pass is started or running
}

const unknownModel = "unknown"

// Evict's work per hold of a tree's lock: nodes scanned, then (tenant, leaf) entries removed.
// Each batch takes a few milliseconds on a large tree (see BenchmarkCacheAwareMemoryAtMaxTreeSize).
const (
	scanBatch  = 8192
	evictBatch = 4096
)

var (
	_ Policy        = (*CacheAware)(nil)
	_ Evicter       = (*CacheAware)(nil)
	_ WorkerRemover = (*CacheAware)(nil)
)

func newCacheAware(o Options) *CacheAware {
	return &CacheAware{
		threshold: o.CacheThreshold,
		absThresh: float64(o.BalanceAbsThreshold),
		relThresh: o.BalanceRelThreshold,
		maxSize:   o.MaxTreeSize,
		highWater: o.MaxTreeSize + min(o.MaxTreeSize/4, math.MaxInt-o.MaxTreeSize),
		obs:       observe{o.Observer},
		kv:        o.KVPrefixes,
		overlap:   o.KVOverlapWeight,
		tokens:    o.LoadMetric == LoadTokens,
		trees:     map[string]*cacheTree{},
	}
}

// Name returns "cache_aware".
func (*CacheAware) Name() string { return wire.PolicyCacheAware }

// NeedsText returns true.
func (*CacheAware) NeedsText() bool { return true }

func treeKey(c []*worker.Live, req *Request) string {
	if req == nil || req.Model == "" {
		return unknownModel
	}
	for _, m := range c[0].Models {
		if m == req.Model {
			return m
		}
	}
	return unknownModel
}

func (p *CacheAware) tree(model string) *cacheTree {
	p.mu.RLock()
	ct := p.trees[model]
	p.mu.RUnlock()
	if ct != nil {
		return ct
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if ct = p.trees[model]; ct == nil {
		ct = &cacheTree{t: newRadixTree()}
		p.trees[model] = ct
	}
	return ct
}

// Select returns the prefix-affine candidate, or the min-load one as described on the type;
// -1 for no candidates.
func (p *CacheAware) Select(c []*worker.Live, req *Request) int {
	if len(c) == 0 {
		return -1
	}
	var text string
	if req != nil {
		text = req.Text
	}
	model := treeKey(c, req)
	ct := p.tree(model)

	var lbuf [16]int64
	var ibuf [16]int32
	loads, ids := lbuf[:0], ibuf[:0]
	if len(c) > len(lbuf) {
		loads, ids = make([]int64, 0, len(c)), make([]int32, 0, len(c))
	}

	ct.mu.Lock()
	defer ct.mu.Unlock()
	t := ct.t
	var sum int64
	minIdx := -1
	for i, w := range c {
		l := w.Load()
		id := t.tenantID(w.URL)
		loads, ids = append(loads, l), append(ids, id)
		sum += l
		if minIdx < 0 || l < loads[minIdx] ||
			(l == loads[minIdx] && t.processed[id] < t.processed[ids[minIdx]]) {
			minIdx = i
		}
	}
	avg := float64(sum) / float64(len(c))

	if p.kv != nil && req != nil && len(req.TokenIDs) > 0 {
		if chosen, branch, ok := p.selectKV(c, req, t, loads, ids, minIdx, avg); ok {
			p.record(model, ct, text, ids[chosen], branch)
			return chosen
		}
	}
	chosen, branch := p.decide(t, text, minIdx, avg, func(n *node) (int, int64) {
		if best := leastLoadedTenant(t, n, ids, loads); best >= 0 {
			return best, loads[best]
		}
		return -1, 0
	})
	p.record(model, ct, text, ids[chosen], branch)
	return chosen
}

// decide is steps 1–3 of the type's doc on tree t: the prefix match of text, then the
// least-loaded recorded tenant (tenantMin: its candidate index and load at the matched node,
// -1 when none is a candidate) unless the spill gate sends the request to minIdx, the
// min-load candidate; avg is the candidates' average load. Call it with t's lock held.
func (p *CacheAware) decide(t *radixTree, text string, minIdx int, avg float64, tenantMin func(*node) (int, int64)) (chosen int, branch string) {
	chosen, branch = minIdx, wire.BranchCacheMiss
	if matched, n := t.match(text); len(text) > 0 && float64(matched)/float64(len(text)) > p.threshold {
		if best, load := tenantMin(n); best >= 0 {
			chosen, branch = best, wire.BranchCacheHit
			if l := float64(load); l > avg*p.relThresh && l > avg+p.absThresh {
				chosen, branch = minIdx, wire.BranchCacheSpill
			}
		}
	}
	return chosen, branch
}

// record is step 4: text inserted for tenant id, a background eviction started when that
// takes id's share past the high-water mark, the branch counted. Call it with ct.mu held.
func (p *CacheAware) record(model string, ct *cacheTree, text string, id int32, branch string) {
	ct.t.insert(text, id)
	p.evictIfOver(model, ct, id)
	p.obs.branch(wire.PolicyCacheAware, branch)
}

// evictIfOver starts a background eviction pass of ct when tenant id's share is past the
// high-water mark and no background pass is running. Call it with ct.mu held.
func (p *CacheAware) evictIfOver(model string, ct *cacheTree, id int32) {
	if ct.t.size[id] <= p.highWater || !ct.evicting.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer ct.evicting.Store(false)
		// A pass trims what it found when it started; picks made meanwhile may leave a
		// tenant over the mark again, so repeat (a few times at most) until none is.
		for range 4 {
			p.evictTree(model, ct)
			ct.mu.Lock()
			over := ct.t.maxTenantSize() > p.highWater
			ct.mu.Unlock()
			if !over {
				return
			}
		}
	}()
}

// leastLoadedTenant returns the candidate index of the least-loaded tenant recorded at n,
// ties random, or -1 when none of n's tenants is a candidate. O(tenants at n + candidates):
// n's tenants are marked in t's id-indexed scratch, then the candidates are read once (a
// prompt every worker has served puts every worker at one node, and a loop over tenants ×
// candidates cost 0.2–0.6 ms a pick at 512 workers). Call it with t's lock held.
func leastLoadedTenant(t *radixTree, n *node, ids []int32, loads []int64) int {
	mark := t.scratchMarks()
	for _, s := range n.tenants {
		mark[s.tenant] = true
	}
	best, ties := -1, 0
	for i, id := range ids {
		if !mark[id] {
			continue
		}
		switch {
		case best < 0 || loads[i] < loads[best]:
			best, ties = i, 1
		case loads[i] == loads[best]:
			ties++
			if rand.IntN(ties) == 0 {
				best = i
			}
		}
	}
	for _, s := range n.tenants {
		mark[s.tenant] = false
	}
	return best
}

// Evict trims every model's tree so that no tenant holds more than MaxTreeSize bytes, and
// reports each tree's size to the Observer. Per tree it scans the tree for the leaves of the
// tenants over budget (O(tree nodes)) and removes them oldest first, both in batches that
// hold the tree's lock for a few milliseconds, so picks for that model keep flowing.
func (p *CacheAware) Evict() {
	p.mu.RLock()
	models := make([]string, 0, len(p.trees))
	for m := range p.trees {
		models = append(models, m)
	}
	p.mu.RUnlock()
	for _, m := range models {
		p.evictTree(m, p.tree(m))
	}
}

// evictTree runs one eviction pass over model's tree, then a compaction of its text arena
// when eviction left it fragmented, and reports the tree's size.
func (p *CacheAware) evictTree(model string, ct *cacheTree) {
	ct.evictMu.Lock()
	defer ct.evictMu.Unlock()
	ct.mu.Lock()
	plan := ct.t.planEviction(p.maxSize)
	ct.mu.Unlock()
	for done := plan == nil; !done; {
		ct.mu.Lock()
		done = ct.t.scanSome(plan, scanBatch)
		ct.mu.Unlock()
	}
	if plan != nil {
		plan.order()
	}
	for done := plan == nil; !done; {
		ct.mu.Lock()
		done = ct.t.evictSome(plan, evictBatch)
		ct.mu.Unlock()
	}
	compactTree(ct)
	ct.mu.Lock()
	size := ct.t.total
	ct.mu.Unlock()
	p.obs.treeSize(model, size)
}

// compactTree moves ct's edges out of sparse arena chunks when the arena is fragmented, in
// batches that hold the tree's lock briefly.
func compactTree(ct *cacheTree) {
	ct.mu.Lock()
	cp := ct.t.planCompaction()
	ct.mu.Unlock()
	for done := cp == nil; !done; {
		ct.mu.Lock()
		done = ct.t.compactSome(cp, scanBatch)
		ct.mu.Unlock()
	}
}

// RemoveWorker purges url from every model's tree and reports the new sizes.
func (p *CacheAware) RemoveWorker(url string) {
	p.mu.RLock()
	trees := make(map[string]*cacheTree, len(p.trees))
	for m, ct := range p.trees {
		trees[m] = ct
	}
	p.mu.RUnlock()
	for m, ct := range trees {
		ct.mu.Lock()
		ct.t.removeTenant(url)
		size := ct.t.total
		ct.mu.Unlock()
		ct.evictMu.Lock()
		compactTree(ct)
		ct.evictMu.Unlock()
		p.obs.treeSize(m, size)
	}
}

// TreeSizes returns each model's tree size in bytes (for tests and debugging endpoints).
func (p *CacheAware) TreeSizes() map[string]int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make(map[string]int, len(p.trees))
	for m, ct := range p.trees {
		ct.mu.Lock()
		out[m] = ct.t.total
		ct.mu.Unlock()
	}
	return out
}
