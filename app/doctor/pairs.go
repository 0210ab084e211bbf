package doctor

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/worker"
)

// Pair probe finding kinds (Options.ProbePair).
const (
	// KindPairRecomputes: a probe request through the pair was answered by a decode that
	// recomputed the prompt (its KV never arrived): every request on the pair does the same.
	KindPairRecomputes = "pair_recomputes"
	// KindPairProbeFailed: the probe request through the pair failed.
	KindPairProbeFailed = "pair_probe_failed"
	// KindPairProbeUnmeasured: the probe succeeded, but the decode reports no cached tokens,
	// so whether it received the KV cannot be told.
	KindPairProbeUnmeasured = "pair_probe_unmeasured"
	// KindPairsNotProbed: more compatible pairs than Options.MaxPairs (the rest were not
	// probed), or a gateway that cannot probe pairs (ErrPairProbeUnsupported).
	KindPairsNotProbed = "pairs_not_probed"
)

// ErrPairProbeUnsupported is returned by an Options.ProbePair whose gateway does not serve
// POST /workers/probe-pair (one older than the doctor): no pair is reported, one
// KindPairsNotProbed note says why.
var ErrPairProbeUnsupported = errors.New("the gateway does not serve POST /workers/probe-pair (older than this smg doctor)")

// Pair probe outcomes (PairProbe.Outcome), as POST /workers/probe-pair answers them.
const (
	PairKVReceived = "kv_received"
	PairRecomputed = "recomputed"
	PairUnmeasured = "unmeasured"
	PairFailed     = "failed"
)

// DefaultMaxPairs bounds the pairs probed when Options.MaxPairs is 0; PairConcurrency is how
// many pair probes run at once.
const (
	DefaultMaxPairs = 32
	PairConcurrency = 4
)

// PairProbe is what one probe request through a pair showed (the gateway's
// POST /workers/probe-pair answer).
type PairProbe struct {
	// Outcome is PairKVReceived, PairRecomputed, PairUnmeasured or PairFailed.
	Outcome string
	// Status, ErrorCode and Error describe a failed probe.
	Status           int
	ErrorCode, Error string
	// Connector is the pair's connector label; the token counts are the decode's usage
	// (0 when unmeasured).
	Connector                                    string
	PromptTokens, CachedTokens, RecomputedTokens int
}

// probePairs probes each compatible prefill/decode pair (registration order: each prefill's
// decodes in turn), at most o.MaxPairs of them, PairConcurrency at once, each bounded by
// o.PairTimeout, and returns the findings in pair order, then a KindPairsNotProbed note when
// pairs were left out (past o.MaxPairs, or with a worker in o.Draining).
func probePairs(ctx context.Context, prefills, decodes []*worker.Live, o Options) []Finding {
	if o.ProbePair == nil || len(prefills) == 0 || len(decodes) == 0 {
		return nil
	}
	limit := o.MaxPairs
	if limit <= 0 {
		limit = DefaultMaxPairs
	}
	type pair struct{ p, d *worker.Live }
	var pairs []pair
	mx := pairing.NewMatrix(prefills, decodes, o.Mode)
	draining := 0
	for _, p := range prefills {
		for _, d := range mx.CompatibleDecodes(p) {
			if o.Draining[p.ID] || o.Draining[d.ID] {
				draining++
				continue
			}
			pairs = append(pairs, pair{p, d})
		}
	}
	skipped := 0
	if len(pairs) > limit {
		skipped, pairs = len(pairs)-limit, pairs[:limit]
	}
	results := make([]PairProbe, len(pairs))
	errs := make([]error, len(pairs))
	sem := make(chan struct{}, PairConcurrency)
	var wg sync.WaitGroup
	for i, pr := range pairs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			pctx, cancel := context.WithTimeout(ctx, o.PairTimeout)
			defer cancel()
			results[i], errs[i] = o.ProbePair(pctx, pr.p.Worker, pr.d.Worker)
		}()
	}
	wg.Wait()
	var out []Finding
	for _, err := range errs {
		if errors.Is(err, ErrPairProbeUnsupported) {
			return []Finding{{Kind: KindPairsNotProbed, Severity: SeverityNote,
				Message: fmt.Sprintf("%d compatible prefill/decode pairs were not probed: %v", skipped+len(pairs), err)}}
		}
	}
	for i, pr := range pairs {
		if f, ok := pairFinding(pr.p.Worker, pr.d.Worker, results[i], errs[i]); ok {
			out = append(out, f)
		}
	}
	if skipped > 0 {
		out = append(out, Finding{Kind: KindPairsNotProbed, Severity: SeverityNote,
			Message: fmt.Sprintf("%d of %d compatible prefill/decode pairs were not probed (--probe-max-pairs %d)", skipped, skipped+len(pairs)+draining, limit)})
	}
	if draining > 0 {
		out = append(out, Finding{Kind: KindPairsNotProbed, Severity: SeverityNote,
			Message: fmt.Sprintf("%d of %d compatible prefill/decode pairs were not probed: their prefill or decode is draining", draining, skipped+len(pairs)+draining)})
	}
	return out
}

// pairFinding is the finding for one pair's probe; ok is false for a pair that received
// its KV.
func pairFinding(p, d worker.Worker, r PairProbe, err error) (Finding, bool) {
	f := Finding{PrefillID: p.ID, PrefillURL: p.URL, DecodeID: d.ID, DecodeURL: d.URL}
	name := fmt.Sprintf("prefill %s (%s) → decode %s (%s)", p.ID, p.URL, d.ID, d.URL)
	switch {
	case err != nil:
		f.Kind, f.Severity = KindPairProbeFailed, SeverityError
		f.Message = fmt.Sprintf("%s: the probe request could not be run (%s)", name, oneLine(err))
	case r.Outcome == PairRecomputed:
		f.Kind, f.Severity = KindPairRecomputes, SeverityError
		f.Message = fmt.Sprintf("%s recomputes: the decode reported %d of %d prompt tokens cached, so %d were recomputed (connector %s); its KV never arrives, on every request of this pair",
			name, r.CachedTokens, r.PromptTokens, r.RecomputedTokens, r.Connector)
	case r.Outcome == PairFailed:
		f.Kind, f.Severity = KindPairProbeFailed, SeverityError
		f.Message = fmt.Sprintf("%s: the probe request failed with %d %s: %s", name, r.Status, r.ErrorCode, r.Error)
	case r.Outcome == PairUnmeasured:
		f.Kind, f.Severity = KindPairProbeUnmeasured, SeverityNote
		f.Message = fmt.Sprintf("%s: the probe succeeded, but the decode reports no cached tokens (connector %s), so a recompute cannot be seen", name, r.Connector)
	case r.Outcome == PairKVReceived:
		return Finding{}, false
	default:
		f.Kind, f.Severity = KindPairProbeFailed, SeverityError
		f.Message = fmt.Sprintf("%s: the probe answered an unknown outcome %q", name, r.Outcome)
	}
	return f, true
}
