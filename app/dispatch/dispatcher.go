// Package dispatch is the PD request use case over HTTP: for each client request it picks a
// prefill/decode pair, runs the KV handoff the way the pair's engine expects — SGLang's
// parallel dispatch with a bootstrap room, vLLM's sequential dispatch with
// kv_transfer_params — and relays the decode output (seed "How It Works",
// "Failures, Cancellation, and Streaming").
package dispatch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/google/uuid"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/tenantbudget"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// PairSelector picks a compatible prefill/decode pair and accounts both as in flight until
// release is called (implemented by app/selection.Selector).
type PairSelector interface {
	Select(req *policy.Request) (prefill, decode *worker.Live, release func(), err error)
	SelectPrefillOnly(req *policy.Request) (prefill *worker.Live, release func(), err error)
}

// Admitter claims decode admission-window slots before a dispatch (issue #8); nil admits
// everything. release must be called when the decode leg ends, whatever the outcome.
type Admitter interface {
	Admit(ctx context.Context, decode *worker.Live, n int) (release func(), err error)
}

// OutcomeRecorder records the outcome of every leg the gateway contacted, for circuit
// breakers (issue #9). status is the leg's HTTP status, or 0 with err set for a transport
// failure, a body that broke, or a malformed answer. A non-2xx head is recorded when it
// arrives; a 2xx leg when its body ends (the prefill when its drain ends, the decode when
// its stream or body ends), so a decode that dies mid-stream counts as a failure. A leg the
// gateway cancelled itself (because the other leg failed, the client left or the request
// timed out) records nothing. The recorder decides what counts: 4xx client faults never do.
// Record is called from request goroutines concurrently and must be cheap.
type OutcomeRecorder interface {
	Record(w *worker.Live, status int, err error)
}

// RetryRecorder records retries (smg_worker_retries_total, smg_worker_retry_backoff_seconds,
// smg_worker_retries_exhausted_total). endpoint is "chat", "completions", "generate",
// "messages", "responses" or "rerank"; attempt is the 1-based number of the attempt about to
// run.
type RetryRecorder interface {
	Retry(endpoint string, attempt int, backoff time.Duration)
	Exhausted(endpoint string)
}

// Deps are the Dispatcher's collaborators.
type Deps struct {
	Config   config.Config
	Store    ports.WorkerStore
	Selector PairSelector
	Engine   ports.EngineClient
	// Metrics may be nil (no recording).
	Metrics ports.PDMetrics
	// Admission may be nil (no decode window gating).
	Admission Admitter
	// Outcomes may be nil (no circuit breakers).
	Outcomes OutcomeRecorder
	// Retries may be nil (retries not counted).
	Retries RetryRecorder
	// NeedsText reports whether a leg's policy reads the routing text (cache_aware, bucket).
	NeedsText bool
	// NeedsTokenIDs, when set, reports (per request, cheaply) whether a leg's policy would
	// score this request by its token ids (cache_aware with KV-event routing and at least one
	// worker subscribed): the gRPC pipeline, when it is a RoutingTokenizer, then tokenizes
	// before selection. nil: never.
	NeedsTokenIDs func() bool
	Logger        *slog.Logger
	// NewUUID mints request ids and Mooncake transfer ids; nil uses UUIDv7.
	NewUUID func() string
	// GRPC serves attempts whose selected pair has a gRPC leg (and count_tokens on a gRPC
	// prefill); nil: none (HTTP only).
	GRPC GRPCPipeline
	// Tenants authenticates (Guard, legHeaders); nil: --api-key alone.
	Tenants ports.TenantResolver
	// Budgets checks tenants' budgets at admission (chargeTenant); nil: none.
	Budgets *tenantbudget.Budgets
}

