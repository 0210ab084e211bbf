package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// errBadHandoff is what a prefill's breaker records for a MoRI-IO handoff no decode could
// use (an engine fault, like a malformed body).
var errBadHandoff = errors.New("MoRI-IO handoff invalid")

// moriio runs a vLLM MoRIIOConnector pair over HTTP (seed "MoRI-IO (HTTP)"). Before any leg
// is contacted it refuses what the pair cannot serve: the route, fan-out and reserved
// request ids (handoff.CheckMoRIIORequest), then a misconfigured pair (503
// moriio_pair_misconfigured, the reason logged, counted in smg_pd_kv_transfer_failures_total).
// READ and sequential WRITE send the prefill leg, check its handoff, and only then the
// decode leg; concurrent WRITE sends both at once (moriioConcurrent). A MoRI-IO decode never
// recomputes, so a handoff that fails its check fails the attempt with 502
// moriio_handoff_invalid (counted too) instead of reaching a decode engine.
func (d *Dispatcher) moriio(ctx context.Context, w http.ResponseWriter, rq *handoff.Request,
	p, dc *worker.Live, hdr http.Header) (committed bool, err error) {
	if err := handoff.CheckMoRIIORequest(rq, hdr.Values(wire.HeaderRequestID)); err != nil {
		return false, err
	}
	pair, ref := handoff.CheckMoRIIOPair(p.Worker, dc.Worker)
	if ref != nil {
		d.metrics.IncKVTransferFailure()
		d.log.Warn("MoRI-IO pair misconfigured; refused before contacting either leg",
			"prefill", p.URL, "decode", dc.URL, "leg", ref.Leg, "reason", ref.Reason)
		return false, ref.Err()
	}
	plan, err := handoff.PlanMoRIIO(pair, rq, d.newUUID)
	if err != nil {
		return false, err
	}
	d.metrics.IncConnectorMode(wire.ModeMoRIIO)
	if hdr.Get(wire.HeaderRequestID) == "" {
		hdr = hdr.Clone()
		hdr.Set(wire.HeaderRequestID, d.newUUID())
	}
	rel, err := d.admitDecode(ctx, dc, 1)
	if err != nil {
		return false, err
	}
	defer rel()
	d.log.Debug("MoRI-IO PD pair", "prefill", p.URL, "decode", dc.URL, "mode", pair.Prefill.Mode,
		"concurrent", pair.Concurrent, "transfer_id", plan.TransferID)
	legCtx, cancel, detach := legContext(ctx)
	o := &open{prefill: p, decode: dc, start: time.Now(), ctx: legCtx, cancel: cancel, detach: detach, reqCtx: ctx,
		stream: rq.Stream, model: metricModel(rq.Model, p), runtime: string(p.Runtime), route: rq.Route}
	path := rq.Route.Path()
	if pair.Concurrent {
		return d.moriioConcurrent(w, o, plan, hdr)
	}
	var params []byte
	check := func(body []byte) *legFault {
		var err error
		if params, err = plan.CheckHandoff(body); err != nil {
			return d.handoffFault(p, dc, plan, err)
		}
		params = append([]byte(nil), params...) // the body goes back to the pool
		return nil
	}
	buf, err := d.sequentialPrefill(o, ports.LegRequest{Worker: p, Path: path, Body: plan.Prefill, Header: hdr}, check)
	if err != nil {
		return false, err
	}
	putBody(buf)
	o.prefillDone.Store(true)
	return d.sequentialDecode(w, o, ports.LegRequest{Worker: dc, Path: path, Body: plan.DecodeBody(params), Header: hdr})
}

// handoffFault counts and logs a handoff that failed its check and returns the attempt's
// fault, blamed on the prefill that returned it: a 502 answer of that worker, not a
// transport failure.
func (d *Dispatcher) handoffFault(p, dc *worker.Live, plan *handoff.MoRIIOPlan, err error) *legFault {
	d.metrics.IncKVTransferFailure()
	e, ok := errs.As(err)
	if !ok {
		e = &errs.Error{Status: http.StatusBadGateway, Code: wire.CodeMoRIIOHandoffInvalid, Leg: "prefill", Retryable: true, Message: err.Error()}
	}
	d.log.Warn("MoRI-IO prefill returned an unusable handoff; the decode leg is not sent or is dropped",
		"prefill", p.URL, "decode", dc.URL, "transfer_id", plan.TransferID, "concurrent", plan.Pair.Concurrent, "why", e.Message)
	// The prefill answered: its breaker counts a failure (the cause), and
	// smg_worker_errors_total counts a backend_error (status 502), not a connection_error.
	return &legFault{w: p, status: http.StatusBadGateway, cause: errBadHandoff, e: e}
}

