package policy

import (
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// PrefixHash is consistent hashing with bounded load (smg-spec.md §5.8). The key is
// Request.RoutingKey, else the first 4 × PrefixTokenCount bytes of Request.Text (SMG's
// character approximation of PrefixTokenCount tokens). The key's ring owner (see
// ConsistentHashing) is accepted when its in-flight load is at most
// max(avg × PrefixHashLoadFactor, avg + PrefixHashBalanceAbsThreshold), with
// avg = (total load + 1) / candidates; any load is accepted while the total is 0. Otherwise
// the ring is walked clockwise to the first worker that passes; nothing passing ⇒ least loaded.
// No key ⇒ least loaded.
//
// Unlike SMG's HTTP PD router, which gives this policy no text, NeedsText is true so the
// prompt prefix is used when there is no routing key. --cache-boundaries is not supported.
// Branches (Observer, policy "prefix_hash"): ring_hit, load_balance_walk, fallback_least_load,
// no_routing_key, no_healthy_workers.
type PrefixHash struct {
	rings    *ringCache
	maxBytes int
	factor   float64
	abs      float64
	obs      observe
}

var (
	_ Policy        = (*PrefixHash)(nil)
	_ WorkerRemover = (*PrefixHash)(nil)
)

func newPrefixHash(o Options) *PrefixHash {
	return &PrefixHash{
		rings: newRingCache(o.VirtualNodes), maxBytes: 4 * o.PrefixTokenCount,
		factor: o.PrefixHashLoadFactor, abs: float64(o.PrefixHashBalanceAbsThreshold),
		obs: observe{o.Observer},
	}
}

// Name returns "prefix_hash".
func (*PrefixHash) Name() string { return wire.PolicyPrefixHash }

// NeedsText returns true: the prompt prefix is the key when there is no routing key.
func (*PrefixHash) NeedsText() bool { return true }

// Select returns the key's ring owner when not overloaded, else the next passing worker
// clockwise, else the least loaded; -1 for no candidates.
func (p *PrefixHash) Select(c []*worker.Live, req *Request) int {
	if len(c) == 0 {
		p.obs.branch(wire.PolicyPrefixHash, wire.BranchNoHealthyWorkers)
		return -1
	}
	var key string
	if req != nil {
		key = req.RoutingKey
		if key == "" {
			key = req.Text[:min(len(req.Text), p.maxBytes)]
		}
	}
	if key == "" {
		p.obs.branch(wire.PolicyPrefixHash, wire.BranchNoRoutingKey)
		return minLoad(c)
	}
	total, _ := loadStats(c)
	avg := float64(total+1) / float64(len(c))
	limit := max(avg*p.factor, avg+p.abs)
	accept := func(i int) bool { return total == 0 || float64(c[i].Load()) <= limit }

	r := p.rings.get(c)
	pos := hash64(key)
	first := r.walk(pos, c, nil)
	if first >= 0 && accept(first) {
		p.obs.branch(wire.PolicyPrefixHash, wire.BranchRingHit)
		return first
	}
	if i := r.walk(pos, c, accept); i >= 0 {
		p.obs.branch(wire.PolicyPrefixHash, wire.BranchLoadBalanceWalk)
		return i
	}
	p.obs.branch(wire.PolicyPrefixHash, wire.BranchFallbackLeastLoad)
	return minLoad(c)
}

// RemoveWorker drops the cached rings.
func (p *PrefixHash) RemoveWorker(url string) { p.rings.RemoveWorker(url) }