// Dispatcher serves the PD data-plane routes.
type Dispatcher struct {
	cfg       config.Config
	store     ports.WorkerStore
	sel       PairSelector
	engine    ports.EngineClient
	metrics   ports.PDMetrics
	admit     Admitter
	outcomes  OutcomeRecorder
	retries   RetryRecorder
	needsText bool
	needsIDs  func() bool
	log       *slog.Logger
	newUUID   func() string
	grpc      GRPCPipeline
	tenants   ports.TenantResolver
	budgets   *tenantbudget.Budgets
	// bodies bounds the request bodies held at once (--max-inflight-body-mb); nil: unbounded.
	bodies *bodyBudget
	// recomputes detects decodes that recomputed the prompt (non-streaming answers).
	recomputes Recomputes
	// routingKeys are cfg.RoutingKeyHeaders in canonical form: a lookup of a canonical name
	// does not allocate, one of "x-smg-routing-key" does on every request.
	routingKeys []string
}

// New builds a Dispatcher.
func New(d Deps) *Dispatcher {
	if d.Metrics == nil {
		d.Metrics = nopMetrics{}
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.NewUUID == nil {
		d.NewUUID = func() string { return uuid.Must(uuid.NewV7()).String() }
	}
	return &Dispatcher{tenants: orAPIKey(d.Tenants, d.Config.APIKey), budgets: d.Budgets, cfg: d.Config, store: d.Store, sel: d.Selector, engine: d.Engine,
		metrics: d.Metrics, admit: d.Admission, outcomes: d.Outcomes, retries: d.Retries, needsText: d.NeedsText, needsIDs: d.NeedsTokenIDs, log: d.Logger, newUUID: d.NewUUID, grpc: d.GRPC,
		bodies: newBodyBudget(d.Config.MaxInflightBodyMB, bodyBudgetWait), routingKeys: canonicalHeaders(d.Config.RoutingKeyHeaders)}
}

// Routes are the data-plane routes (seed "Supported APIs"): the generation APIs through a PD
// pair, token counting on one prefill worker, and a clear 501 for the APIs PD cannot serve.
func (d *Dispatcher) Routes() []ports.Route {
	var rs []ports.Route
	for _, p := range []string{wire.PathGenerate, wire.PathChatCompletions, wire.PathCompletions,
		wire.PathMessages, wire.PathResponses, wire.PathRerank, wire.PathRerankLegacy} {
		route, _ := handoff.RouteFor(p)
		rs = append(rs, ports.Route{Pattern: "POST " + p, Handler: d.pdHandler(route)})
	}
	rs = append(rs, ports.Route{Pattern: "POST " + wire.PathCountTokens, Handler: http.HandlerFunc(d.countTokens)})
	for _, p := range []string{"/v1/embeddings", "/v1/classify", "/classify", "/v1/score"} {
		rs = append(rs, ports.Route{Pattern: "POST " + p, Handler: http.HandlerFunc(unsupported)})
	}
	for _, p := range []string{"GET " + wire.PathResponses + "/{id}", "DELETE " + wire.PathResponses + "/{id}",
		"POST " + wire.PathResponses + "/{id}/cancel", "GET " + wire.PathResponses + "/{id}/input_items"} {
		rs = append(rs, ports.Route{Pattern: p, Handler: http.HandlerFunc(storedResponses)})
	}
	return rs
}

// storedResponses answers the stored-response routes of /v1/responses with a clear 501: a
// stored response lives on the decode engine that answered it, and the PD router does not
// track which one (ask again with "store": false, or keep the response on the client).
func storedResponses(w http.ResponseWriter, r *http.Request) {
	WriteError(w, errs.New(http.StatusNotImplemented, wire.CodeNotSupported,
		"%s %s is not supported in PD mode: a stored response lives on the decode worker that answered it, and the gateway does not track which one", r.Method, r.URL.Path))
}

func unsupported(w http.ResponseWriter, r *http.Request) {
	WriteError(w, errs.New(http.StatusNotImplemented, wire.CodeNotSupported,
		"%s is not supported in PD mode: embeddings and classification have no prefill/decode split", r.URL.Path))
}

// pdHandler serves one generation route through a PD pair, with retries that re-select
// both legs while nothing has reached the client (seed "Retries re-select both legs").
func (d *Dispatcher) pdHandler(route handoff.Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := d.epdRefusal(route); err != nil {
			WriteError(w, err)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), d.cfg.RequestTimeout)
		defer cancel()
		body, release, err := d.readBody(w, r)
		defer release()
		w = releaseOnCommit(w, release)
		if err != nil {
			WriteError(w, err)
			return
		}
		rq, err := handoff.Inspect(route, body)
		if err != nil {
			WriteError(w, err)
			return
		}
		if e := d.checkModel(rq.Model); e != nil {
			WriteError(w, e)
			return
		}
		preq := &policy.Request{Model: rq.Model, RoutingKey: d.routingKey(r.Header)}
		var tokenize func() []uint32
		if rt, ok := d.grpc.(RoutingTokenizer); ok && d.needsIDs != nil && d.needsIDs() {
			tokenize = func() []uint32 { return rt.RoutingTokens(rq) }
		}
		sizeRequest(preq, rq, tokenize)
		if d.needsText {
			preq.Text = rq.RoutingText()
		}
		hdr := d.legHeaders(r.Header)
		// The access log and RED series learn the model and endpoint. A client's X-Request-Id
		// is forwarded as sent (its values are checked, e.g. for MoRI-IO markers); the
		// gateway's own id (minted with the route's prefix, or read from another request-id
		// header) is not added, as SMG does not (middleware/request_id.rs keeps it in the
		// request's extensions): vLLM builds its response id as the route prefix plus
		// X-Request-Id, so a forwarded `chatcmpl-…` came back as `chatcmpl-chatcmpl-…`.
		ri := ports.RequestInfoFrom(r.Context())
		ri.SetRequest(rq.Model, route.Endpoint(), rq.Stream)
		w, settle, ok := d.chargeTenant(ctx, w, preq)
		if !ok {
			return
		}
		defer settle()

		attempts := d.cfg.RetryMaxRetries
		if d.cfg.DisableRetries || attempts < 1 {
			attempts = 1
		}
		var bo *backoff.ExponentialBackOff // built for the first retry: most requests have none
		var last error
		tr := &tries{}
		endpoint := route.Endpoint()
		exhausted := false
		for i := 0; i < attempts; i++ {
			if i > 0 {
				if bo == nil {
					bo = d.newBackOff()
				}
				delay := bo.NextBackOff()
				if d.retries != nil {
					d.retries.Retry(endpoint, i+1, delay)
				}
				t := time.NewTimer(delay)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					d.recordFault(tr.settle(false))
					markClientGone(ri, contextError(ctx, "waiting to retry"))
					WriteError(w, last)
					return
				}
			}
			committed, err := d.attempt(ctx, w, rq, preq, hdr, tr)
			markClientGone(ri, err)
			if err == nil || committed {
				d.recordFault(tr.settle(true))
				return
			}
			if i > 0 && (isSelectionError(err) || errors.Is(err, errOnlyUnresponsive)) {
				break // this request's own failures left no other worker: answer the last one
			}
			last = err
			if f := faultOf(err); f != nil && !d.faulted(ctx, tr, f, preq, i+1) {
				break
			}
			if e, ok := errs.As(err); !ok || !e.Retryable || ctx.Err() != nil {
				break
			}
			exhausted = i == attempts-1
			if !exhausted {
				d.log.InfoContext(ctx, "PD attempt failed; retrying with a new pair", "attempt", i+1, "err", err)
			}
		}
		d.recordFault(tr.settle(false))
		if exhausted && d.retries != nil {
			d.retries.Exhausted(endpoint)
		}
		if e, ok := errs.As(last); ok && e.Status == 499 {
			return // the client is gone: nobody reads an answer
		}
		WriteError(w, last)
	})
}

