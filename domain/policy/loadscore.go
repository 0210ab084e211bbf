package policy

import (
	"math/rand/v2"

	"github.com/smg-go/smg/domain/worker"
)

// scoreParams are the least-load score's tuning values (smg-spec.md §5.4).
type scoreParams struct {
	kvWeight    float64 // --least-load-kv-pressure-weight
	defaultTput float64 // --least-load-default-throughput, tokens/s
	meanPrefill float64 // --least-load-mean-prefill-tokens, tokens
}

// defaultScoreParams are the least_load defaults power_of_two always uses (§5.3: the
// --least-load-* flags do not apply to power_of_two).
var defaultScoreParams = scoreParams{kvWeight: 0.15, defaultTput: 2000, meanPrefill: 1024}

// reportScore is the score of a worker with a load report r, given the tokens credited to it
// since r (smg-spec.md §5.4); lower is better, in seconds of queued work plus KV pressure.
func (p scoreParams) reportScore(r LoadReport, creditedTokens float64) float64 {
	queued := float64(r.WaitingUncachedTokens)
	if queued <= 0 {
		queued = float64(max(r.WaitingReqs, 0)) * p.meanPrefill
	}
	tput := r.GenThroughput
	if !(tput > 0) {
		tput = p.defaultTput
	}
	k := min(max(r.TokenUsage, 0), 0.999)
	return (queued+creditedTokens)/tput + p.kvWeight*k/(1-k)
}

// unreportedScore is the score of a worker without a report while some candidate has one:
// its in-flight requests, each costed at mean prefill tokens, at the nominal throughput.
func (p scoreParams) unreportedScore(load int64, nominalTput float64) float64 {
	return float64(load) * p.meanPrefill / nominalTput
}

// unreportedScoreBy is unreportedScore under load metric m: with LoadTokens the worker's
// in-flight tokens (worker.Live.TokenLoad) take the place of in-flight × mean prefill tokens.
func (p scoreParams) unreportedScoreBy(w *worker.Live, m string, nominalTput float64) float64 {
	if m == LoadTokens {
		return float64(w.TokenLoad()) / nominalTput
	}
	return p.unreportedScore(w.Load(), nominalTput)
}

// nominalThroughput is the mean of the positive reported throughputs, else the default.
func (p scoreParams) nominalThroughput(reps []LoadReport, has []bool) float64 {
	sum, n := 0.0, 0
	for i, r := range reps {
		if has[i] && r.GenThroughput > 0 {
			sum += r.GenThroughput
			n++
		}
	}
	if n == 0 {
		return p.defaultTput
	}
	return sum / float64(n)
}

// argmin returns the index of the smallest score among entries with ok[i], ties broken
// uniformly at random, or -1 when none is ok.
func argmin(scores []float64, ok []bool) int {
	best, ties := -1, 0
	for i, s := range scores {
		if !ok[i] {
			continue
		}
		switch {
		case best < 0 || s < scores[best]:
			best, ties = i, 1
		case s == scores[best]:
			ties++
			if rand.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return best
}

// fetchReports fills reps/has from src for every candidate and reports whether any exists.
func fetchReports(src LoadSource, c []*worker.Live, reps []LoadReport, has []bool) bool {
	anyReport := false
	for i, w := range c {
		reps[i], has[i] = src(w)
		anyReport = anyReport || has[i]
	}
	return anyReport
}
