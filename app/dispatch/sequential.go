package dispatch

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// sequential runs a vLLM pair (seed "Sequential Dispatch (vLLM)"; smg-spec.md §2.10): a
// one-token prefill leg tagged by the prefill's connector, then — only after it succeeded —
// the decode leg carrying kv_transfer_params. A prefill failure never reaches the decode
// worker. Every fallback to a local recompute is counted.
func (d *Dispatcher) sequential(ctx context.Context, w http.ResponseWriter, rq *handoff.Request,
	p, dc *worker.Live, hdr http.Header) (committed bool, err error) {
	conn, err := handoff.ConnectorForPair(p.Worker, dc.Worker, d.newUUID)
	if err != nil {
		return false, err
	}
	plan, err := handoff.PlanSequential(conn, rq)
	if err != nil {
		return false, err
	}
	d.metrics.IncConnectorMode(plan.Mode)
	// vLLM matches both legs by X-Request-Id: keep the client's, else mint one per attempt, so
	// a retry on a new pair never reuses the failed attempt's id (engines.md §3.2).
	if hdr.Get(wire.HeaderRequestID) == "" {
		hdr = hdr.Clone()
		hdr.Set(wire.HeaderRequestID, d.newUUID())
	}
	// Claim the decode slot before the prefill computes anything: a shed after the prefill
	// would leave its KV held for nobody.
	rel, err := d.admitDecode(ctx, dc, 1)
	if err != nil {
		return false, err
	}
	defer rel()
	legCtx, cancel, detach := legContext(ctx)
	o := &open{prefill: p, decode: dc, start: time.Now(), ctx: legCtx, cancel: cancel, detach: detach, reqCtx: ctx,
		stream: rq.Stream, model: metricModel(rq.Model, p), runtime: string(p.Runtime), route: rq.Route}
	o.prefillDone.Store(true) // the decode leg starts only once the prefill answered
	o.holdPrefill = true
	path := rq.Route.Path()

	var prefillBody []byte
	var prefillBuf *bytes.Buffer // pooled; released once the decode body is built
	if !plan.SkipPrefill {
		b, err := d.sequentialPrefill(o, ports.LegRequest{Worker: p, Path: path, Body: plan.Prefill, Header: hdr}, nil)
		if err != nil {
			return false, err
		}
		prefillBuf, prefillBody = b, b.Bytes()
	}
	// The prefill leg ended (sequentialPrefill frees its tokens), or there was none.
	prefillEnded(ctx)
	decodeBody, outcome := plan.Decode(prefillBody) // a fresh body: the prefill's bytes are copied
	if prefillBuf != nil {
		putBody(prefillBuf)
		prefillBody = nil
	}
	o.kvPull = outcome == handoff.OutcomeRelayed || outcome == handoff.OutcomeMinted
	if !o.kvPull {
		d.releasePrefill(o) // no KV to lose: the prefill's answer stands
	}
	switch outcome {
	case handoff.OutcomeKVTransferFailure:
		d.metrics.IncKVTransferFailure()
		d.log.WarnContext(ctx, "NIXL prefill returned no kv_transfer_params; decode recomputes the prompt",
			"prefill", p.URL, "decode", dc.URL)
	case handoff.OutcomeRecompute:
		d.log.WarnContext(ctx, "Mooncake prefill has no kv_engine_id; no prefill leg sent, decode recomputes the prompt", "prefill", p.DisplayURL())
	}
	if d.log.Enabled(ctx, slog.LevelDebug) {
		d.log.DebugContext(ctx, "vLLM PD pair", "prefill", p.DisplayURL(), "decode", dc.DisplayURL(), "mode", plan.Mode,
			"transfer_id", plan.TransferID, "outcome", outcome.String(),
			"params_relayed", outcome == handoff.OutcomeRelayed || outcome == handoff.OutcomeMinted)
	}

	return d.sequentialDecode(w, o, ports.LegRequest{Worker: dc, Path: path, Body: decodeBody, Header: hdr})
}