// markClientGone tells the access log that the client went away when err is the 499
// client_closed_request of a gone client (contextError), committed or not.
func markClientGone(ri *ports.RequestInfo, err error) {
	if e, ok := errs.As(err); ok && e.Status == 499 {
		ri.SetClientGone()
	}
}

// newBackOff is a request's retry backoff (--retry-initial-backoff-ms, --retry-jitter-factor,
// --retry-backoff-multiplier, --retry-max-backoff-ms), reset to its first interval.
func (d *Dispatcher) newBackOff() *backoff.ExponentialBackOff {
	bo := &backoff.ExponentialBackOff{
		InitialInterval:     time.Duration(d.cfg.RetryInitialBackoffMS) * time.Millisecond,
		RandomizationFactor: d.cfg.RetryJitterFactor,
		Multiplier:          d.cfg.RetryBackoffMult,
		MaxInterval:         time.Duration(d.cfg.RetryMaxBackoffMS) * time.Millisecond,
	}
	bo.Reset()
	return bo
}

// faulted records what an attempt's fault charges (tries.failed; the ledger waives a repeat
// of the leg's failure, on the same worker or another) and reports whether the request may be retried.
func (d *Dispatcher) faulted(ctx context.Context, tr *tries, f *legFault, preq *policy.Request, attempt int) bool {
	faults := tr.failed(f, preq)
	for _, h := range tr.held {
		d.recordHeld(h)
	}
	tr.held = tr.held[:0]
	for _, c := range faults {
		if rep := tr.ledger.admit(c); rep != repeatNone {
			// The same failure again on the leg: the request's, not the workers'. Counted
			// no further (the prefill answer it held was good), and not retried.
			c.recorded.Store(true)
			d.recordHeld(c.held)
			msg := "PD attempt failed the same way on a second worker; not retrying"
			if rep == repeatSameWorker {
				msg = "PD attempt failed the same way again on the same worker; counted once, not retrying"
			}
			d.log.WarnContext(ctx, msg, "attempt", attempt,
				"leg", c.e.Leg, "code", c.e.Code, "worker", c.w.DisplayURL(), "worker_id", c.w.ID)
			return false
		}
		d.recordFault(c)
	}
	return true
}

