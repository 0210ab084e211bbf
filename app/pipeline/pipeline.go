// Package pipeline is the PD request use case over gRPC (seed "Parallel Dispatch",
// "Sequential Dispatch (vLLM)", "Decode Admission Window (gRPC)", "Context Length (gRPC)",
// "Parallel Sampling"): engines take and return token ids, so for each attempt on a gRPC
// pair the gateway runs the stages prepare (tokenizer, chat template, tokenize) → select
// (pair protocol, context length) → admit (decode window) → build (request ids, rooms,
// fan-out) → dispatch (parallel or sequential Generate RPCs, fail-fast, aborts) → respond
// (detokenize, stops, the OpenAI/SGLang body or SSE). Pair selection, retries, the blame
// ledger and breakers stay with app/dispatch, which hands a gRPC pair to Attempt.
package pipeline

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// Deps are the Pipeline's collaborators.
type Deps struct {
	Config config.Config
	// Text is the tokenizer registry (models loaded once, shared).
	Text *text.Registry
	// Engines runs the Generate and Abort RPCs.
	Engines ports.GRPCGenerator
	// Admission claims decode window rooms; nil admits everything.
	Admission dispatch.Admitter
	// Metrics may be nil.
	Metrics ports.PDMetrics
	// Outcomes records leg outcomes for the circuit breakers (successes, and failures after
	// the response was committed; uncommitted failures are recorded by dispatch's retry
	// loop); nil: none.
	Outcomes dispatch.OutcomeRecorder
	// DecodeTTFT records smg_router_ttft_seconds (the decode leg only); nil: none.
	DecodeTTFT ports.DecodeTTFTMetrics
	Logger     *slog.Logger
	// NewUUID mints request ids; nil uses UUIDv7.
	NewUUID func() string
	// DeferredAbortWait overrides DeferredAbortMaxWait (tests); 0 = the default.
	DeferredAbortWait time.Duration
	// Media fetches the media of gateway-processed requests; nil = mediafetch defaults.
	Media ports.MediaFetcher
	// Encoder sends EPD encode jobs and Encoders picks each media item's encode worker
	// (EPD mode only; nil outside it).
	Encoder  ports.GRPCEncoder
	Encoders EncodePicker
	// EngineIDs re-reads a prefill's KV engine id when a decode refuses it as stale;
	// nil: the id is only marked for the next health probe to re-read.
	EngineIDs EngineIDReader
	// Facts re-reads a worker's server and model info and applies what changed
	// (registry.Service.RefreshFacts): after a leg failed naming a stale fact (a stale
	// engine id, a model not found). nil: EngineIDs only.
	Facts func(ctx context.Context, w *worker.Live)
	// CachedTokens, when set, receives each prefill leg's engine-reported prompt and
	// cached tokens (its complete), for the KV router's predicted-vs-reported series.
	CachedTokens func(prefillURL string, prompt, cached int)
}

// Pipeline serves gRPC PD attempts. Safe for concurrent use; Close waits for the legs it
// retires in the background.
type Pipeline struct {
	cfg          config.Config
	text         *text.Registry
	gen          ports.GRPCGenerator
	admit        dispatch.Admitter
	metrics      ports.PDMetrics
	outcomes     dispatch.OutcomeRecorder
	decodeTTFT   ports.DecodeTTFTMetrics
	log          *slog.Logger
	newUUID      func() string
	deferredWait time.Duration
	media        *mediaPrep
	encoder      ports.GRPCEncoder
	encoders     EncodePicker
	engineIDs    EngineIDReader
	facts        func(ctx context.Context, w *worker.Live)
	refreshing   sync.Map // worker id -> struct{}: a facts refresh in flight (refreshFactsLater)
	warming      sync.Map // model -> time.Time: last background tokenizer load (warmTokenizer)
	cachedTokens func(prefillURL string, prompt, cached int)
	recomputes   dispatch.Recomputes

	bg        sync.WaitGroup
	closing   chan struct{}
	closeOnce sync.Once
}

var _ dispatch.GRPCPipeline = (*Pipeline)(nil)

// New builds a Pipeline.
func New(d Deps) *Pipeline {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.NewUUID == nil {
		d.NewUUID = func() string { return uuid.Must(uuid.NewV7()).String() }
	}
	if d.DeferredAbortWait <= 0 {
		d.DeferredAbortWait = DeferredAbortMaxWait
	}
	return &Pipeline{cfg: d.Config, text: d.Text, gen: d.Engines, admit: d.Admission, metrics: d.Metrics, outcomes: d.Outcomes, decodeTTFT: d.DecodeTTFT, log: d.Logger,
		newUUID: d.NewUUID, deferredWait: d.DeferredAbortWait, media: newMediaPrep(d.Media, d.Config),
		encoder: d.Encoder, encoders: d.Encoders, engineIDs: d.EngineIDs, facts: d.Facts, cachedTokens: d.CachedTokens, closing: make(chan struct{})}
}

