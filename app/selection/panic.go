package selection

import (
	"time"

	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// panicWarnInterval is the shortest gap between two panic-mode warnings.
const panicWarnInterval = 10 * time.Second

// avail is what a selection counts as a usable worker: one serving model (every worker
// when model is "") and available (worker.Live.Available: ready and its gates allow). On a
// leg in panic mode (panicP, panicD) a ready worker whose gates refuse it (an open circuit
// breaker, or any other gate) is usable too; a worker that is not ready (pending,
// not_ready, failed, draining) never is.
type avail struct {
	model          string
	panicP, panicD bool
}

func (a avail) prefill(l *worker.Live) bool { return a.usable(l, a.panicP) }
func (a avail) decode(l *worker.Live) bool  { return a.usable(l, a.panicD) }

func (a avail) usable(l *worker.Live, panicking bool) bool {
	if l == nil || (a.model != "" && !l.ServesModel(a.model)) {
		return false
	}
	if panicking {
		return l.Healthy()
	}
	return l.Available()
}

// panicFor decides panic mode after a selection failed (Envoy's panic threshold at 0 %):
// a leg none of whose workers serving model is available, but some of which are ready and
// only gated, is in panic mode. ok is false when no leg is: then the selection's own error
// stands (a leg with no ready worker at all, or workers that do not pair).
func panicFor(sn *snapshot, model string) (a avail, ok bool) {
	a = avail{model: model}
	norm := avail{model: model}
	gated := func(l *worker.Live) bool { return l != nil && l.Healthy() && (model == "" || l.ServesModel(model)) }
	if !anyUsable(sn.mx.Prefills(), norm.prefill) && anyUsable(sn.mx.Prefills(), gated) {
		a.panicP = true
	}
	if !anyUsable(sn.mx.Decodes(), norm.decode) && anyUsable(sn.mx.Decodes(), gated) {
		a.panicD = true
	}
	return a, a.panicP || a.panicD
}

// warnPanic logs a panic-mode selection at warn level, at most once per
// panicWarnInterval (the seed has no metric for it).
func (s *Selector) warnPanic(a avail, p, d *worker.Live) {
	now := time.Now().UnixNano()
	last := s.panicAt.Load()
	if last != 0 && now-last < int64(panicWarnInterval) || !s.panicAt.CompareAndSwap(last, now) {
		return
	}
	var legs []string
	if a.panicP {
		legs = append(legs, string(policy.LegPrefill))
	}
	if a.panicD {
		legs = append(legs, string(policy.LegDecode))
	}
	s.log.Warn("panic mode: no available worker on a leg; routing to a ready worker whose circuit is open (least loaded), its errors are returned",
		"legs", legs, "prefill", p.DisplayURL(), "decode", d.DisplayURL(), "model", a.model)
}

// leastLoaded picks the candidate with the fewest in-flight requests, the first on a tie:
// the policy of a leg in panic mode (the leg's own policy may keep state about available
// workers only, and spreading the load over the gated workers is what panic mode is for).
type leastLoaded struct{}

func (leastLoaded) Name() string    { return "panic_least_loaded" }
func (leastLoaded) NeedsText() bool { return false }

func (leastLoaded) Select(cands []*worker.Live, _ *policy.Request) int {
	best := -1
	for i, l := range cands {
		if best < 0 || l.Load() < cands[best].Load() {
			best = i
		}
	}
	return best
}

var _ policy.Policy = leastLoaded{}
