package policy

import (
	"math/rand/v2"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// PowerOfTwo samples two distinct candidates uniformly and returns the one with the lower
// least-load score, ties at random (smg-spec.md §5.3). The score uses least_load's default
// parameters (the --least-load-* flags do not apply) and no credits. When neither sampled
// worker has a load report (always, until a LoadSource is wired) the score is the in-flight
// count, so the less busy of the two wins. With reports, the nominal throughput for an
// unreported worker is taken over the two sampled workers only. With Options.LoadMetric
// LoadTokens (--load-metric tokens) the in-flight count is replaced by the worker's
// in-flight tokens (worker.Live.TokenLoad), so one long prompt weighs more than a short one.
// Stateless. Start-up needs >= 2 workers on the leg (ValidateStartup).
type PowerOfTwo struct {
	loads  LoadSource
	metric string // LoadRequests or LoadTokens
}

var _ Policy = (*PowerOfTwo)(nil)

// Name returns "power_of_two".
func (*PowerOfTwo) Name() string { return wire.PolicyPowerOfTwo }

// NeedsText returns false.
func (*PowerOfTwo) NeedsText() bool { return false }

// Select returns the better of two sampled candidates; with one candidate, it; with none, -1.
func (p *PowerOfTwo) Select(c []*worker.Live, _ *Request) int {
	n := len(c)
	switch n {
	case 0:
		return -1
	case 1:
		return 0
	}
	i := rand.IntN(n)
	j := (i + 1 + rand.IntN(n-1)) % n
	pair := [2]*worker.Live{c[i], c[j]}
	var reps [2]LoadReport
	var has [2]bool
	var scores [2]float64
	if p.loads != nil && fetchReports(p.loads, pair[:], reps[:], has[:]) {
		nominal := defaultScoreParams.nominalThroughput(reps[:], has[:])
		for k, w := range pair {
			if has[k] {
				scores[k] = defaultScoreParams.reportScore(reps[k], 0)
			} else {
				scores[k] = defaultScoreParams.unreportedScoreBy(w, p.metric, nominal)
			}
		}
	} else {
		scores[0], scores[1] = float64(loadOf(pair[0], p.metric)), float64(loadOf(pair[1], p.metric))
	}
	switch {
	case scores[0] < scores[1]:
		return i
	case scores[1] < scores[0]:
		return j
	case rand.IntN(2) == 0:
		return i
	default:
		return j
	}
}
