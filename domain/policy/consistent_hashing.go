package policy

import (
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// ConsistentHashing maps Request.RoutingKey onto a virtual-node ring of the candidates'
// URLs (VirtualNodes positions each, default 150) and returns the first candidate clockwise
// from the key's position (smg-spec.md §5.7). A key keeps its worker while that worker stays
// a candidate; adding a worker moves only about 1/n of the keys. Without a routing key the
// pick is uniform random.
//
// Branches (Observer, policy "consistent_hashing"): routing_key_hit, random_fallback,
// no_healthy_workers. Not implemented from SMG: the x-smg-target-worker index header and the
// implicit keys from authorization / x-forwarded-for / cookie.
type ConsistentHashing struct {
	rings *ringCache
	obs   observe
}

var (
	_ Policy        = (*ConsistentHashing)(nil)
	_ WorkerRemover = (*ConsistentHashing)(nil)
)

func newConsistentHashing(o Options) *ConsistentHashing {
	return &ConsistentHashing{rings: newRingCache(o.VirtualNodes), obs: observe{o.Observer}}
}

// Name returns "consistent_hashing".
func (*ConsistentHashing) Name() string { return wire.PolicyConsistentHashing }

// NeedsText returns false.
func (*ConsistentHashing) NeedsText() bool { return false }

// Select returns the ring owner of the routing key among c, a random candidate without a
// key, or -1 for no candidates.
func (p *ConsistentHashing) Select(c []*worker.Live, req *Request) int {
	if len(c) == 0 {
		p.obs.branch(wire.PolicyConsistentHashing, wire.BranchNoHealthyWorkers)
		return -1
	}
	if req == nil || req.RoutingKey == "" {
		p.obs.branch(wire.PolicyConsistentHashing, wire.BranchRandomFallback)
		return randomIndex(c)
	}
	if i := p.rings.get(c).walk(hash64(req.RoutingKey), c, nil); i >= 0 {
		p.obs.branch(wire.PolicyConsistentHashing, wire.BranchRoutingKeyHit)
		return i
	}
	p.obs.branch(wire.PolicyConsistentHashing, wire.BranchRandomFallback)
	return randomIndex(c)
}

// RemoveWorker drops the cached rings.
func (p *ConsistentHashing) RemoveWorker(url string) { p.rings.RemoveWorker(url) }
