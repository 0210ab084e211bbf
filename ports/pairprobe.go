package ports

import "context"

// Pair probe outcomes (PairProbeResult.Outcome, the JSON "outcome" of POST
// /workers/probe-pair).
const (
	// PairProbeKVReceived: the decode reported the prompt as cached (within one KV page):
	// its KV came through the handoff.
	PairProbeKVReceived = "kv_received"
	// PairProbeRecomputed: the decode reported fewer cached tokens than the prompt by more
	// than one KV page: it recomputed the prompt (a silent recompute).
	PairProbeRecomputed = "recomputed"
	// PairProbeUnmeasured: the request succeeded but the decode's answer carried no cached
	// token count (an engine or connector that gives no signal): nothing can be said.
	PairProbeUnmeasured = "unmeasured"
	// PairProbeFailed: the request failed (Status, ErrorCode, Error say how).
	PairProbeFailed = "failed"
)

// PairProbeResult is what one probe request through a prefill/decode pair showed: the
// answer the client would have had, and what the silent-recompute detector saw in the
// decode's usage (dispatch.Recomputes.Note).
type PairProbeResult struct {
	PrefillID, PrefillURL string
	DecodeID, DecodeURL   string
	// Connector is the pair's connector label of smg_pd_recomputed_prompts_total (the
	// prefill's KV transport; passthrough when it has none).
	Connector string
	// Outcome is one of PairProbeKVReceived, PairProbeRecomputed, PairProbeUnmeasured,
	// PairProbeFailed.
	Outcome string
	// Status is the HTTP status the client would have been answered (200 on success).
	Status int
	// ErrorCode and Error describe a failed probe (the gateway's error body), "" otherwise.
	ErrorCode, Error string
	// Measured reports that the decode's answer carried its prompt and cached token counts;
	// PromptTokens, CachedTokens and RecomputedTokens are 0 when it did not.
	Measured bool
	// PromptTokens is the prompt length the decode reported, CachedTokens the tokens it
	// reported as cached, RecomputedTokens the tokens counted as recomputed (0 when the
	// shortfall is within one KV page; handoff.RecomputedTokens).
	PromptTokens, CachedTokens, RecomputedTokens int
	// ElapsedMS is the probe's wall time in milliseconds.
	ElapsedMS int64
}

// PairProber runs one small generation request through exactly one prefill/decode pair,
// bypassing selection (app/dispatch.Dispatcher, over HTTP or the gRPC pipeline). prefill
// and decode name registered workers by id or URL. It returns a *errs.Error for a request
// that cannot be probed (404 unknown worker, 400 a worker of the wrong role or a pair the
// pairing mode refuses); a probe that ran and failed is a PairProbeFailed result, not an
// error. Called by the admin API, rarely; each call costs one real prefill and decode.
type PairProber interface {
	ProbePair(ctx context.Context, prefill, decode string) (PairProbeResult, error)
}
