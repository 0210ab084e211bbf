package dispatch

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
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
	p, dc *worker.Live, hdr http.Header) (bool, error) {
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
	legCtx, cancel := context.WithCancel(ctx)
	start := time.Now()
	path := rq.Route.Path()

	var prefillBody []byte
	var prefillBuf *bytes.Buffer // pooled; released once the decode body is built
	if !plan.SkipPrefill {
		resp, err := d.engine.Send(legCtx, ports.LegRequest{Worker: p, Path: path, Body: plan.Prefill, Header: hdr})
		if err != nil {
			cancel()
			if ctx.Err() == nil {
				d.record(p, 0, err)
			}
			return false, legTransportError("prefill", p, err, ctx)
		}
		if !ok2xx(resp.Status) {
			d.record(p, resp.Status, nil)
			body := readLimited(resp.Body)
			cancel()
			return false, &errs.Error{Status: resp.Status, Code: wire.CodePrefillUpstreamError, Leg: "prefill",
				Retryable: retryableStatus(resp.Status), Message: upstreamMessage(body)}
		}
		prefillBuf, err = readPooled(resp.Body, d.cfg.MaxPayloadSize, contentLength(resp.Header))
		prefillBody = prefillBuf.Bytes()
		_ = resp.Body.Close()
		if err != nil {
			cancel()
			if ctx.Err() != nil {
				return false, contextError(ctx, "reading the prefill response")
			}
			d.record(p, 0, err)
			return false, &errs.Error{Status: http.StatusBadGateway, Code: wire.CodePrefillReadFailed, Leg: "prefill",
				Retryable: true, Message: "Failed to read prefill response: " + err.Error()}
		}
		if checkJSONBody(resp.Header, prefillBody) != nil {
			// A garbled prefill answer is an engine fault, not a handoff without params: fail
			// the attempt (a retry re-selects both legs) instead of a silent decode recompute.
			cancel()
			d.record(p, 0, errMalformed)
			return false, &errs.Error{Status: http.StatusBadGateway, Code: wire.CodePrefillReadFailed, Leg: "prefill",
				Retryable: true, Message: "Failed to read prefill response: " + strconv.Itoa(len(prefillBody)) + " bytes that are not valid JSON"}
		}
		d.record(p, resp.Status, nil)
		d.metrics.ObservePrefillDuration(rq.Model, string(p.Runtime), time.Since(start))
	}
	decodeBody, outcome := plan.Decode(prefillBody) // a fresh body: the prefill's bytes are copied
	if prefillBuf != nil {
		putBody(prefillBuf)
		prefillBody = nil
	}
	switch outcome {
	case handoff.OutcomeKVTransferFailure:
		d.metrics.IncKVTransferFailure()
		d.log.Warn("NIXL prefill returned no kv_transfer_params; decode recomputes the prompt",
			"prefill", p.URL, "decode", dc.URL)
	case handoff.OutcomeRecompute:
		d.log.Warn("Mooncake prefill has no kv_engine_id; decode recomputes the prompt", "prefill", p.URL)
	}
	d.log.Debug("vLLM PD pair", "prefill", p.URL, "decode", dc.URL, "mode", plan.Mode,
		"transfer_id", plan.TransferID, "outcome", outcome.String(),
		"params_relayed", outcome == handoff.OutcomeRelayed || outcome == handoff.OutcomeMinted)

	resp, err := d.engine.Send(legCtx, ports.LegRequest{Worker: dc, Path: path, Body: decodeBody, Header: hdr})
	if err != nil {
		cancel()
		if ctx.Err() == nil {
			d.record(dc, 0, err)
		}
		return false, legTransportError("decode", dc, err, ctx)
	}
	if !ok2xx(resp.Status) {
		d.record(dc, resp.Status, nil)
		body := readLimited(resp.Body)
		cancel()
		return false, decodeError(resp.Status, body)
	}
	// The decode's outcome is recorded when its body ends (relayStream, relayBody).
	o := &open{prefill: p, decode: dc, decodeResp: resp, start: start, ctx: legCtx, cancel: cancel,
		model: rq.Model, runtime: string(p.Runtime), route: rq.Route}
	defer o.finish()
	if rq.Stream {
		d.relayStream(w, o)
		return true, nil
	}
	if err := d.relayBody(w, o); err != nil {
		return false, err
	}
	return true, nil
}