// Close sends the deferred decode aborts now and waits (until ctx ends) for every leg
// retired in the background.
func (pl *Pipeline) Close(ctx context.Context) error {
	pl.closeOnce.Do(func() { close(pl.closing) })
	done := make(chan struct{})
	go func() { pl.bg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Attempt runs every stage once on the selected pair (a retry runs them all again: fresh
// ids, rooms and claims).
func (pl *Pipeline) Attempt(ctx context.Context, w http.ResponseWriter, rq *handoff.Request, p, dc *worker.Live, _ http.Header) (bool, error) {
	// The access log and the RED series learn the pair as on the HTTP path, failures included.
	ri := ports.RequestInfoFrom(ctx)
	ri.SetLeg("prefill", p.ID, string(p.Runtime))
	ri.SetLeg("decode", dc.ID, string(dc.Runtime))
	return pl.attempt(ctx, w, rq, p, dc, false)
}

// AttemptLocal serves a decode-only or prefill-only request (selective PD) on one gRPC vLLM
// worker dc (a kv_both decode or prefill, or a regular worker): the sequential vLLM path
// without its prefill leg, the one leg sent with no kv_transfer_params and no bootstrap, so
// the engine prefills the prompt itself; the usage is that leg's own prompt counts, not
// read as a recompute. dc must be a vLLM worker (pdmode.CanServeAlone or
// CanServePrefillOnly); another runtime fails like an unsupported pair.
func (pl *Pipeline) AttemptLocal(ctx context.Context, w http.ResponseWriter, rq *handoff.Request, dc *worker.Live, _ http.Header) (bool, error) {
	return pl.attempt(ctx, w, rq, dc, dc, true)
}

// attempt is Attempt; local serves dc alone (AttemptLocal, p == dc).
func (pl *Pipeline) attempt(ctx context.Context, w http.ResponseWriter, rq *handoff.Request, p, dc *worker.Live, local bool) (bool, error) {
	ri := ports.RequestInfoFrom(ctx)
	ri.SetConnMode(string(worker.ConnGRPC))
	proto, err := checkPair(p, dc)
	if err == nil && local && proto != sequentialVLLM {
		err = errs.New(http.StatusBadRequest, wire.CodeRuntimePDNotSupported, "worker %s (%s) cannot serve a request alone over gRPC", dc.ID, dc.Runtime)
	}
	if err != nil {
		return false, err
	}
	j, err := pl.prepare(ctx, rq, p, dc)
	if err != nil {
		return false, err
	}
	dispatch.PromptTokensCounted(ctx, j.promptTokens()) // the selection only estimated it
	applyDecodeDefaults(&j.sampling, dc)
	if err := pl.prepareMedia(ctx, j, proto, p); err != nil {
		return false, err
	}
	if j.mm != nil {
		defer j.mm.hold.releaseAll() // the pixel values live until the attempt ends
	}
	if err := checkContext(j, p, dc); err != nil {
		return false, err
	}
	clientID, base := pl.responseID(j)
	base = pl.engineBase(j, ri.RequestID(), base)
	units := pl.plan(j, proto, base, p, dc)
	for i := range units {
		if units[i].local = local; local {
			// No prefill leg: the decode computes the prompt, so its prompt logprobs too.
			units[i].dLeg.PromptLogprobs = units[i].pLeg.PromptLogprobs
		}
	}
	pl.logPair(ctx, rq, p, dc, units)
	if err := attachMedia(j, proto, units, dc); err != nil {
		return false, err
	}
	release, err := pl.admitRooms(ctx, dc, len(units))
	if err != nil {
		return false, err
	}
	defer release()
	// EPD: the encode jobs are planned and sent only once admission succeeded (grpc.md §1.13).
	jobs, err := pl.planEncode(j, proto, units)
	if err != nil {
		return false, err
	}
	pl.sendEncodes(ctx, jobs, units)
	r := pl.newResponder(j, w, clientID, units)
	if proto == sequentialVLLM {
		err = pl.sequential(ctx, units, r)
	} else {
		err = pl.parallel(ctx, units, r)
	}
	if f, ok := err.(*fault); ok {
		committed := r.isCommitted()
		if committed {
			pl.record(f.w, f.status) // after the commit the retry loop records nothing
			r.fail(f.err)
		}
		return committed, f.err
	}
	if err != nil {
		committed := r.isCommitted()
		if committed {
			r.fail(err)
		}
		return committed, err
	}
	r.finish()
	return true, nil
}

// engineBase is the base of the attempt's engine request ids: without a body rid, the
// gateway's request id (the client's X-Request-Id, or the one it minted: the access line's
// request_id) becomes "{id}-{uuidv7}", fresh on every attempt (grpc.md §1.7, smg-spec.md
// §9.5), so the engines' logs are found with the same grep; else base as built.
func (pl *Pipeline) engineBase(j *job, requestID, base string) string {
	if j.rid != "" || requestID == "" {
		return base
	}
	return requestID + "-" + pl.newUUID()
}

// admitRooms is the admit stage: one room per backend request on the decode worker's
// window (grpc.md §1.4), through the shared Admitter.
func (pl *Pipeline) admitRooms(ctx context.Context, dc *worker.Live, n int) (func(), error) {
	if pl.admit == nil {
		return func() {}, nil
	}
	rel, err := pl.admit.Admit(ctx, dc, n)
	if err != nil {
		if ctx.Err() != nil {
			return nil, dispatch.ContextError(ctx, "waiting for a decode slot")
		}
		return nil, err
	}
	return rel, nil
}

// observeDecodeTTFT records a decode leg's first output, dispatched at start, and the
// request's TTFT (from its arrival at the gateway) for the access log.
func (pl *Pipeline) observeDecodeTTFT(ctx context.Context, j *job, start time.Time) {
	if ri := ports.RequestInfoFrom(ctx); ri != nil && !ri.Start.IsZero() {
		ri.FirstToken(time.Since(ri.Start))
	}
	if pl.decodeTTFT != nil {
		pl.decodeTTFT.ObserveDecodeTTFT(j.name, j.rq.Route.Endpoint(), time.Since(start))
	}
}
