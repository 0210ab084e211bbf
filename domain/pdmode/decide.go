package pdmode

// Decision is how one request is served: the smg_pd_decisions_total `decision` label.
type Decision string

// The decisions.
const (
	// Disaggregated runs the usual prefill and decode legs on a selected pair.
	Disaggregated Decision = "disaggregated"
	// DecodeOnly sends the whole request to one worker that prefills it locally.
	DecodeOnly Decision = "decode_only"
	// PrefillOnly sends the whole request, prompt and output, to one prefill-capable worker
	// (CanServePrefillOnly): no decode leg, no KV transfer.
	PrefillOnly Decision = "prefill_only"
)

// Reasons: the smg_pd_decisions_total `reason` label, one per branch of Config.Decide.
const (
	// ReasonUncachedBelow: the chosen worker's uncached prompt tokens are at most
	// Config.UncachedTokens (decode_only).
	ReasonUncachedBelow = "uncached_below_threshold"
	// ReasonPrefillBusy: every available prefill holds at least Config.PrefillBusyRequests
	// in-flight requests (decode_only).
	ReasonPrefillBusy = "prefill_busy"
	// ReasonUncachedAbove: the uncached tokens exceed the threshold and the prefill pool is
	// not busy (disaggregated).
	ReasonUncachedAbove = "uncached_above_threshold"
	// ReasonDecodeBusy: every capable worker holds at least Config.DecodeMaxRequests
	// in-flight requests, so none has headroom for a local prefill (disaggregated).
	ReasonDecodeBusy = "decode_busy"
	// ReasonNoLocalWorker: no available worker serving the model can prefill locally
	// (disaggregated).
	ReasonNoLocalWorker = "no_local_worker"
	// ReasonOutputBelow: the request's max_tokens is at most Config.PrefillOnlyMaxTokens
	// (prefill_only).
	ReasonOutputBelow = "output_below_threshold"
)

// Config holds the thresholds (flags --selective-pd-*). The zero value is off.
type Config struct {
	// UncachedTokens (--selective-pd-uncached-tokens, 0 = off): a request whose uncached
	// prompt tokens on the chosen worker are at most this many is served decode-only.
	UncachedTokens int
	// PrefillBusyRequests (--selective-pd-prefill-busy-requests, 0 = off): when the least
	// loaded available prefill holds at least this many in-flight requests, a request is
	// served decode-only whatever its size (Dynamo's prefill_load policy).
	PrefillBusyRequests int
	// DecodeMaxRequests (--selective-pd-decode-max-requests, 0 = no guard): a capable
	// worker holding at least this many in-flight requests takes no decode-only request
	// (Dynamo's decode-busy guard: a local prefill stalls the decodes it runs).
	DecodeMaxRequests int
	// PrefillOnlyMaxTokens (--selective-pd-prefill-only-max-tokens, 0 = off): a request
	// whose max_tokens (per sample, set by the client) is at most this many is served whole
	// by one prefill-capable worker (CanServePrefillOnly), when one is available: the output
	// is too short to pay for a decode leg and a KV transfer.
	PrefillOnlyMaxTokens int
}

// PrefillOnlyWanted reports whether a request capped at maxTokens output tokens per sample
// (0 = uncapped) is one for a prefill-only worker: PrefillOnlyMaxTokens is set and the cap
// is at most it. An uncapped request never is.
func (c Config) PrefillOnlyWanted(maxTokens int) bool {
	return c.PrefillOnlyMaxTokens > 0 && maxTokens > 0 && maxTokens <= c.PrefillOnlyMaxTokens
}

// Enabled reports whether any decode-only trigger is set; when false the dispatcher skips
// the decode-only decision entirely (always disaggregated, nothing counted). The
// prefill-only trigger is separate (PrefillOnlyWanted).
func (c Config) Enabled() bool { return c.UncachedTokens > 0 || c.PrefillBusyRequests > 0 }

// Candidate is one worker that can serve a request alone, as the decision sees it.
type Candidate struct {
	// Cached is the prompt tokens the worker already holds (its longest cached prefix).
	Cached int
	// Load is the worker's in-flight requests.
	Load int64
}

// Input is what one decision reads.
type Input struct {
	// PromptTokens is the prompt size in tokens (counted, or estimated from the body).
	PromptTokens int
	// Candidates are the available capable workers serving the request's model.
	Candidates []Candidate
	// PrefillMinLoad is the least in-flight requests among the available prefills serving
	// the model; negative when there are none (the prefill pool counts as busy then).
	PrefillMinLoad int64
}

// Decide returns the decision for in, its reason, and for DecodeOnly the index in
// in.Candidates of the worker that serves it (-1 otherwise). The chosen worker is the one
// with the fewest uncached tokens (prompt minus cached, at least 0) among those under the
// DecodeMaxRequests guard, ties to the lower load, then the lower index. Branches, in order:
// no candidate → no_local_worker; none under the guard → decode_busy; uncached ≤
// UncachedTokens (with UncachedTokens > 0) → decode_only; prefill pool busy → decode_only;
// else uncached_above_threshold. O(len(in.Candidates)), no allocation.
func (c Config) Decide(in Input) (d Decision, reason string, chosen int) {
	if len(in.Candidates) == 0 {
		return Disaggregated, ReasonNoLocalWorker, -1
	}
	best, bestUncached := -1, 0
	for i, cd := range in.Candidates {
		if c.DecodeMaxRequests > 0 && cd.Load >= int64(c.DecodeMaxRequests) {
			continue
		}
		u := Uncached(in.PromptTokens, cd.Cached)
		if best < 0 || u < bestUncached || (u == bestUncached && cd.Load < in.Candidates[best].Load) {
			best, bestUncached = i, u
		}
	}
	switch {
	case best < 0:
		return Disaggregated, ReasonDecodeBusy, -1
	case c.UncachedTokens > 0 && bestUncached <= c.UncachedTokens:
		return DecodeOnly, ReasonUncachedBelow, best
	case c.PrefillBusyRequests > 0 && (in.PrefillMinLoad < 0 || in.PrefillMinLoad >= int64(c.PrefillBusyRequests)):
		return DecodeOnly, ReasonPrefillBusy, best
	}
	return Disaggregated, ReasonUncachedAbove, -1
}

// Uncached is the prompt tokens a worker holding cached of them must still compute: prompt
// − cached, at least 0.
func Uncached(prompt, cached int) int { return max(prompt-max(cached, 0), 0) }
