package policy

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// Manual pins each routing key (Request.RoutingKey, the x-smg-routing-key header) to a worker
// of this leg (smg-spec.md §5.9). Pins live in the StickyStore under "<leg>:<key>" (e.g.
// "prefill:abc", "decode:abc"), so each leg sticks independently, and expire after MaxIdle
// without use (every hit re-Sets the pin to refresh its TTL).
//
// Branches (Observer, policy "manual"): occupied_hit (pinned worker is a candidate),
// occupied_miss (pinned worker gone or unavailable: re-pick and re-pin), vacant (no pin: pick
// and pin), no_routing_id (no key: pick, nothing stored), store_error (Get failed or timed
// out: a fresh assignment, nothing stored; a failed Set after another branch is counted as a
// second store_error event). The store never fails a pick.
//
// Differences from SMG: one worker per key instead of a list of the two newest; the idle
// expiry is the store's TTL instead of an eviction thread, so smg_manual_policy_cache_entries
// is not reported here. Each store call is bounded by StickyTimeout; note that a caller
// holding a per-leg lock around Select holds it across these calls.
type Manual struct {
	leg        Leg
	store      StickyStore
	ttl        time.Duration
	timeout    time.Duration
	mode       string
	activeKeys func(*worker.Live) int
	obs        observe
}

var _ Policy = (*Manual)(nil)

func newManual(leg Leg, o Options) *Manual {
	return &Manual{
		leg: leg, store: o.Sticky, ttl: o.MaxIdle, timeout: o.StickyTimeout,
		mode: o.AssignmentMode, activeKeys: o.ActiveKeys, obs: observe{o.Observer},
	}
}

// Name returns "manual".
func (*Manual) Name() string { return wire.PolicyManual }

// NeedsText returns false.
func (*Manual) NeedsText() bool { return false }

// Select returns the pinned candidate for the request's routing key, else a fresh assignment
// (AssignmentMode) that it pins; -1 only for no candidates.
func (p *Manual) Select(c []*worker.Live, req *Request) int {
	if len(c) == 0 {
		p.obs.branch(wire.PolicyManual, wire.BranchNoHealthyWorkers)
		return -1
	}
	if req == nil || req.RoutingKey == "" {
		p.obs.branch(wire.PolicyManual, wire.BranchNoRoutingID)
		return p.assign(c)
	}
	key := string(p.leg) + ":" + req.RoutingKey
	ctx, cancel := context.WithTimeout(reqCtx(req), p.timeout)
	defer cancel()

	pinned, ok, err := p.store.Get(ctx, key)
	if err != nil {
		p.obs.branch(wire.PolicyManual, wire.BranchStoreError)
		return p.assign(c)
	}
	branch := wire.BranchVacant
	if ok {
		if i := indexOfURL(c, pinned); i >= 0 {
			p.obs.branch(wire.PolicyManual, wire.BranchOccupiedHit)
			p.pin(ctx, key, pinned)
			return i
		}
		branch = wire.BranchOccupiedMiss
	}
	p.obs.branch(wire.PolicyManual, branch)
	i := p.assign(c)
	p.pin(ctx, key, c[i].URL)
	return i
}

func (p *Manual) pin(ctx context.Context, key, url string) {
	if err := p.store.Set(ctx, key, url, p.ttl); err != nil {
		p.obs.branch(wire.PolicyManual, wire.BranchStoreError)
	}
}

// assign picks a worker for a key without a usable pin, by AssignmentMode.
func (p *Manual) assign(c []*worker.Live) int {
	switch p.mode {
	case AssignMinLoad, AssignDelegate:
		return minLoad(c)
	case AssignMinGroup:
		if p.activeKeys == nil {
			return minLoad(c)
		}
		best, bestKeys, ties := -1, 0, 0
		for i, w := range c {
			k := p.activeKeys(w)
			switch {
			case best < 0 || k < bestKeys:
				best, bestKeys, ties = i, k, 1
			case k == bestKeys:
				ties++
				if rand.IntN(ties) == 0 {
					best = i
				}
			}
		}
		return best
	default:
		return randomIndex(c)
	}
}