// attempt runs one dispatch on a freshly selected pair. committed reports that the response
// head reached the client, after which no retry is possible. An uncommitted failure blamed
// on one worker is a *legFault, recorded by the retry loop.
func (d *Dispatcher) attempt(ctx context.Context, w http.ResponseWriter, rq *handoff.Request,
	preq *policy.Request, hdr http.Header, tr *tries) (committed bool, err error) {
	ports.RequestInfoFrom(ctx).AddAttempt()
	if done, committed, err := d.prefillOnly(ctx, w, rq, preq, hdr, tr); done {
		return committed, err
	}
	if done, committed, err := d.decodeOnly(ctx, w, rq, preq, hdr, tr); done {
		return committed, err
	}
	p, dc, release, hooks, err := d.selectPair(preq)
	if err != nil {
		return false, err
	}
	defer release()
	ctx = withTokenHooks(ctx, hooks)
	if tr.unresponsive(p) || tr.unresponsive(dc) || tr.samePair(p, dc) {
		return false, errOnlyUnresponsive
	}
	tr.prefill, tr.decode = p.URL, dc.URL
	// The access log names the pair as selected, before any leg runs: the parallel prefill
	// leg is sent from its own goroutine, and a request that ends first (its client left)
	// must still name that prefill.
	ri := ports.RequestInfoFrom(ctx)
	ri.SetLeg("prefill", p.ID, string(p.Runtime))
	ri.SetLeg("decode", dc.ID, string(dc.Runtime))
	defer func() { avoidFailed(preq, err, p, dc) }()
	return d.dispatchPair(ctx, w, rq, preq, p, dc, hdr)
}

// relay answers the client from an open dispatch: a stream or a body.
func (d *Dispatcher) relay(w http.ResponseWriter, o *open) (bool, error) {
	if o.stream {
		return d.relayStream(w, o)
	}
	return d.relayBody(w, o)
}

// record reports a leg outcome to the OutcomeRecorder, if any.
func (d *Dispatcher) record(w *worker.Live, status int, err error) {
	if d.outcomes != nil {
		d.outcomes.Record(w, status, err)
	}
}