// sequentialDecode sends the decode leg of a sequential dispatch, once the prefill answered
// (o.prefillDone), and relays its answer. A decode failure before anything reached the
// client is the attempt's *legFault blamed on the decode; a 500 after a KV handoff is
// ambiguous with the prefill (kvLoadFault), and the retry loop settles it.
func (d *Dispatcher) sequentialDecode(w http.ResponseWriter, o *open, req ports.LegRequest) (committed bool, err error) {
	ctx, dc := o.reqCtx, o.decode
	o.dtimer = d.decodeTimer(o)
	resp, err := d.engine.Send(o.ctx, req)
	if err != nil {
		o.dtimer.stop()
		d.releasePrefill(o)
		return false, d.attemptError(ctx, o, func() *legFault {
			return &legFault{w: dc, cause: err, e: legTransportError("decode", dc, err, ctx)}
		})
	}
	if !ok2xx(resp.Status) {
		body := readLimited(resp.Body)
		o.dtimer.stop()
		aerr := d.attemptError(ctx, o, func() *legFault {
			if o.kvPull { // a decode-only leg (no prefill) never loads handed-off KV
				if sf := staleEngineIDFault(o.prefill, dc, resp.Status, body); sf != nil {
					o.takeHeld() // the prefill's answer handed off under a stale id: no success
					return sf
				}
			}
			f := &legFault{w: dc, status: resp.Status, e: decodeError(resp.Status, body)}
			if o.kvPull && resp.Status == http.StatusInternalServerError {
				return kvLoadFault(f, o.prefill, o.takeHeld())
			}
			return f
		})
		d.releasePrefill(o) // unless the fault took it
		return false, aerr
	}
	if !o.stream || !o.kvPull {
		d.releasePrefill(o) // a stream's first output decides (relayStream)
	}
	// The decode's outcome is recorded when its body ends (relayStream, relayBody).
	o.decodeResp = resp
	if !o.stream {
		o.decodeOut.Store(true) // the deadline runs on until the body is read (relayBody)
	}
	defer func() { d.finish(o, committed) }()
	return d.relay(w, o)
}

// releasePrefill records the sequential prefill's held success, once (recordHeld: not when
// the prefill failed since it answered).
func (d *Dispatcher) releasePrefill(o *open) {
	d.recordHeld(o.takeHeld())
}

// sequentialPrefill runs the vLLM prefill leg to its end within --prefill-timeout-secs and
// returns its checked JSON body (pooled: the caller releases it with putBody), or the
// attempt's error (a *legFault unless the client or the request timeout ended it). A
// prefill failure never reaches the decode worker. check, when not nil, vets the body
// before the prefill's success is recorded: its fault (a handoff no decode can use) fails
// the attempt instead.
func (d *Dispatcher) sequentialPrefill(o *open, req ports.LegRequest, check func([]byte) *legFault) (*bytes.Buffer, error) {
	defer prefillEnded(o.reqCtx) // the prefill's tokens are done, whatever the outcome
	p := o.prefill
	ptimer := startLegTimer(d.cfg.PrefillTimeout, func() { o.cancel(d.prefillTimeoutFault(p, "did not answer")) })
	defer ptimer.stop()
	fault := func(fallback func() *legFault) error { return d.attemptError(o.reqCtx, o, fallback) }
	resp, err := d.engine.Send(o.ctx, req)
	if err != nil {
		return nil, fault(func() *legFault {
			return &legFault{w: p, cause: err, e: legTransportError("prefill", p, err, o.reqCtx)}
		})
	}
	if !ok2xx(resp.Status) {
		body := readLimited(resp.Body)
		return nil, fault(func() *legFault {
			return &legFault{w: p, status: resp.Status, e: &errs.Error{Status: resp.Status, Code: wire.CodePrefillUpstreamError,
				Leg: "prefill", Retryable: retryableStatus(resp.Status), Message: upstreamMessage(body)}}
		})
	}
	buf, err := readPooled(resp.Body, d.cfg.MaxPayloadSize, contentLength(resp.Header))
	_ = resp.Body.Close()
	if err != nil {
		putBody(buf)
		return nil, fault(func() *legFault { return &legFault{w: p, cause: err, e: prefillReadFailed(p, err)} })
	}
	if checkJSONBody(resp.Header, buf.Bytes()) != nil {
		// A garbled prefill answer is an engine fault, not a handoff without params: fail
		// the attempt (a retry re-selects both legs) instead of a silent decode recompute.
		n := buf.Len()
		putBody(buf)
		return nil, fault(func() *legFault {
			return &legFault{w: p, status: http.StatusBadGateway, cause: errMalformed, e: prefillInvalid(p, fmt.Errorf("%d bytes that are not valid JSON", n))}
		})
	}
	if check != nil {
		if f := check(buf.Bytes()); f != nil {
			putBody(buf)
			return nil, fault(func() *legFault { return f })
		}
	}
	if o.holdPrefill {
		o.held = &heldOutcome{w: p, status: resp.Status, at: time.Now()}
	} else {
		d.record(p, resp.Status, nil)
	}
	d.metrics.ObservePrefillDuration(o.model, o.runtime, time.Since(o.start))
	if u, ok := handoff.PrefillUsage(o.route, buf.Bytes()); ok {
		o.usage = &u
	}
	return buf, nil
}
