package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/smg-go/smg/adapters/httpauth"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/ports"
)

// ProbePairRequest is the POST /workers/probe-pair body.
type ProbePairRequest struct {
	Prefill string `json:"prefill" minLength:"1" doc:"The prefill worker: its id (GET /workers) or its URL as registered."`
	Decode  string `json:"decode" minLength:"1" doc:"The decode worker: its id or its URL as registered."`
}

// ProbePairResult is the POST /workers/probe-pair answer: what one request through the
// pair showed (ports.PairProbeResult).
type ProbePairResult struct {
	PrefillID  string `json:"prefill_id" doc:"The prefill worker's id."`
	PrefillURL string `json:"prefill_url" doc:"The prefill worker's URL (credentials redacted)."`
	DecodeID   string `json:"decode_id" doc:"The decode worker's id."`
	DecodeURL  string `json:"decode_url" doc:"The decode worker's URL (credentials redacted)."`
	Connector  string `json:"connector" doc:"The pair's connector label of smg_pd_recomputed_prompts_total (the prefill's KV transport, passthrough without one)."`
	Outcome    string `json:"outcome" enum:"kv_received,recomputed,unmeasured,failed" doc:"kv_received: the decode reported the prompt cached (within one KV page); recomputed: it recomputed the prompt (a silent recompute, counted in smg_pd_recomputed_prompts_total); unmeasured: the answer carried no cached-token count (the engine or connector gives no signal); failed: the request failed."`
	Recomputed bool   `json:"recomputed" doc:"outcome == recomputed. False also when unmeasured: read measured first."`
	Measured   bool   `json:"measured" doc:"The decode's answer carried its prompt and cached token counts (usage.prompt_tokens_details.cached_tokens, or the gRPC complete's cached_tokens)."`
	Status     int    `json:"status" doc:"HTTP status a client would have been answered."`
	ErrorCode  string `json:"error_code,omitempty" doc:"The error code of a failed probe (the gateway's error body)."`
	Error      string `json:"error,omitempty" doc:"The error message of a failed probe."`

	PromptTokens     int   `json:"prompt_tokens" doc:"Prompt tokens the decode reported (0 when unmeasured)."`
	CachedTokens     int   `json:"cached_tokens" doc:"Prompt tokens the decode reported as cached, i.e. received through the KV handoff (0 when unmeasured)."`
	RecomputedTokens int   `json:"recomputed_tokens" doc:"Prompt tokens counted as recomputed (0 when the shortfall is within one KV page)."`
	ElapsedMS        int64 `json:"elapsed_ms" doc:"Wall time of the probe request in milliseconds."`
}

type probePairInput struct {
	Body ProbePairRequest
}

type probePairOutput struct {
	Body ProbePairResult
}

// registerProbePair adds POST /workers/probe-pair (admin key when set).
func registerProbePair(h huma.API, d Deps) {
	huma.Register(h, huma.Operation{
		OperationID: "probe-pair",
		Middlewares: huma.Middlewares{requireKey(h, httpauth.NewKey(d.Auth.AdminAPIKey), "admin API key (--admin-api-key)")},
		Security:    security(SchemeAdmin),
		Method:      http.MethodPost,
		Path:        "/workers/probe-pair",
		Summary:     "Probe one prefill/decode pair for silent recomputes",
		Description: "Runs one non-streaming one-token /v1/completions request (a prompt of a few hundred tokens starting with a fresh id) through exactly this prefill and this decode, bypassing selection and retries, " +
			"and reports what the silent-recompute detector read from the decode's usage: kv_received, recomputed, unmeasured (the engine or connector reports no cached tokens) or failed. " +
			"The probe is a real request: a recompute it shows moves smg_pd_recomputed_prompts_total (the decode did recompute) and its legs' outcomes reach the circuit breakers. " +
			"A probe that ran and failed answers 200 with outcome failed; 404 for an unknown worker, 400 for a worker of the wrong role, a draining worker or a pair --pd-pairing-mode refuses. `smg doctor --probe-requests` probes every compatible pair through it.",
		Tags:   []string{tagWorkers},
		Errors: []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusServiceUnavailable},
	}, func(ctx context.Context, in *probePairInput) (*probePairOutput, error) {
		if d.Prober == nil {
			return nil, NewErrorBody(http.StatusServiceUnavailable, wire.CodeWorkerInternalError, "this gateway has no PD dispatcher to probe pairs with")
		}
		r, err := d.Prober.ProbePair(ctx, in.Body.Prefill, in.Body.Decode)
		if err != nil {
			return nil, toErrorBody(err)
		}
		return &probePairOutput{Body: probePairResult(r)}, nil
	})
}

func probePairResult(r ports.PairProbeResult) ProbePairResult {
	return ProbePairResult{PrefillID: r.PrefillID, PrefillURL: r.PrefillURL, DecodeID: r.DecodeID, DecodeURL: r.DecodeURL,
		Connector: r.Connector, Outcome: r.Outcome, Recomputed: r.Outcome == ports.PairProbeRecomputed, Measured: r.Measured,
		Status: r.Status, ErrorCode: r.ErrorCode, Error: r.Error, PromptTokens: r.PromptTokens, CachedTokens: r.CachedTokens,
		RecomputedTokens: r.RecomputedTokens, ElapsedMS: r.ElapsedMS}
}