// admitDecode claims n decode slots when an Admitter is configured. A request whose context
// ends while it waits for a slot gets contextError (503 at the shutdown grace deadline, 504
// at the request timeout), not the bare context error (which would answer 500).
func (d *Dispatcher) admitDecode(ctx context.Context, dc *worker.Live, n int) (func(), error) {
	if d.admit == nil {
		return func() {}, nil
	}
	rel, err := d.admit.Admit(ctx, dc, n)
	if err != nil && ctx.Err() != nil {
		return nil, contextError(ctx, "waiting for a decode slot")
	}
	return rel, err
}

// readBody reads the client body within --max-payload-size, --body-read-timeout-secs and
// the in-flight body budget (--max-inflight-body-mb; readbody.go). The caller defers
// release, which gives the body's reservation back (also on error), and may release it
// earlier, as its response head is committed (releaseOnCommit): release is idempotent.
func (d *Dispatcher) readBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), err error) {
	h := d.bodies.hold(r.Context())
	b, err := readClientBody(w, r, d.cfg.MaxPayloadSize, d.cfg.BodyReadTimeout, h)
	return b, h.release, err
}

// checkModel refuses a model that no prefill or decode worker serves (404 model_not_found),
// instead of sending it to an arbitrary pair. An empty fleet is left to selection (503
// no_available_workers naming the leg); a body without a model matches every worker.
func (d *Dispatcher) checkModel(m string) *errs.Error {
	if m == "" {
		return nil
	}
	any := false
	for _, role := range []worker.Role{worker.RolePrefill, worker.RoleDecode} {
		for _, l := range d.store.ByRole(role) {
			any = true
			if l.ServesModel(m) {
				return nil
			}
		}
	}
	if !any {
		return nil
	}
	return errs.ModelNotFound(m)
}

// legHeaders are the client headers both legs carry (forwardHeaders). With --api-key or
// tenants' keys the client's Authorization is the gateway's own credential, not passed on:
// an engine gets the worker's api_key instead, when it has one (httpengine).
func (d *Dispatcher) legHeaders(in http.Header) http.Header {
	h := forwardHeaders(in, d.cfg.RequestIDHeaders)
	if d.tenants.AuthRequired() {
		h.Del("Authorization")
	}
	return h
}

// routingKey returns the first configured routing-key header's value (smg-spec.md §5.10).
func (d *Dispatcher) routingKey(h http.Header) string {
	for _, name := range d.routingKeys {
		if v := strings.TrimSpace(h.Get(name)); v != "" {
			return v
		}
	}
	return ""
}

// countTokens sends /v1/messages/count_tokens to one prefill worker, without bootstrap
// fields and without a decode leg (seed "Supported APIs": token counting generates nothing).
func (d *Dispatcher) countTokens(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), d.cfg.RequestTimeout)
	defer cancel()
	body, release, err := d.readBody(w, r)
	defer release()
	if err != nil {
		WriteError(w, err)
		return
	}
	rq, err := handoff.Inspect(handoff.RouteMessages, body)
	if err != nil {
		WriteError(w, err)
		return
	}
	p, release, err := d.sel.SelectPrefillOnly(&policy.Request{Model: rq.Model, RoutingKey: d.routingKey(r.Header)})
	if err != nil {
		WriteError(w, err)
		return
	}
	defer release()
	if d.grpc != nil && p.Mode == worker.ConnGRPC {
		if err := d.grpc.CountTokens(ctx, w, rq, p); err != nil {
			WriteError(w, err)
		}
		return
	}
	resp, err := d.engine.Send(ctx, ports.LegRequest{Worker: p, Path: r.URL.Path, Body: body, Header: d.legHeaders(r.Header)})
	if err != nil {
		WriteError(w, legTransportError("prefill", p, err, ctx))
		return
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, d.cfg.MaxPayloadSize))
	if err != nil {
		WriteError(w, &errs.Error{Status: http.StatusBadGateway, Code: wire.CodePrefillReadFailed, Leg: "prefill",
			Message: "Failed to read prefill response: " + err.Error()})
		return
	}
	copyResponseHeaders(w.Header(), resp.Header)
	w.WriteHeader(resp.Status)
	_, _ = w.Write(out)
}
