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
// A reported worker's score counts, like least_load's, the prompt tokens this instance sent
// it since that report (pending correction: Request.PromptTokens, else Request.Tokens, else
// the mean prefill tokens, per pick; reset when the report's Seq changes), so a burst does
// not pile on a worker whose report lags. Start-up needs >= 2 workers on the leg
// (ValidateStartup).
type PowerOfTwo struct {
	loads  LoadSource
	metric string // LoadRequests or LoadTokens
	book   pendingBook
}

var (
	_ Policy        = (*PowerOfTwo)(nil)
	_ WorkerRemover = (*PowerOfTwo)(nil)
)

// RemoveWorker drops what was credited to url since its report.
func (p *PowerOfTwo) RemoveWorker(url string) { p.book.remove(url) }

// Name returns "power_of_two".
func (*PowerOfTwo) Name() string { return wire.PolicyPowerOfTwo }

// NeedsText returns false.
func (*PowerOfTwo) NeedsText() bool { return false }

// Select returns the better of two sampled candidates; with one candidate, it; with none, -1.
func (p *PowerOfTwo) Select(c []*worker.Live, req *Request) int {
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
		p.book.mu.Lock()
		defer p.book.mu.Unlock()
		for k, w := range pair {
			if has[k] {
				scores[k] = defaultScoreParams.reportScore(reps[k], p.book.since(w.URL, reps[k].Seq).tokens)
			} else {
				scores[k] = defaultScoreParams.unreportedScoreBy(w, p.metric, nominal)
			}
		}
		k := better(scores)
		if has[k] {
			p.book.since(pair[k].URL, reps[k].Seq).tokens += pendingTokens(req, defaultScoreParams.meanPrefill)
		}
		return [2]int{i, j}[k]
	}
	scores[0], scores[1] = float64(loadOf(pair[0], p.metric)), float64(loadOf(pair[1], p.metric))
	return [2]int{i, j}[better(scores)]
}

// better is the index (0 or 1) of the lower score, ties at random.
func better(s [2]float64) int {
	switch {
	case s[0] < s[1]:
		return 0
	case s[1] < s[0]:
		return 1
	}
	return rand.IntN(2)
}