// moriioConcurrent sends both WRITE legs at once (seed "WRITE dispatch: sequential by
// default, concurrent opt-in"): the decode leg carries the params minted up front, so its
// engine allocates blocks while the prefill pushes into them. The first leg to fail ends the
// attempt and cancels the other with its *legFault (which then records no outcome): a
// prefill error status passes through as prefill_upstream_error, a prefill that sends no
// answer within --prefill-timeout-secs is prefill_timeout, a decode transport error is 502
// decode_request_failed, and a decode error status is returned at once, without waiting for
// the prefill. The prefill's handoff is still checked (with the ports the decode was told);
// the decode output — even a body that has already arrived — is relayed only after it
// passed (o.keep), else the attempt fails with 502 moriio_handoff_invalid and the decode leg
// is dropped. A client that goes away cancels both legs.
func (d *Dispatcher) moriioConcurrent(w http.ResponseWriter, o *open, plan *handoff.MoRIIOPlan, hdr http.Header) (committed bool, err error) {
	ctx, p, dc := o.reqCtx, o.prefill, o.decode
	o.pdone = make(chan prefillResult, 1)
	o.keep = true // hold the decode output until the handoff passed (no logprobs are merged)
	path := o.route.Path()
	ptimer := startLegTimer(d.cfg.PrefillTimeout, func() { o.cancel(d.prefillTimeoutFault(p, "did not answer")) })
	o.dtimer = d.decodeTimer(o)
	go d.runMoRIIOPrefill(o, ptimer, plan, ports.LegRequest{Worker: p, Path: path, Body: plan.Prefill, Header: hdr})

	resp, err := d.engine.Send(o.ctx, ports.LegRequest{Worker: dc, Path: path, Body: plan.Decode, Header: hdr})
	if err != nil {
		o.dtimer.stop()
		return false, d.attemptError(ctx, o, func() *legFault {
			return &legFault{w: dc, cause: err, e: legTransportError("decode", dc, err, ctx)}
		})
	}
	if !ok2xx(resp.Status) {
		body := readLimited(resp.Body)
		o.dtimer.stop()
		return false, d.attemptError(ctx, o, func() *legFault {
			return &legFault{w: dc, status: resp.Status, e: decodeError(resp.Status, body)}
		})
	}
	o.decodeResp = resp
	o.decodeHead.Store(true)
	if !o.stream {
		o.decodeOut.Store(true) // the deadline runs on until the body is read (relayBody)
	}
	defer func() { d.finish(o, committed) }()
	return d.relay(w, o)
}

// runMoRIIOPrefill runs a concurrent MoRI-IO prefill leg to its end and reports on o.pdone:
// its answer within ptimer's deadline, a 2xx JSON body, and a handoff that passes the
// plan's check. A failure cancels the legs with its fault at once (dropping the decode); a
// leg cancelled first (by the decode, the client or the request timeout) reports and
// records nothing. A prefill that ends well records its status and duration.
func (d *Dispatcher) runMoRIIOPrefill(o *open, ptimer legTimer, plan *handoff.MoRIIOPlan, req ports.LegRequest) {
	var res prefillResult
	defer func() { o.pdone <- res }()
	defer prefillEnded(o.reqCtx) // the prefill's tokens are done, whatever the outcome
	defer ptimer.stop()
	p := o.prefill
	fail := func(f *legFault) {
		if o.ctx.Err() != nil {
			res.fault = causeFault(o.ctx).own(p)
			return // cancelled first: this failure is a consequence
		}
		res.fault = f
		o.cancel(f)
	}
	resp, err := d.engine.Send(o.ctx, req)
	if err != nil {
		fail(&legFault{w: p, cause: err, e: legTransportError("prefill", p, err, o.ctx)})
		return
	}
	if !ok2xx(resp.Status) {
		body := readLimited(resp.Body)
		fail(&legFault{w: p, status: resp.Status, e: &errs.Error{Status: resp.Status, Code: wire.CodePrefillUpstreamError,
			Leg: "prefill", Retryable: retryableStatus(resp.Status), Message: upstreamMessage(body)}})
		return
	}
	buf, err := readPooled(resp.Body, d.cfg.MaxPayloadSize, contentLength(resp.Header))
	_ = resp.Body.Close()
	defer putBody(buf)
	if err != nil {
		fail(&legFault{w: p, cause: err, e: prefillReadFailed(p, err)})
		return
	}
	if checkJSONBody(resp.Header, buf.Bytes()) != nil {
		fail(&legFault{w: p, status: http.StatusBadGateway, cause: errMalformed, e: prefillInvalid(p, fmt.Errorf("%d bytes that are not valid JSON", buf.Len()))})
		return
	}
	if _, err := plan.CheckHandoff(buf.Bytes()); err != nil {
		if o.ctx.Err() == nil {
			fail(d.handoffFault(p, o.decode, plan, err))
		}
		return
	}
	o.prefillDone.Store(true)
	d.record(p, resp.Status, nil)
	d.metrics.ObservePrefillDuration(o.model, o.runtime, time.Since(o.start))
}
